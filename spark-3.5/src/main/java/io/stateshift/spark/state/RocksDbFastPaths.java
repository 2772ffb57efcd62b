package io.stateshift.spark.state;

/**
 * Why stateshift's RocksDB file exchanges (SST files split and merged without a shuffle, direct
 * commits, changelog splits) are absent from the 3.5 line: they are built on Spark 4's RocksDB
 * classes (encoders, file mappings, checkpoint ids). RocksDB state moves behind Spark's shuffle:
 * the read side opens each old version's own snapshot read-only (the shared {@link
 * RocksDbSnapshotReader}, with 3.5's calls in {@link io.stateshift.spark.line.StateCalls}) and, for
 * a store no edit touches whose keys have no prefix, ships the stored key and value bytes as they
 * are ({@link io.stateshift.spark.line.LineCalls#plainRowVersion}), the write side ingests each new
 * partition as one SST file in 3.5's encoding ({@link RocksDbSnapshotWriter}); the classes below
 * keep the shared code's calls and are never reached ({@link
 * io.stateshift.spark.line.StateCalls#ROCKSDB_FAST_PATHS_UNAVAILABLE}).
 */
final class RocksDbFastPaths {
  private RocksDbFastPaths() {}

  static UnsupportedOperationException unavailable() {
    return new UnsupportedOperationException(
        io.stateshift.spark.line.StateCalls.ROCKSDB_FAST_PATHS_UNAVAILABLE);
  }
}
