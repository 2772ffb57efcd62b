package io.stateshift.spark.line;

import java.io.File;
import org.apache.spark.sql.execution.streaming.state.RocksDB;
import org.apache.spark.sql.execution.streaming.state.RocksDBCheckpointMetadata;
import org.apache.spark.sql.execution.streaming.state.RocksDBFileManager;
import org.apache.spark.sql.execution.streaming.state.RocksDBFileMapping;
import org.rocksdb.Options;
import scala.Option;

/**
 * Calls into Spark's RocksDB classes that are the same from Spark 4.0 on (spark-3.5 has its own): a
 * version's download, its column families, the database's options.
 */
public final class RocksDbCalls {
  private RocksDbCalls() {}

  /**
   * Downloads version {@code version} of a store into {@code dir} with Spark's file manager (a
   * fresh file mapping, the version's checkpoint id where it has one).
   */
  public static RocksDBCheckpointMetadata loadCheckpointFromDfs(
      RocksDBFileManager files, long version, File dir, Option<String> checkpointId) {
    return files.loadCheckpointFromDfs(version, dir, new RocksDBFileMapping(), checkpointId);
  }

  /** Whether a version's metadata names column families (transformWithState's stores). */
  public static boolean hasColumnFamilies(RocksDBCheckpointMetadata metadata) {
    return metadata.columnFamilyMapping().isDefined()
        && metadata.columnFamilyMapping().get().nonEmpty();
  }

  /** The options Spark's RocksDB opens its database with. */
  public static Options rocksDbOptions(RocksDB db) {
    return db.rocksDbOptions();
  }

  /** Stops a store's automatic compactions before it loads; whether it could. */
  public static boolean disableAutoCompactions(RocksDB db) {
    rocksDbOptions(db).setDisableAutoCompactions(true);
    return true;
  }
}
