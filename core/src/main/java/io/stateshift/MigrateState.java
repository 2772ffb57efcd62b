package io.stateshift;

import io.stateshift.StateShiftException.Reason;
import io.stateshift.protocol.ProviderMigration;
import io.stateshift.protocol.RepartitionRunner;
import java.util.List;
import org.apache.spark.sql.SparkSession;

/**
 * A migration of the state of a stopped streaming query to another state store provider
 * (HDFS-backed to RocksDB or back), with a partition change in the same pass if asked, configured
 * fluently and run with {@link #execute()}; {@link #plan()} reports what would be done and writes
 * nothing. It runs under the same protocol as a repartition (journal, lock, rollback, verify,
 * history): the state is read with the old provider, written for the new one, and the offset log
 * entry of the new batch names the new provider, which the restarted query then uses.
 */
public final class MigrateState extends StateChange<MigrateState> {
  private String provider;

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
   * What the user must know or set in the query's session after migrating to {@code provider}
   * ({@code "rocksdb"} or {@code "hdfs"}), one line each.
   */
  public static List<String> sessionNotes(String provider) {
    return ProviderMigration.sessionNotes(ProviderMigration.resolve(provider));
  }

  @Override
  RepartitionRunner newRunner() {
    if (provider == null) {
      throw new StateShiftException(
          Reason.INVALID_ARGUMENT,
          "No provider given: call toProvider(\"rocksdb\") or toProvider(\"hdfs\") before plan() "
              + "or execute().");
    }
    RepartitionRunner runner =
        new RepartitionRunner(
                spark, checkpointLocation, partitions == null ? 0 : partitions, progress)
            .migrateTo(provider);
    return partitions == null ? runner.keepPartitionCount() : runner;
  }
}
