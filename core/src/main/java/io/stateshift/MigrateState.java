package io.stateshift;

import io.stateshift.StateShiftException.Reason;
import io.stateshift.checkpoint.StateLayout;
import io.stateshift.protocol.ProviderMigration;
import io.stateshift.protocol.RepartitionRunner;
import java.util.List;
import org.apache.spark.sql.SparkSession;

/**
 * A migration of the state of a stopped streaming query to another state store provider
 * (HDFS-backed to RocksDB or back), another state checkpoint format ({@code
 * spark.sql.streaming.stateStore.checkpointFormatVersion} 1 or 2, RocksDB), or both, with a
 * partition change in the same pass if asked, configured fluently and run with {@link #execute()};
 * {@link #plan()} reports what would be done and writes nothing. It runs under the same protocol as
 * a repartition (journal, lock, rollback, verify, history): the state is read with the old
 * provider, written for the new one, and the offset log entry of the new batch names the new
 * provider, which the restarted query then uses.
 */
public final class MigrateState extends StateChange<MigrateState> {
  private String provider;
  private Integer formatVersion;

  MigrateState(SparkSession spark, String checkpointLocation) {
    super(spark, checkpointLocation);
  }

  @Override
  MigrateState self() {
    return this;
  }

  /**
   * The state store provider to end with: {@code "rocksdb"} or {@code "hdfs"} (or the provider's
   * class name).
   */
  public MigrateState toProvider(String name) {
    this.provider = ProviderMigration.resolve(name);
    return this;
  }

  /**
   * The state checkpoint format to end with ({@code
   * spark.sql.streaming.stateStore.checkpointFormatVersion}): 1, or 2 where each state version is
   * named by a unique id that the commit log records (RocksDB only). Spark cannot switch it at
   * restart in either direction. Without it the checkpoint's format is kept.
   */
  public MigrateState toFormatVersion(int version) {
    this.formatVersion = ProviderMigration.formatVersion(version);
    return this;
  }

  /**
   * What the user must know or set in the query's session after migrating to {@code provider}
   * ({@code "rocksdb"} or {@code "hdfs"}), one line each.
   */
  public static List<String> sessionNotes(String provider) {
    return ProviderMigration.sessionNotes(ProviderMigration.resolve(provider));
  }

  /**
   * What the user must know or set in the query's session after the migration {@code plan}
   * describes, one line each: the provider's notes, and the state checkpoint format to set at every
   * start where the migration changes it.
   */
  public static List<String> sessionNotes(RepartitionPlan plan) {
    String target = plan.targetStateStoreProvider();
    if (!StateLayout.ROCKSDB_PROVIDER.equals(target) && !StateLayout.HDFS_PROVIDER.equals(target)) {
      return List.of(); // the plan of an interrupted attempt: finished or undone first
    }
    return ProviderMigration.sessionNotes(
        plan.targetStateStoreProvider(),
        plan.changesFormat() ? plan.targetCheckpointFormatVersion() : 0);
  }

  @Override
  RepartitionRunner newRunner() {
    if (provider == null && formatVersion == null) {
      throw new StateShiftException(
          Reason.INVALID_ARGUMENT,
          "Nothing to migrate to: call toProvider(\"rocksdb\"), toProvider(\"hdfs\") or "
              + "toFormatVersion(1 or 2) before plan() or execute().");
    }
    RepartitionRunner runner =
        new RepartitionRunner(
            spark, checkpointLocation, partitions == null ? 0 : partitions, progress);
    if (provider != null) {
      runner.migrateTo(provider);
    }
    if (formatVersion != null) {
      runner.migrateToFormat(formatVersion);
    }
    return partitions == null ? runner.keepPartitionCount() : runner;
  }
}
