package io.stateshift.spark.line;

import java.io.File;
import org.apache.spark.sql.execution.streaming.state.RocksDB;
import org.apache.spark.sql.execution.streaming.state.RocksDBCheckpointMetadata;
import org.apache.spark.sql.execution.streaming.state.RocksDBFileManager;
import org.rocksdb.Options;

/** Spark 3.5's RocksDB calls: no file mappings, checkpoint ids or column families. */
public final class RocksDbCalls {
  private RocksDbCalls() {}

  /** Downloads version {@code version} of a store into {@code dir} with Spark's file manager. */
  public static RocksDBCheckpointMetadata loadCheckpointFromDfs(
      RocksDBFileManager files, long version, File dir, scala.Option<String> checkpointId) {
    if (checkpointId.isDefined()) {
      throw new IllegalStateException("Spark 3.5 has no state checkpoint format v2");
    }
    return files.loadCheckpointFromDfs(version, dir);
  }

  /** 3.5 has no column families. */
  public static boolean hasColumnFamilies(RocksDBCheckpointMetadata metadata) {
    return false;
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
