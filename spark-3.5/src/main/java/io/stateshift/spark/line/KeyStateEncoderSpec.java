package io.stateshift.spark.line;

import org.apache.spark.sql.types.StructType;

/**
 * Stands in for Spark 4's key encoder specs on 3.5, which has a prefix-key column count instead
 * (renamed by the build, as {@link StateStoreIterator}); only its transformWithState and RocksDB
 * fast-path code names them, which 3.5 never runs.
 */
public interface KeyStateEncoderSpec {
  StructType keySchema();
}
