package io.stateshift;

import io.stateshift.StateShiftException.Reason;
import io.stateshift.protocol.RepartitionRunner;
import java.util.function.Consumer;
import org.apache.spark.sql.SparkSession;

/**
 * A repartition of the state of a stopped streaming query, configured fluently and run with {@link
 * #execute()}; {@link #plan()} reports what would be done and writes nothing.
 */
public final class RepartitionState {
  private final SparkSession spark;
  private final String checkpointLocation;
  private Integer partitions;
  private Consumer<String> progress = message -> {};
  private String backupTo;
  private boolean assumeStopped;
  private String fileSink;

  RepartitionState(SparkSession spark, String checkpointLocation) {
    if (checkpointLocation == null || checkpointLocation.isBlank()) {
      throw new StateShiftException(
          Reason.INVALID_ARGUMENT,
          "checkpointLocation is empty: pass the checkpointLocation of the stopped query.");
    }
    this.spark = spark;
    this.checkpointLocation = checkpointLocation;
  }

  /** The number of state partitions to end with; at least 1. */
  public RepartitionState toPartitions(int count) {
    if (count <= 0) {
      throw new StateShiftException(
          Reason.INVALID_PARTITION_COUNT,
          "toPartitions(" + count + "): the partition count must be at least 1.");
    }
    this.partitions = count;
    return this;
  }

  /** Receives one-line progress messages while the work runs (phases and task counts). */
  public RepartitionState onProgress(Consumer<String> listener) {
    this.progress = listener == null ? message -> {} : listener;
    return this;
  }

  /**
   * Keeps the partition folders a decrease drops, and a record of the repartition, under this
   * location (any Hadoop path) instead of inside the checkpoint's {@code _stateshift} folder.
   */
  public RepartitionState backupTo(String location) {
    this.backupTo = location;
    return this;
  }

  /**
   * Declares that no query runs on the checkpoint. Without it, a checkpoint whose offset or commit
   * log was written within the last two minutes is refused, as a query running without
   * StateShiftExtensions (which holds no lease) may still be writing it. A query holding the lease
   * is refused either way.
   */
  public RepartitionState assumeStopped() {
    this.assumeStopped = true;
    return this;
  }

  /**
   * The output folder of the query's file sink ({@code format("parquet")} and the other file
   * formats). Its log gets an empty entry for the repartition's batch, which the sink never runs:
   * without it the sink's next compaction and every batch read of its output fail. Not needed when
   * the query last ran with StateShiftExtensions, which puts its file sink on record.
   */
  public RepartitionState fileSink(String outputLocation) {
    this.fileSink = outputLocation;
    return this;
  }

  public RepartitionPlan plan() {
    return runner().plan();
  }

  public RepartitionResult execute() {
    return runner().execute();
  }

  private RepartitionRunner runner() {
    if (partitions == null) {
      throw new StateShiftException(
          Reason.INVALID_ARGUMENT,
          "No partition count given: call toPartitions(n) before plan() or execute().");
    }
    return new RepartitionRunner(spark, checkpointLocation, partitions, progress)
        .backupTo(backupTo)
        .assumeStopped(assumeStopped)
        .fileSink(fileSink);
  }
}
