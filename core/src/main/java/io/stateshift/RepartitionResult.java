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
 */
public record RepartitionResult(
    RepartitionPlan plan,
    List<StoreMove> stores,
    Map<String, Long> phaseMillis,
    long batchId,
    long totalMillis) {

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
    out.append(
        String.format(
            "Repartitioned %s from %d to %d partitions in %d ms (batch %d).%n",
            plan.checkpoint(), plan.fromPartitions(), plan.toPartitions(), totalMillis, batchId));
    for (StoreMove s : stores) {
      out.append(
          String.format(
              "  operator %d %-22s store %-28s %,12d rows %,14d bytes%n",
              s.operatorId(), s.operatorName(), s.storeName(), s.rowsWritten(), s.bytesWritten()));
    }
    out.append("  phases:");
    phaseMillis.forEach(
        (phase, ms) -> out.append(' ').append(phase).append('=').append(ms).append("ms"));
    return out.append('\n').toString();
  }
}
