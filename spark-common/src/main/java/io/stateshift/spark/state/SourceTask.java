package io.stateshift.spark.state;

import java.io.Serializable;
import java.util.Map;

/**
 * One old (store, partition) a {@link StateRedistributionJob} reads; {@code listedFiles}: the files
 * of its folder (names relative to it, {@code SSTs/<name>} for RocksDB's SST files), from the
 * driver's listing, or null where the task lists them itself.
 */
record SourceTask(int slot, int partition, Map<String, ListedFile> listedFiles)
    implements Serializable {}
