package io.stateshift.spark.line;

import java.io.File;
import org.apache.hadoop.conf.Configuration;
import org.apache.spark.sql.execution.streaming.checkpointing.Checksum;
import org.apache.spark.sql.execution.streaming.checkpointing.ChecksumFileCreatorInfo$;
import org.apache.spark.sql.execution.streaming.operators.stateful.join.SymmetricHashJoinStateManager$;
import org.apache.spark.sql.execution.streaming.state.ReadStateStore;
import org.apache.spark.sql.execution.streaming.state.RocksDB;
import org.apache.spark.sql.execution.streaming.state.RocksDBConf;
import org.apache.spark.sql.execution.streaming.state.RocksDBFileManager;
import org.apache.spark.sql.execution.streaming.state.RocksDBSnapshotFile;
import org.apache.spark.sql.execution.streaming.state.StateStore;
import org.apache.spark.sql.execution.streaming.state.StateStoreProviderId;
import scala.Option;

/**
 * Calls into Spark's state stores whose names or signatures changed with 4.1 (this folder: 4.1 and
 * later; spark-4.0 has its own): unloading a provider, releasing a read store, a join store's
 * checkpoint id, and the RocksDB members stateshift's fast paths use.
 */
public final class StateCalls {
  private StateCalls() {}

  /**
   * The setting of a query's session a new checkpoint takes its state partition count from: Spark's
   * internal setting.
   */
  public static final String NEW_CHECKPOINT_PARTITIONS =
      "spark.sql.streaming.internal.stateStore.partitions";

  /** Why stateshift's RocksDB fast paths (SST ingestion, direct commits) do not run, or null. */
  public static final String ROCKSDB_FAST_PATHS_UNAVAILABLE = null;

  /** Closes a loaded provider of this executor, after its maintenance. */
  public static void unloadProvider(StateStoreProviderId id) {
    StateStore.doMaintenanceAndUnload(id);
  }

  /** Gives back a store opened for reading. */
  public static void release(ReadStateStore store) {
    store.release();
  }

  /**
   * Where a join store's id sits in a partition's array, as Spark reads it: asks Spark's own lookup
   * with an array whose entries are their positions; -1 for a store that has none.
   */
  public static int joinCheckpointIdPosition(String storeName) {
    String[][] probe = {{"0", "1", "2", "3"}};
    Option<String> position =
        SymmetricHashJoinStateManager$.MODULE$.getStateStoreCheckpointId(
            storeName, 0, Option.apply(probe), false);
    return position.isEmpty() ? -1 : Integer.parseInt(position.get());
  }

  public static File localRootDir(RocksDB db) {
    return db.localRootDir();
  }

  public static boolean fileChecksumEnabled(RocksDBConf conf) {
    return conf.fileChecksumEnabled();
  }

  /**
   * What Spark's checksummed file manager writes in {@code <file>.crc} beside a file of {@code
   * size} bytes whose CRC32C is {@code crc32c}.
   */
  public static String checksumFileJson(int crc32c, long size) {
    return new Checksum(
            "CRC32C",
            crc32c,
            size,
            System.currentTimeMillis(),
            ChecksumFileCreatorInfo$.MODULE$.apply())
        .json();
  }

  public static boolean verifyNonEmptyFilesInZip(RocksDBConf conf) {
    return conf.verifyNonEmptyFilesInZip();
  }

  /** Spark's file manager for a store partition's folder in the checkpoint; close it after. */
  public static RocksDBFileManager fileManager(
      String dfsRootDir, File localTempDir, Configuration hadoopConf, RocksDBConf conf, String id) {
    return new RocksDBFileManager(
        dfsRootDir,
        localTempDir,
        hadoopConf,
        conf.compressionCodec(),
        id,
        conf.stateStoreConf(),
        conf.fileChecksumEnabled(),
        StoreCalls.fileChecksumThreadPoolSize(conf));
  }

  public static void close(RocksDBFileManager files) {
    files.close();
  }

  /** Spark's upload of a local checkpoint folder as {@code version}, without column families. */
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
        Option.empty(),
        conf.verifyNonEmptyFilesInZip());
  }
}
