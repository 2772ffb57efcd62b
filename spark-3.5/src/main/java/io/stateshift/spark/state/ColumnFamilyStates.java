package io.stateshift.spark.state;

import io.stateshift.checkpoint.PlacementCheck;
import io.stateshift.checkpoint.StoreSpec;
import java.util.Iterator;
import org.apache.hadoop.conf.Configuration;
import org.apache.spark.sql.catalyst.expressions.UnsafeRow;
import org.apache.spark.sql.execution.streaming.state.StateStore;
import org.apache.spark.sql.execution.streaming.state.StateStoreConf;

/**
 * Spark 3.5's stores have no column families (transformWithState, join state format 3, both 4.0's):
 * a layout with them is refused before any store is opened (LineFeatures), so nothing here runs.
 */
final class ColumnFamilyStates {
  private ColumnFamilyStates() {}

  static void registerAll(StateStore store, StoreSpec spec) {
    throw unavailable();
  }

  /** A partition being read; never made on 3.5. */
  static final class Reader implements AutoCloseable {
    Reader(
        String stateRoot,
        StoreSpec spec,
        int partition,
        long version,
        scala.Option<String> checkpointId,
        StateStoreConf storeConf,
        Configuration hadoopConf) {
      throw unavailable();
    }

    Iterator<Entry> entries(StoreSpec spec, int newPartitions) {
      throw unavailable();
    }

    Iterator<Entry> entries(
        StoreSpec spec, int newPartitions, PlacementCheck check, String source) {
      throw unavailable();
    }

    @Override
    public void close() {}
  }

  /** One state entry of column family number {@code family}. */
  record Entry(
      int family, int newPartition, UnsafeRow key, UnsafeRow value, UnsafeRow groupingKey) {
    byte[] record(int target) {
      throw unavailable();
    }

    long bytes() {
      return key.getSizeInBytes() + value.getSizeInBytes();
    }
  }

  static RocksDbSnapshotWriter.Written write(
      String stateRoot,
      StoreSpec spec,
      int partition,
      StateStoreConf storeConf,
      Configuration hadoopConf,
      long batchId,
      Iterator<byte[]> records) {
    throw unavailable();
  }

  private static IllegalStateException unavailable() {
    return new IllegalStateException("Spark 3.5's state stores have no column families");
  }
}
