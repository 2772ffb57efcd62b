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
 */
public record RepartitionResult(
    RepartitionPlan plan,
    List<StoreMove> stores,
    Map<String, Long> phaseMillis,
    long batchId,
    long totalMillis,
    long storeRequests) {

  public RepartitionResult(
      RepartitionPlan plan,
      List<StoreMove> stores,
      Map<String, Long> phaseMillis,
      long batchId,
      long totalMillis) {
    this(plan, stores, phaseMillis, batchId, totalMillis, -1);
  }

  /** The same result with the store's request count. */
  public RepartitionResult withStoreRequests(long requests) {
    return new RepartitionResult(plan, stores, phaseMillis, batchId, totalMillis, requests);
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
    out.append("  phases:");
    phaseMillis.forEach(
        (phase, ms) -> out.append(' ').append(phase).append('=').append(ms).append("ms"));
    if (storeRequests >= 0) {
      out.append(String.format("%n  store requests: %,d", storeRequests));
    }
    return out.append('\n').toString();
  }
}
