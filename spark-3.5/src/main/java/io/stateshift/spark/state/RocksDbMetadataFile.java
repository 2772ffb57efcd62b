package io.stateshift.spark.state;

import java.io.File;
import org.apache.spark.sql.execution.streaming.state.RocksDBCheckpointMetadata;
import org.apache.spark.sql.execution.streaming.state.RocksDBCheckpointMetadata$;

/**
 * Spark 3.5: a version's metadata file read by Spark's own reader (the shared parser builds Spark
 * 4's metadata, with column families and checkpoint ids, which 3.5's has not).
 */
final class RocksDbMetadataFile {
  private RocksDbMetadataFile() {}

  static RocksDBCheckpointMetadata read(File file) {
    return RocksDBCheckpointMetadata$.MODULE$.readFromFile(file);
  }
}
