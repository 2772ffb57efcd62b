package io.stateshift.spark.state;

import io.stateshift.checkpoint.StoreSpec;
import io.stateshift.config.StateShiftConf;
import io.stateshift.spark.state.StateRedistributionJob.ReadOutcome;
import io.stateshift.spark.state.StateRedistributionJob.StagedFile;
import java.util.List;
import org.apache.hadoop.conf.Configuration;
import org.apache.spark.sql.execution.streaming.state.ReadStateStore;
import org.apache.spark.sql.execution.streaming.state.StateStoreConf;
import org.rocksdb.RocksDBException;

/** Spark 3.5: no SST exchange ({@link RocksDbFastPaths}). */
final class RocksDbSstExchange {
  static final String EXCHANGE_CONF = StateShiftConf.ROCKSDB_EXCHANGE.key();

  private RocksDbSstExchange() {}

  static ReadOutcome split(SplitTask task, ReadStateStore store) {
    throw RocksDbFastPaths.unavailable();
  }

  static org.rocksdb.RocksDB nativeDb(ReadStateStore store) {
    throw RocksDbFastPaths.unavailable();
  }

  static ReadOutcome split(SplitTask task, RocksDbSnapshotReader snapshot, RocksDbTaskScope scope) {
    throw RocksDbFastPaths.unavailable();
  }

  static ReadOutcome splitToMultiple(
      SplitTask task,
      org.rocksdb.RocksDB db,
      RocksDbTaskScope scope,
      int oldPartitions,
      String newStateRoot,
      long version,
      int lastTarget) {
    throw RocksDbFastPaths.unavailable();
  }

  /** Whether RocksDB reports damage to its files, as on the other lines. */
  static boolean isCorruption(Throwable e) {
    for (Throwable t = e; t != null; t = t.getCause()) {
      if (t instanceof RocksDBException r
          && r.getStatus() != null
          && r.getStatus().getCode() == org.rocksdb.Status.Code.Corruption) {
        return true;
      }
    }
    return false;
  }

  static RocksDbSnapshotWriter.Written ingest(
      String stateRoot,
      StoreSpec spec,
      int partition,
      StateStoreConf storeConf,
      Configuration hadoopConf,
      long batchId,
      List<StagedFile> files,
      RocksDbTaskScope scope) {
    throw RocksDbFastPaths.unavailable();
  }
}
