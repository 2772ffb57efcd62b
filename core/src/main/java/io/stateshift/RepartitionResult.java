package io.stateshift;

import java.util.List;
import java.util.Map;

/**
 * What a repartition did.
 *
 * @param plan the plan that was carried out
 * @param stores rows and bytes moved, per operator and store
 * @param phaseMillis wall time of each phase (validate, stage, switch, finalize), in order
 * @param batchId the batch id written for the repartition
 * @param totalMillis wall time of the whole repartition
 * @param storeRequests requests sent to the checkpoint's store during the repartition, where its
 *     file system counts them (S3A: every HTTP request of this process, by the driver and by tasks
 *     that run in it); -1 where it does not
 * @param path which way the new state was written: from a prepared layout and the logged tail, or
 *     in full (and why a prepared layout was not used)
 */
public record RepartitionResult(
    RepartitionPlan plan,
    List<StoreMove> stores,
    Map<String, Long> phaseMillis,
    long batchId,
    long totalMillis,
    long storeRequests,
    StatePath path) {

  public RepartitionResult(
      RepartitionPlan plan,
      List<StoreMove> stores,
      Map<String, Long> phaseMillis,
      long batchId,
      long totalMillis) {
    this(plan, stores, phaseMillis, batchId, totalMillis, -1, StatePath.FULL);
  }

  /** The same result with the store's request count. */
  public RepartitionResult withStoreRequests(long requests) {
    return new RepartitionResult(plan, stores, phaseMillis, batchId, totalMillis, requests, path);
  }

  /** The same result, written the way {@code written} says. */
  public RepartitionResult withPath(StatePath written) {
    return new RepartitionResult(
        plan, stores, phaseMillis, batchId, totalMillis, storeRequests, written);
  }

  /**
   * How the new state was written.
   *
   * @param prepared true when a prepared layout ({@code stateshift prepare}) was brought up to date
   *     with the changes logged since; false for the full path
   * @param preparedBatch the batch V the prepared layout holds; -1 when none was used
   * @param lastCommittedBatch the last committed batch L the new layout holds
   * @param rowsReplayed the changes (puts and removals, newest per key) of batches V+1..L applied
   * @param reason why a prepared layout on record was not used; null when it was, or when there was
   *     none
   */
  public record StatePath(
      boolean prepared,
      long preparedBatch,
      long lastCommittedBatch,
      long rowsReplayed,
      String reason) {
    public static final StatePath FULL = new StatePath(false, -1, -1, 0, null);

    /** {@code prepared} or {@code full}, as progress output and JSON name it. */
    public String name() {
      return prepared ? "prepared" : "full";
    }

    @Override
    public String toString() {
      if (prepared) {
        return String.format(
            "prepared layout of batch %d, batches %d..%d replayed (%,d changes)",
            preparedBatch, preparedBatch + 1, lastCommittedBatch, rowsReplayed);
      }
      return reason == null ? "full" : "full (prepared layout not used: " + reason + ")";
    }
  }

  /** Rows and bytes of one state store, before (read) and after (written) the repartition. */
  public record StoreMove(
      long operatorId,
      String operatorName,
      String storeName,
      long rowsRead,
      long rowsWritten,
      long bytesWritten) {}

  public int fromPartitions() {
    return plan.fromPartitions();
  }

  public int toPartitions() {
    return plan.toPartitions();
  }

  public long rowsMoved() {
    return stores.stream().mapToLong(StoreMove::rowsWritten).sum();
  }

  public long bytesMoved() {
    return stores.stream().mapToLong(StoreMove::bytesWritten).sum();
  }

  @Override
  public String toString() {
    StringBuilder out = new StringBuilder();
    if (plan.changesProvider()) {
      out.append(
          String.format(
              "Migrated %s from %s to %s, %d -> %d partitions, in %d ms (batch %d).%n",
              plan.checkpoint(),
              plan.stateStoreProvider(),
              plan.targetStateStoreProvider(),
              plan.fromPartitions(),
              plan.toPartitions(),
              totalMillis,
              batchId));
    } else {
      out.append(
          String.format(
              "Repartitioned %s from %d to %d partitions in %d ms (batch %d).%n",
              plan.checkpoint(), plan.fromPartitions(), plan.toPartitions(), totalMillis, batchId));
    }
    for (StoreMove s : stores) {
      out.append(
          String.format(
              "  operator %d %-22s store %-28s %,12d rows %,14d bytes%n",
              s.operatorId(), s.operatorName(), s.storeName(), s.rowsWritten(), s.bytesWritten()));
    }
    if (path.prepared() || path.reason() != null) {
      out.append("  path: ").append(path).append('\n');
    }
    out.append("  phases:");
    phaseMillis.forEach(
        (phase, ms) -> out.append(' ').append(phase).append('=').append(ms).append("ms"));
    if (storeRequests >= 0) {
      out.append(String.format("%n  store requests: %,d", storeRequests));
    }
    return out.append('\n').toString();
  }
}
