package io.stateshift;

import java.util.Objects;
import org.apache.spark.sql.SparkSession;

/**
 * Entry point: {@code
 * StateShift.get(spark).repartitionState(checkpoint).toPartitions(16).execute()}. Work runs as
 * Spark jobs on the session's cluster (local mode by default).
 */
public final class StateShift {
  private final SparkSession spark;

  private StateShift(SparkSession spark) {
    this.spark = spark;
  }

  public static StateShift get(SparkSession spark) {
    Objects.requireNonNull(spark, "spark: pass an active SparkSession");
    return new StateShift(spark);
  }

  /** Starts describing a repartition of the state of the stopped query at this checkpoint. */
  public RepartitionState repartitionState(String checkpointLocation) {
    return new RepartitionState(spark, checkpointLocation);
  }

  /**
   * Starts describing the preparation of a later repartition, which runs while the query runs:
   * {@code prepareState(cp).toPartitions(n).execute()}; see {@link PrepareState}.
   */
  public PrepareState prepareState(String checkpointLocation) {
    return new PrepareState(spark, checkpointLocation);
  }

  /**
   * Starts describing a migration of the state of the stopped query at this checkpoint to another
   * state store provider: {@code migrateState(cp).toProvider("rocksdb").execute()}, optionally with
   * {@code toPartitions(n)} in the same pass. Rolled back like a repartition.
   */
  public MigrateState migrateState(String checkpointLocation) {
    return new MigrateState(spark, checkpointLocation);
  }

  /**
   * Starts describing a read of the saved state of a stopped query, as data: {@code
   * readState(cp).operator(0).load()} gives a Dataset of its entries; see {@link ReadState}.
   */
  public ReadState readState(String checkpointLocation) {
    return new ReadState(spark, checkpointLocation);
  }

  /**
   * Starts describing an edit of the saved state of a stopped query: {@code
   * editState(cp).deleteWhere("key.user = 'u42'").execute()} deletes the matching entries under the
   * same protocol as a repartition; see {@link EditState}.
   */
  public EditState editState(String checkpointLocation) {
    return new EditState(spark, checkpointLocation);
  }

  /**
   * Starts describing an evolution of the saved state of a stopped query for a changed query:
   * {@code evolveState(cp).toQuery(newQuery).fill("sum", "0").execute()}; see {@link EvolveState}.
   */
  public EvolveState evolveState(String checkpointLocation) {
    return new EvolveState(spark, checkpointLocation);
  }

  /**
   * Restores the layout before the checkpoint's last repartition, as long as no batch has run on
   * the new layout. Returns the plan that was undone.
   */
  public RepartitionPlan rollbackRepartition(String checkpointLocation) {
    return rollbackRepartition(checkpointLocation, false);
  }

  /**
   * The same; with {@code assumeStopped}, a checkpoint whose logs were written within the last two
   * minutes is not taken as a sign of a query still running on it (see {@link
   * RepartitionState#assumeStopped()}).
   */
  public RepartitionPlan rollbackRepartition(String checkpointLocation, boolean assumeStopped) {
    return io.stateshift.protocol.RollbackAction.run(spark, checkpointLocation, assumeStopped);
  }

  /**
   * Checks every key is in the partition Spark assigns it, row counts match the counts before the
   * last repartition, and the state files the logs need exist.
   */
  public VerificationReport verify(String checkpointLocation) {
    return io.stateshift.protocol.CheckpointVerifier.verify(spark, checkpointLocation);
  }

  /**
   * The same, and the logs of these file sinks (output folders) and of the sink on record have an
   * entry for every batch their readers and compaction need.
   */
  public VerificationReport verify(String checkpointLocation, java.util.List<String> fileSinks) {
    return io.stateshift.protocol.CheckpointVerifier.verify(spark, checkpointLocation, fileSinks);
  }

  /**
   * Gives a file sink's log the empty entries of the checkpoint's repartition batches it lacks
   * (left by a repartition that did not know the sink, or by Spark's built-in runner), so that its
   * output can be read and the sink can compact again. Gaps that stand for lost output are
   * reported, not filled.
   */
  public SinkLogRepair repairSinkLog(String checkpointLocation, String fileSinkOutput) {
    return io.stateshift.protocol.SinkLogGaps.repair(spark, checkpointLocation, fileSinkOutput);
  }

  /**
   * Checks a checkpoint against the production checklist (state store, state growth, partitions,
   * source rate, checkpoint hygiene), read-only: {@code doctor(cp).cores(16).history(h).run()}.
   */
  public io.stateshift.doctor.Doctor doctor(String checkpointLocation) {
    return new io.stateshift.doctor.Doctor(spark, checkpointLocation);
  }

  /**
   * Every repartition and rollback stateshift recorded for the checkpoint (under {@code
   * _stateshift/history}), oldest first: when, from and to how many partitions, rows and bytes
   * moved, how long, the write path, which application and user, and the outcome. Failures that
   * left an attempt for the next run to finish are listed too; refusals, and failures undone before
   * the switch, are not, as they leave the checkpoint as it was. Read-only.
   */
  public java.util.List<HistoryEntry> history(String checkpointLocation) {
    return io.stateshift.protocol.HistoryLog.read(
        io.stateshift.checkpoint.CheckpointFiles.at(
            checkpointLocation, io.stateshift.checkpoint.SessionSettings.hadoopConf(spark)));
  }

  /**
   * The fleet view, read-only: every checkpoint at or below these locations (folders that hold
   * checkpoints, or checkpoints), one row per stream with its state, pace and the doctor's worst
   * finding, and the cost practice's recommendations: {@code
   * inventory(List.of("s3a://bucket/checkpoints")).history(h).run()}.
   */
  public io.stateshift.inventory.Inventory inventory(java.util.List<String> locations) {
    return new io.stateshift.inventory.Inventory(spark, locations);
  }

  /** Reads a checkpoint and reports its layout: operators, stores, rows and bytes per partition. */
  public CheckpointReport inspect(String checkpointLocation) {
    return io.stateshift.protocol.CheckpointInspector.inspect(spark, checkpointLocation);
  }
}
