package io.stateshift;

import io.stateshift.estimate.CostEstimate;
import java.util.List;
import java.util.Optional;

/**
 * What a repartition will do, computed from the checkpoint without writing anything.
 *
 * @param checkpoint the qualified checkpoint location
 * @param queryId the query id recorded in the checkpoint
 * @param stateStoreProvider the provider class the query runs with
 * @param fromPartitions the partition count the state has now
 * @param toPartitions the partition count it will have
 * @param lastCommittedBatch the batch whose state is redistributed
 * @param repartitionBatch the batch id the repartition commits (lastCommittedBatch + 1)
 * @param operators the stateful operators and their stores
 * @param interruptedAttempt an earlier attempt that was interrupted and will be finished or undone
 *     first
 * @param targetStateStoreProvider the provider class the state is written for: {@code
 *     stateStoreProvider} for a repartition, another one for a migration ({@code migrate})
 * @param checkpointFormatVersion the state checkpoint format the state is in (1, or 2 where state
 *     versions are named by unique ids); 0 where not known
 * @param targetCheckpointFormatVersion the format the state is written in; 0 where not known
 * @param stateBytes the bytes of the state as the validation listed them (every version kept); 0
 *     where not known
 * @param stateFiles the files of the state as listed; 0 where not known
 * @param estimate what the cost model expects the repartition to take on the session's task slots
 */
public record RepartitionPlan(
    String checkpoint,
    String queryId,
    String stateStoreProvider,
    int fromPartitions,
    int toPartitions,
    long lastCommittedBatch,
    long repartitionBatch,
    List<OperatorInfo> operators,
    Optional<String> interruptedAttempt,
    String targetStateStoreProvider,
    int checkpointFormatVersion,
    int targetCheckpointFormatVersion,
    long stateBytes,
    long stateFiles,
    Optional<CostEstimate> estimate) {

  /** A plan whose state checkpoint format and size are not known, without an estimate. */
  public RepartitionPlan(
      String checkpoint,
      String queryId,
      String stateStoreProvider,
      int fromPartitions,
      int toPartitions,
      long lastCommittedBatch,
      long repartitionBatch,
      List<OperatorInfo> operators,
      Optional<String> interruptedAttempt,
      String targetStateStoreProvider) {
    this(
        checkpoint,
        queryId,
        stateStoreProvider,
        fromPartitions,
        toPartitions,
        lastCommittedBatch,
        repartitionBatch,
        operators,
        interruptedAttempt,
        targetStateStoreProvider,
        0,
        0,
        0,
        0,
        Optional.empty());
  }

  /** A plan that keeps the state store provider (a repartition). */
  public RepartitionPlan(
      String checkpoint,
      String queryId,
      String stateStoreProvider,
      int fromPartitions,
      int toPartitions,
      long lastCommittedBatch,
      long repartitionBatch,
      List<OperatorInfo> operators,
      Optional<String> interruptedAttempt) {
    this(
        checkpoint,
        queryId,
        stateStoreProvider,
        fromPartitions,
        toPartitions,
        lastCommittedBatch,
        repartitionBatch,
        operators,
        interruptedAttempt,
        stateStoreProvider);
  }

  /** Whether the plan moves the state to another state store provider. */
  public boolean changesProvider() {
    return targetStateStoreProvider != null
        && !targetStateStoreProvider.isEmpty()
        && !targetStateStoreProvider.equals(stateStoreProvider);
  }

  /** Whether the plan writes the state in another state checkpoint format. */
  public boolean changesFormat() {
    return checkpointFormatVersion > 0
        && targetCheckpointFormatVersion > 0
        && checkpointFormatVersion != targetCheckpointFormatVersion;
  }

  /** A stateful operator and the names of its state stores. */
  public record OperatorInfo(long id, String name, List<String> stores) {}

  @Override
  public String toString() {
    StringBuilder out = new StringBuilder();
    out.append("checkpoint:        ").append(checkpoint).append('\n');
    out.append("query id:          ").append(queryId).append('\n');
    out.append("state store:       ").append(stateStoreProvider);
    if (changesProvider()) {
      out.append(" -> ").append(targetStateStoreProvider);
    }
    out.append('\n');
    if (checkpointFormatVersion > 0) {
      out.append("checkpoint format: v").append(checkpointFormatVersion);
      if (changesFormat()) {
        out.append(" -> v").append(targetCheckpointFormatVersion);
      }
      out.append('\n');
    }
    out.append("partitions:        ")
        .append(fromPartitions)
        .append(" -> ")
        .append(toPartitions)
        .append('\n');
    if (stateFiles > 0) {
      out.append(
          String.format(
              java.util.Locale.ROOT,
              "state:             %,d bytes in %,d files%n",
              stateBytes,
              stateFiles));
    }
    out.append("from batch:        ").append(lastCommittedBatch).append(" (last committed)\n");
    out.append("writes batch:      ").append(repartitionBatch).append('\n');
    for (OperatorInfo op : operators) {
      out.append("operator ")
          .append(op.id())
          .append(":        ")
          .append(op.name())
          .append(" stores ")
          .append(op.stores())
          .append('\n');
    }
    interruptedAttempt.ifPresent(
        a ->
            out.append("interrupted:       attempt ")
                .append(a)
                .append(" is finished or undone first\n"));
    return out.toString();
  }
}
