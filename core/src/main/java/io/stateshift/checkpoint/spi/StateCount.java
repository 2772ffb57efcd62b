package io.stateshift.checkpoint.spi;

import java.io.Serializable;

/**
 * What one partition of one store holds at a state version.
 *
 * @param slot the store's position in the layout's stores
 * @param misplaced keys that the recorded partition count places in another partition
 */
public record StateCount(int slot, int partition, long rows, long bytes, long misplaced)
    implements Serializable {}
