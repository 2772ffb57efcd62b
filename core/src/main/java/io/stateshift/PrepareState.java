package io.stateshift;

import io.stateshift.StateShiftException.Reason;
import io.stateshift.protocol.PrepareRunner;
import java.util.function.Consumer;
import org.apache.spark.sql.SparkSession;

/**
 * Prepares the state of a checkpoint for a later repartition while its query keeps running: {@code
 * prepareState(cp).toPartitions(n).execute()} writes the state of the last committed batch in n
 * partitions under {@code _stateshift/prepared/}; the repartition to n at the restart then only
 * replays the batches committed since. {@link #cancel()} removes it. Takes no lock and writes
 * nothing the query reads or writes.
 */
public final class PrepareState {
  private final SparkSession spark;
  private final String checkpointLocation;
  private Integer partitions;
  private Consumer<String> progress = message -> {};

  PrepareState(SparkSession spark, String checkpointLocation) {
    if (checkpointLocation == null || checkpointLocation.isBlank()) {
      throw new StateShiftException(
          Reason.INVALID_ARGUMENT,
          "checkpointLocation is empty: pass the checkpointLocation of the query.");
    }
    this.spark = spark;
    this.checkpointLocation = checkpointLocation;
  }

  /** The partition count the repartition at the restart will ask for; at least 1. */
  public PrepareState toPartitions(int count) {
    if (count <= 0) {
      throw new StateShiftException(
          Reason.INVALID_PARTITION_COUNT,
          "toPartitions(" + count + "): the partition count must be at least 1.");
    }
    this.partitions = count;
    return this;
  }

  /** Receives one-line progress messages while the work runs. */
  public PrepareState onProgress(Consumer<String> listener) {
    this.progress = listener == null ? message -> {} : listener;
    return this;
  }

  /** Writes the prepared layout, replacing the one on record once it is complete. */
  public PrepareResult execute() {
    if (partitions == null) {
      throw new StateShiftException(
          Reason.INVALID_ARGUMENT,
          "No partition count given: call toPartitions(n) before execute().");
    }
    return new PrepareRunner(spark, checkpointLocation, partitions, progress).execute();
  }

  /** Removes every prepared layout of the checkpoint. */
  public PrepareResult cancel() {
    return new PrepareRunner(spark, checkpointLocation, 0, progress).cancel();
  }
}
