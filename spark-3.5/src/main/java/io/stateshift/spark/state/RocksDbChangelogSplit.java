package io.stateshift.spark.state;

import org.apache.spark.io.CompressionCodec;
import org.apache.spark.sql.execution.streaming.state.StateStoreId;

/** Spark 3.5: no changelog splits; every version loads with the provider. */
final class RocksDbChangelogSplit {
  static final java.util.concurrent.atomic.LongAdder SPLITS =
      new java.util.concurrent.atomic.LongAdder();

  private RocksDbChangelogSplit() {}

  static StateRedistributionJob.ReadOutcome split(
      SplitTask task,
      RocksDbTaskScope scope,
      StateStoreId store,
      long version,
      CompressionCodec codec,
      String checkpointRoot) {
    return null;
  }
}
