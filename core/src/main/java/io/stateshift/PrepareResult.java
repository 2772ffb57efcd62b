package io.stateshift;

import java.util.Optional;

/**
 * What {@code prepare} did: the layout it wrote (absent after a cancel, or when nothing was on
 * record to cancel).
 *
 * @param checkpoint the checkpoint
 * @param prepared the prepared layout now on record; empty after {@code cancel}
 * @param removed prepared layouts removed (the previous one after a prepare, all after a cancel)
 * @param totalMillis wall time
 */
public record PrepareResult(
    String checkpoint, Optional<Prepared> prepared, int removed, long totalMillis) {

  /**
   * A prepared layout.
   *
   * @param id its folder under {@code _stateshift/prepared/}
   * @param queryId the query it was prepared for
   * @param preparedBatch the committed batch V whose state it holds
   * @param fromPartitions the checkpoint's count it was read from
   * @param toPartitions the count it was written for
   * @param rows rows of every store together
   * @param bytes bytes of its state files
   */
  public record Prepared(
      String id,
      String queryId,
      long preparedBatch,
      int fromPartitions,
      int toPartitions,
      long rows,
      long bytes) {}

  @Override
  public String toString() {
    if (prepared.isEmpty()) {
      return removed == 0
          ? "No prepared layout on record for " + checkpoint + ".\n"
          : "Removed the prepared layout of " + checkpoint + ".\n";
    }
    Prepared p = prepared.get();
    return String.format(
        "Prepared %s for %d partitions (from %d) at batch %d: %,d rows, %,d bytes, in %d ms.%n"
            + "  A repartition to %d partitions starts from it and replays the batches after %d.%n",
        checkpoint,
        p.toPartitions(),
        p.fromPartitions(),
        p.preparedBatch(),
        p.rows(),
        p.bytes(),
        totalMillis,
        p.toPartitions(),
        p.preparedBatch());
  }
}
