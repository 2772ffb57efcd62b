package io.stateshift.spark.state;

import io.stateshift.checkpoint.StoreSpec;
import java.io.File;
import java.io.IOException;
import org.apache.hadoop.conf.Configuration;
import org.apache.spark.sql.execution.streaming.state.StateStoreConf;
import org.rocksdb.Options;

/**
 * Spark 3.5: no scope shared by a task's RocksDB stores; only the fast paths use one ({@link
 * RocksDbFastPaths}), and every store is opened by its provider.
 */
final class RocksDbTaskScope implements AutoCloseable {
  private RocksDbTaskScope() {}

  /** None on 3.5. */
  static RocksDbTaskScope open(
      String stateRoot, StoreSpec spec, StateStoreConf storeConf, Configuration hadoopConf) {
    return null;
  }

  Options options() {
    throw RocksDbFastPaths.unavailable();
  }

  File newLocalDir(String prefix) {
    throw RocksDbFastPaths.unavailable();
  }

  File localRootDir() {
    throw RocksDbFastPaths.unavailable();
  }

  static void linkOrCopy(java.nio.file.Path source, java.nio.file.Path target) throws IOException {
    throw RocksDbFastPaths.unavailable();
  }

  static void deleteRecursively(File file) {
    File[] children = file.listFiles();
    if (children != null) {
      for (File child : children) {
        deleteRecursively(child);
      }
    }
    file.delete();
  }

  @Override
  public void close() {}
}
