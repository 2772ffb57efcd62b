package io.stateshift;

import io.stateshift.StateShiftException.Reason;
import io.stateshift.protocol.ProviderMigration;
import io.stateshift.protocol.RepartitionRunner;
import java.util.List;
import java.util.function.Consumer;
import org.apache.spark.sql.SparkSession;

/**
 * A migration of the state of a stopped streaming query to another state store provider
 * (HDFS-backed to RocksDB or back), with a partition change in the same pass if asked, configured
 * fluently and run with {@link #execute()}; {@link #plan()} reports what would be done and writes
 * nothing. It runs under the same protocol as a repartition (journal, lock, rollback, verify,
 * history): the state is read with the old provider, written for the new one, and the offset log
 * entry of the new batch names the new provider, which the restarted query then uses.
 */
public final class MigrateState {
  private final SparkSession spark;
  private final String checkpointLocation;
  private String provider;
  private Integer partitions;
  private Consumer<String> progress = message -> {};
  private String backupTo;
  private boolean assumeStopped;
  private String fileSink;

  MigrateState(SparkSession spark, String checkpointLocation) {
    if (checkpointLocation == null || checkpointLocation.isBlank()) {
      throw new StateShiftException(
          Reason.INVALID_ARGUMENT,
          "checkpointLocation is empty: pass the checkpointLocation of the stopped query.");
    }
    this.spark = spark;
    this.checkpointLocation = checkpointLocation;
  }

  /**
   * The state store provider to end with: {@code "rocksdb"} or {@code "hdfs"} (or the provider's
   * class name).
   */
  public MigrateState toProvider(String name) {
    this.provider = ProviderMigration.resolve(name);
    return this;
  }

  /** Also changes the number of state partitions, in the same pass; at least 1. */
  public MigrateState toPartitions(int count) {
    if (count <= 0) {
      throw new StateShiftException(
          Reason.INVALID_PARTITION_COUNT,
          "toPartitions(" + count + "): the partition count must be at least 1.");
    }
    this.partitions = count;
    return this;
  }

  /** Receives one-line progress messages while the work runs (phases and task counts). */
  public MigrateState onProgress(Consumer<String> listener) {
    this.progress = listener == null ? message -> {} : listener;
    return this;
  }

  /** See {@link RepartitionState#backupTo(String)}. */
  public MigrateState backupTo(String location) {
    this.backupTo = location;
    return this;
  }

  /** See {@link RepartitionState#assumeStopped()}. */
  public MigrateState assumeStopped() {
    this.assumeStopped = true;
    return this;
  }

  /** See {@link RepartitionState#fileSink(String)}. */
  public MigrateState fileSink(String outputLocation) {
    this.fileSink = outputLocation;
    return this;
  }

  public RepartitionPlan plan() {
    return runner().plan();
  }

  public RepartitionResult execute() {
    return runner().execute();
  }

  /**
   * What the user must know or set in the query's session after migrating to {@code provider}
   * ({@code "rocksdb"} or {@code "hdfs"}), one line each.
   */
  public static List<String> sessionNotes(String provider) {
    return ProviderMigration.sessionNotes(ProviderMigration.resolve(provider));
  }

  private RepartitionRunner runner() {
    if (provider == null) {
      throw new StateShiftException(
          Reason.INVALID_ARGUMENT,
          "No provider given: call toProvider(\"rocksdb\") or toProvider(\"hdfs\") before plan() "
              + "or execute().");
    }
    RepartitionRunner runner =
        new RepartitionRunner(
                spark, checkpointLocation, partitions == null ? 0 : partitions, progress)
            .migrateTo(provider)
            .backupTo(backupTo)
            .assumeStopped(assumeStopped)
            .fileSink(fileSink);
    return partitions == null ? runner.keepPartitionCount() : runner;
  }
}
