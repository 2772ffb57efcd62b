package io.stateshift.spark.state;

import java.util.List;
import org.apache.hadoop.conf.Configuration;
import org.apache.spark.sql.execution.streaming.state.StateStoreConf;
import org.apache.spark.sql.execution.streaming.state.StateStoreId;

/** Spark 3.5: no direct commits ({@link RocksDbFastPaths}). */
final class RocksDbDirectCommit {
  static final boolean ENABLED = false;

  private RocksDbDirectCommit() {}

  static boolean applies(StateStoreConf storeConf) {
    return false;
  }

  static void commit(
      RocksDbTaskScope scope,
      StateStoreId store,
      Configuration hadoopConf,
      long version,
      List<String> sstFiles,
      long rows,
      boolean compact,
      TaskTimer timer) {
    throw RocksDbFastPaths.unavailable();
  }
}
