package io.stateshift.spark.line;

import java.io.File;
import java.lang.reflect.Field;
import org.apache.hadoop.conf.Configuration;
import org.apache.spark.sql.execution.streaming.state.ReadStateStore;
import org.apache.spark.sql.execution.streaming.state.RocksDB;
import org.apache.spark.sql.execution.streaming.state.RocksDBConf;
import org.apache.spark.sql.execution.streaming.state.RocksDBFileManager;
import org.apache.spark.sql.execution.streaming.state.StateStore;
import org.apache.spark.sql.execution.streaming.state.StateStoreProviderId;

/**
 * Calls into Spark 3.5's state stores, where 4.1 renamed or changed them (as on 4.0): a provider is
 * unloaded without maintenance, a read store is given back by {@code abort}, a join's store ids sit
 * at fixed positions, and the RocksDB members of stateshift's fast paths differ: a store's local
 * folder is a private field, the file manager writes no checksums, holds nothing to close and
 * checks no zips. The rest of 3.5's RocksDB calls (options, download, upload names, metadata) are
 * in its {@link RocksDbCalls}.
 */
public final class StateCalls {
  private StateCalls() {}

  /** 3.5 keeps a store's local folder in a private field (the constructor's parameter). */
  private static final Field LOCAL_ROOT_DIR = RocksDbLocalDir.FIELD;

  /**
   * The setting of a query's session a new checkpoint takes its state partition count from: 4.0 has
   * no setting of its own, the count is the query's shuffle partitions.
   */
  public static final String NEW_CHECKPOINT_PARTITIONS = "spark.sql.shuffle.partitions";

  /** Why stateshift's RocksDB fast paths (SST ingestion, direct commits) do not run, or null. */
  public static final String ROCKSDB_FAST_PATHS_UNAVAILABLE =
      LOCAL_ROOT_DIR == null
          ? "Spark's org.apache.spark.sql.execution.streaming.state.RocksDB has no private field"
              + " 'localRootDir' (java.io.File): its internals differ from Spark 3.5.8's"
          : null;

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

  /** The store's local folder, from 3.5's private field. */
  public static File localRootDir(RocksDB db) {
    if (LOCAL_ROOT_DIR == null) {
      throw new IllegalStateException(
          "Spark's org.apache.spark.sql.execution.streaming.state.RocksDB has no private field"
              + " 'localRootDir' (java.io.File): its internals differ from Spark 3.5.8's");
    }
    try {
      return (File) LOCAL_ROOT_DIR.get(db);
    } catch (IllegalAccessException e) {
      throw new IllegalStateException("Cannot read RocksDB.localRootDir: " + e, e);
    }
  }

  /** Whether the store's local folder can be read ({@link #localRootDir}). */
  public static boolean hasLocalRootDir() {
    return LOCAL_ROOT_DIR != null;
  }

  /** 3.5 writes no file checksums. */
  public static boolean fileChecksumEnabled(RocksDBConf conf) {
    return false;
  }

  /** Never asked on 3.5, which writes no file checksums. */
  public static String checksumFileJson(int crc32c, long size) {
    throw new UnsupportedOperationException("Spark 3.5 writes no file checksums");
  }

  /** 3.5 does not check its zips for empty files. */
  public static boolean verifyNonEmptyFilesInZip(RocksDBConf conf) {
    return false;
  }

  public static RocksDBFileManager fileManager(
      String dfsRootDir, File localTempDir, Configuration hadoopConf, RocksDBConf conf, String id) {
    return new RocksDBFileManager(
        dfsRootDir, localTempDir, hadoopConf, conf.compressionCodec(), id);
  }

  /** 3.5's file manager holds nothing to close. */
  public static void close(RocksDBFileManager files) {}
}
