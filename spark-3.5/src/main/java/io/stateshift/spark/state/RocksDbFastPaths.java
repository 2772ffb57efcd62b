package io.stateshift.spark.state;

/**
 * Why stateshift's RocksDB fast paths (SST exchange and ingestion, read-only snapshots, direct
 * commits, changelog splits) are absent from the 3.5 line: they are built on Spark 4's RocksDB
 * classes (encoders, file mappings, checkpoint ids). RocksDB state is read through the provider and
 * written through its puts, as on 4.0; the classes below keep the shared code's calls and are never
 * reached ({@link io.stateshift.spark.line.StateCalls#ROCKSDB_FAST_PATHS_UNAVAILABLE}).
 */
final class RocksDbFastPaths {
  private RocksDbFastPaths() {}

  static UnsupportedOperationException unavailable() {
    return new UnsupportedOperationException(
        io.stateshift.spark.line.StateCalls.ROCKSDB_FAST_PATHS_UNAVAILABLE);
  }
}
