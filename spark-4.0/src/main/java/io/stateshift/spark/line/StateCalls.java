package io.stateshift.spark.line;

import java.io.File;
import java.lang.reflect.Field;
import org.apache.hadoop.conf.Configuration;
import org.apache.spark.sql.execution.streaming.state.ReadStateStore;
import org.apache.spark.sql.execution.streaming.state.RocksDB;
import org.apache.spark.sql.execution.streaming.state.RocksDBConf;
import org.apache.spark.sql.execution.streaming.state.RocksDBFileManager;
import org.apache.spark.sql.execution.streaming.state.RocksDBSnapshotFile;
import org.apache.spark.sql.execution.streaming.state.StateStore;
import org.apache.spark.sql.execution.streaming.state.StateStoreProviderId;
import scala.Option;

/**
 * Calls into Spark 4.0's state stores, where 4.1 renamed or changed them: a provider is unloaded
 * without maintenance, a read store is given back by {@code abort}, a join's store ids sit at fixed
 * positions, and the RocksDB members of stateshift's fast paths differ: a store's local folder is a
 * private field, the file manager writes no checksums and holds nothing to close, and its upload
 * takes no zip check.
 */
public final class StateCalls {
  private StateCalls() {}

  private static final Field LOCAL_ROOT_DIR = RocksDbLocalDir.FIELD;
  private static final String LOCAL_ROOT_DIR_PROBLEM =
      LOCAL_ROOT_DIR == null
          ? "Spark's org.apache.spark.sql.execution.streaming.state.RocksDB has no private field"
              + " 'localRootDir' (java.io.File); written through the provider's puts"
          : null;

  /**
   * The setting of a query's session a new checkpoint takes its state partition count from: 4.0 has
   * no setting of its own, the count is the query's shuffle partitions.
   */
  public static final String NEW_CHECKPOINT_PARTITIONS = "spark.sql.shuffle.partitions";

  /** Why stateshift's RocksDB fast paths (SST ingestion, direct commits) do not run, or null. */
  public static final String ROCKSDB_FAST_PATHS_UNAVAILABLE = LOCAL_ROOT_DIR_PROBLEM;

  /** Closes a loaded provider of this executor (4.0 has no maintenance-and-unload). */
  public static void unloadProvider(StateStoreProviderId id) {
    StateStore.unload(id);
  }

  /** Gives back a store opened for reading: 4.0's read stores have abort, not release. */
  public static void release(ReadStateStore store) {
    store.abort();
  }

  /**
   * Where a store's id sits in a partition's array: a join's four in the fixed order 4.0 reads them
   * ({@code SymmetricHashJoinStateManager.getStateStoreCheckpointIds}), any other operator's one
   * store first; -1 for another store.
   */
  public static int joinCheckpointIdPosition(String storeName) {
    return switch (storeName) {
      case "default", "left-keyToNumValues" -> 0;
      case "left-keyWithIndexToValue" -> 1;
      case "right-keyToNumValues" -> 2;
      case "right-keyWithIndexToValue" -> 3;
      default -> -1;
    };
  }

  /** The store's local folder: 4.0 keeps it in a private field, 4.1 made it public. */
  public static File localRootDir(RocksDB db) {
    try {
      return (File) LOCAL_ROOT_DIR.get(db);
    } catch (IllegalAccessException e) {
      throw new IllegalStateException("Cannot read RocksDB.localRootDir: " + e, e);
    }
  }

  /** 4.0 writes no file checksums. */
  public static boolean fileChecksumEnabled(RocksDBConf conf) {
    return false;
  }

  /** Never asked on 4.0, which writes no file checksums. */
  public static String checksumFileJson(int crc32c, long size) {
    throw new UnsupportedOperationException("Spark 4.0 writes no file checksums");
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

  public static void saveCheckpointToDfs(
      RocksDBFileManager files,
      RocksDBConf conf,
      File dir,
      long version,
      long rows,
      scala.collection.Map<String, RocksDBSnapshotFile> mapping) {
    files.saveCheckpointToDfs(
        dir,
        version,
        rows,
        0L,
        mapping,
        Option.apply(scala.collection.immutable.Map$.MODULE$.empty()),
        Option.apply((Object) (short) 0),
        Option.empty());
  }
}
