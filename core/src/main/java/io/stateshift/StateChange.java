package io.stateshift;

import io.stateshift.StateShiftException.Reason;
import io.stateshift.protocol.RepartitionRunner;
import java.util.function.Consumer;
import org.apache.spark.sql.SparkSession;

/**
 * A change to the state of a stopped streaming query's checkpoint (a repartition, a migration),
 * configured fluently and run with {@link #execute()}; {@link #plan()} reports what would be done
 * and writes nothing. Every change runs under the same protocol: journal, lock, rollback, verify,
 * history.
 *
 * @param <S> the change itself, which the fluent setters return
 */
public abstract class StateChange<S extends StateChange<S>> {
  final SparkSession spark;
  final String checkpointLocation;
  Integer partitions;
  Consumer<String> progress = message -> {};
  private String backupTo;
  private boolean assumeStopped;
  private String fileSink;

  StateChange(SparkSession spark, String checkpointLocation) {
    if (checkpointLocation == null || checkpointLocation.isBlank()) {
      throw new StateShiftException(
          Reason.INVALID_ARGUMENT,
          "checkpointLocation is empty: pass the checkpointLocation of the stopped query.");
    }
    this.spark = spark;
    this.checkpointLocation = checkpointLocation;
  }

  /** The fluent setters' return value. */
  abstract S self();

  /** The protocol's runner for this change, before the options common to every change. */
  abstract RepartitionRunner newRunner();

  /** The number of state partitions to end with; at least 1. */
  public S toPartitions(int count) {
    if (count <= 0) {
      throw new StateShiftException(
          Reason.INVALID_PARTITION_COUNT,
          "toPartitions(" + count + "): the partition count must be at least 1.");
    }
    this.partitions = count;
    return self();
  }

  /** Receives one-line progress messages while the work runs (phases and task counts). */
  public S onProgress(Consumer<String> listener) {
    this.progress = listener == null ? message -> {} : listener;
    return self();
  }

  /**
   * Keeps the partition folders a decrease drops, and a record of the change, under this location
   * (any Hadoop path) instead of inside the checkpoint's {@code _stateshift} folder.
   */
  public S backupTo(String location) {
    this.backupTo = location;
    return self();
  }

  /**
   * Declares that no query runs on the checkpoint. Without it, a checkpoint whose offset or commit
   * log was written within the last two minutes is refused, as a query running without
   * StateShiftExtensions (which holds no lease) may still be writing it. A query holding the lease
   * is refused either way.
   */
  public S assumeStopped() {
    this.assumeStopped = true;
    return self();
  }

  /**
   * The output folder of the query's file sink ({@code format("parquet")} and the other file
   * formats). Its log gets an empty entry for the change's batch, which the sink never runs:
   * without it the sink's next compaction and every batch read of its output fail. Not needed when
   * the query last ran with StateShiftExtensions, which puts its file sink on record.
   */
  public S fileSink(String outputLocation) {
    this.fileSink = outputLocation;
    return self();
  }

  public RepartitionPlan plan() {
    return runner().plan();
  }

  public RepartitionResult execute() {
    return runner().execute();
  }

  private RepartitionRunner runner() {
    return newRunner().backupTo(backupTo).assumeStopped(assumeStopped).fileSink(fileSink);
  }
}
