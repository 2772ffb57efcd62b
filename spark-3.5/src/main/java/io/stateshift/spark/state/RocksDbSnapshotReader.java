package io.stateshift.spark.state;

import java.util.Map;
import org.apache.hadoop.conf.Configuration;
import org.apache.spark.sql.execution.streaming.state.StateStoreId;

/** Spark 3.5: no read-only snapshots; every version loads with the provider. */
final class RocksDbSnapshotReader implements AutoCloseable {
  static final boolean ENABLED = false;

  private RocksDbSnapshotReader() {}

  static RocksDbSnapshotReader open(
      RocksDbTaskScope scope,
      StateStoreId store,
      long version,
      scala.Option<String> checkpointId,
      Configuration hadoopConf,
      TaskTimer timer,
      Map<String, ListedFile> listed) {
    return null;
  }

  org.rocksdb.RocksDB db() {
    throw RocksDbFastPaths.unavailable();
  }

  @Override
  public void close() {}
}
