package io.stateshift.spark.state;

import com.fasterxml.jackson.databind.node.ObjectNode;
import io.stateshift.checkpoint.Checkpoint;
import io.stateshift.checkpoint.CheckpointFiles;
import io.stateshift.checkpoint.StatefulOperator;
import io.stateshift.checkpoint.StoreSpec;
import io.stateshift.spark.line.StateStoreColFamilySchema;
import java.util.List;
import org.apache.hadoop.fs.Path;
import org.apache.spark.sql.execution.streaming.state.StateStoreConf;

/**
 * Spark 3.5 has no transformWithState and no state schema v3 files: a layout that would need them
 * is refused before this is reached (LineFeatures), so nothing here runs.
 */
final class TransformWithStateLayout {
  private TransformWithStateLayout() {}

  static StoreSpec storeSpec(
      Checkpoint checkpoint,
      StatefulOperator op,
      StatefulOperator.Store store,
      int slot,
      StateStoreConf storeConf) {
    throw unavailable();
  }

  static List<StateStoreColFamilySchema> readColumnFamilySchemas(
      CheckpointFiles files, StatefulOperator op, Path schemaFile) {
    throw unavailable();
  }

  static Path schemaFile(
      CheckpointFiles files,
      StatefulOperator op,
      StatefulOperator.Store store,
      ObjectNode metadata) {
    throw unavailable();
  }

  private static IllegalStateException unavailable() {
    return new IllegalStateException("Spark 3.5 has no transformWithState");
  }
}
