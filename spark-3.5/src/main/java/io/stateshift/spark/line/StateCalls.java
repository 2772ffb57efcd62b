package io.stateshift.spark.line;

import java.io.File;
import org.apache.hadoop.conf.Configuration;
import org.apache.spark.sql.execution.streaming.state.ReadStateStore;
import org.apache.spark.sql.execution.streaming.state.RocksDB;
import org.apache.spark.sql.execution.streaming.state.RocksDBConf;
import org.apache.spark.sql.execution.streaming.state.RocksDBFileManager;
import org.apache.spark.sql.execution.streaming.state.StateStore;
import org.apache.spark.sql.execution.streaming.state.StateStoreProviderId;
import org.rocksdb.Options;

/**
 * Calls into Spark 3.5's state stores, where 4.1 renamed or changed them (as on 4.0): a provider is
 * unloaded without maintenance, a read store is given back by {@code abort}, a join's store ids sit
 * at fixed positions, and the RocksDB members of stateshift's SST file exchanges are missing or
 * differ, so those stay off ({@link #ROCKSDB_FAST_PATHS_UNAVAILABLE}): RocksDB state moves behind
 * Spark's shuffle, each new partition ingested as one SST file (spark-3.5's {@code
 * RocksDbSnapshotWriter}).
 */
public final class StateCalls {
  private StateCalls() {}

  /**
   * The setting of a query's session a new checkpoint takes its state partition count from: 4.0 has
   * no setting of its own, the count is the query's shuffle partitions.
   */
  public static final String NEW_CHECKPOINT_PARTITIONS = "spark.sql.shuffle.partitions";

  /**
   * Why stateshift's RocksDB file exchanges (SST files split and merged without a shuffle, direct
   * commits, read-only snapshots) do not run, or null. 3.5 writes RocksDB state by SST ingestion
   * behind the shuffle instead (spark-3.5's {@code RocksDbSnapshotWriter}).
   */
  public static final String ROCKSDB_FAST_PATHS_UNAVAILABLE =
      "Spark 3.5's RocksDB classes lack what stateshift's SST file exchanges use (Spark 4's"
          + " encoders, file mappings, localRootDir, file checksums); moved behind the shuffle";

  /** Closes a loaded provider of this executor (4.0 has no maintenance-and-unload). */
  public static void unloadProvider(StateStoreProviderId id) {
    StateStore.unload(id);
  }

  /** Gives back a store opened for reading: 4.0's read stores have abort, not release. */
  public static void release(ReadStateStore store) {
    store.abort();
  }

  /**
   * Where a join store's id sits in a partition's array: 4.0 reads them in this fixed order ({@code
   * SymmetricHashJoinStateManager.getStateStoreCheckpointIds}); -1 for another store.
   */
  public static int joinCheckpointIdPosition(String storeName) {
    return switch (storeName) {
      case "left-keyToNumValues" -> 0;
      case "left-keyWithIndexToValue" -> 1;
      case "right-keyToNumValues" -> 2;
      case "right-keyWithIndexToValue" -> 3;
      default -> -1;
    };
  }

  public static File localRootDir(RocksDB db) {
    throw unavailable();
  }

  /** 4.0 writes no file checksums. */
  public static boolean fileChecksumEnabled(RocksDBConf conf) {
    return false;
  }

  /** 4.0 does not check its zips for empty files. */
  public static boolean verifyNonEmptyFilesInZip(RocksDBConf conf) {
    return false;
  }

  public static RocksDBFileManager fileManager(
      String dfsRootDir, File localTempDir, Configuration hadoopConf, RocksDBConf conf, String id) {
    return new RocksDBFileManager(
        dfsRootDir, localTempDir, hadoopConf, conf.compressionCodec(), id);
  }

  /** 4.0's file manager holds nothing to close. */
  public static void close(RocksDBFileManager files) {}

  private static UnsupportedOperationException unavailable() {
    return new UnsupportedOperationException(ROCKSDB_FAST_PATHS_UNAVAILABLE);
  }

  /**
   * The options Spark 3.5's RocksDB opens its database with: a private val that Scala exposes under
   * its path, as Spark 4 does under {@code rocksDbOptions}.
   */
  public static Options rocksDbOptions(RocksDB db) {
    return db.org$apache$spark$sql$execution$streaming$state$RocksDB$$dbOptions();
  }

  /** Stops a store's automatic compactions before it loads; whether it could. */
  public static boolean disableAutoCompactions(RocksDB db) {
    rocksDbOptions(db).setDisableAutoCompactions(true);
    return true;
  }
}
