package io.stateshift.checkpoint.spi;

/**
 * How a state layout is read.
 *
 * @param requireSupported refuse operators stateshift cannot repartition (else leave their stores
 *     out, for inspection)
 * @param allowPendingBatch accept a planned but uncommitted last batch and read the layout of the
 *     last committed one (the on-demand path checks a checkpoint this way before the pending batch
 *     runs)
 * @param tolerateExtraFolders leave partition folders beyond the recorded count for the doctor to
 *     report instead of refusing the checkpoint
 */
public record LayoutReading(
    boolean requireSupported, boolean allowPendingBatch, boolean tolerateExtraFolders) {}
