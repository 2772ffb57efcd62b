package io.stateshift.spark.state;

import io.stateshift.StateShiftException;
import io.stateshift.checkpoint.CheckpointFiles;
import io.stateshift.checkpoint.StatefulOperator;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import org.apache.hadoop.fs.FileStatus;
import org.apache.spark.sql.execution.streaming.state.StateStoreColFamilySchema;
import org.apache.spark.sql.types.NullType$;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;

/**
 * An operator of a checkpoint written before Spark 4.0, which has no operator metadata ({@code
 * state/<op>/_metadata}), told from what the checkpoint does hold: its store folders and the state
 * schema file of partition 0.
 *
 * <p>Only what decides where a key belongs matters for a repartition. Every operator Spark 3.5 has
 * places its state by the whole state key, except three, each recognisable for sure: stream-stream
 * joins (four named stores), session windows (the key ends with the {@code session_window} column
 * Spark's analyzer always names so; placed by the key without it) and streaming {@code limit} (a
 * key with no data, all in partition 0). Those are refused with the fix; for the rest the kind is
 * told from the value schema Spark's operators use (deduplication's {@code __dummy__},
 * dropDuplicatesWithinWatermark's {@code expiresAtMicros}, flatMapGroupsWithState's {@code
 * timeoutTimestamp}; otherwise an aggregation). The repartition also checks, key by key, that the
 * state it reads sits where this placement says ({@link StateRedistributionJob}), so a wrong guess
 * stops it before anything changes.
 */
final class OperatorWithoutMetadata {
  static final int DERIVED = StatefulOperator.DERIVED;

  private static final Set<String> ROCKSDB_FOLDERS = Set.of("SSTs", "logs", "_metadata");

  private OperatorWithoutMetadata() {}

  static StatefulOperator derive(CheckpointFiles files, long operatorId) {
    String partition0 = "state/" + operatorId + "/0";
    List<String> namedStores = new ArrayList<>();
    for (FileStatus child : files.list(files.path(partition0))) {
      String name = child.getPath().getName();
      if (child.isDirectory() && !ROCKSDB_FOLDERS.contains(name)) {
        namedStores.add(name);
      }
    }
    if (!namedStores.isEmpty()) {
      throw refuse(
          files,
          operatorId,
          "it keeps its state in the named stores " + namedStores + " (a stream-stream join)");
    }
    StateStoreColFamilySchema schema =
        LayoutReader.readSchema(files, operatorId, StateStores.DEFAULT_COLUMN_FAMILY);
    StructType key = schema.keySchema();
    StructType value = schema.valueSchema();
    if (key.getFieldIndex("session_window").isDefined()) {
      throw refuse(
          files,
          operatorId,
          "its state key has a session_window column (a session "
              + "window, whose state is placed by part of the key)");
    }
    boolean keyHasData = false;
    for (StructField field : key.fields()) {
      keyHasData |= !(field.dataType() instanceof org.apache.spark.sql.types.NullType);
    }
    if (!keyHasData) {
      throw refuse(
          files,
          operatorId,
          "its state key holds no data (a streaming limit, whose "
              + "state lives in one partition)");
    }
    String name;
    if (value.fields().length == 1
        && value.fields()[0].name().equals("__dummy__")
        && value.fields()[0].dataType().equals(NullType$.MODULE$)) {
      name = "dedupe";
    } else if (value.fields().length == 1 && value.fields()[0].name().equals("expiresAtMicros")) {
      name = "dedupeWithinWatermark";
    } else if (value.getFieldIndex("timeoutTimestamp").isDefined()) {
      name = "flatMapGroupsWithState";
    } else {
      name = "stateStoreSave";
    }
    return new StatefulOperator(
        operatorId,
        name,
        List.of(new StatefulOperator.Store(StateStores.DEFAULT_COLUMN_FAMILY, 0)),
        -1,
        DERIVED);
  }

  static StateShiftException refuse(CheckpointFiles files, long operatorId, String why) {
    return refuse(files.root().toString(), operatorId, why);
  }

  static StateShiftException refuse(String checkpoint, long operatorId, String why) {
    return StatefulOperator.refuseWithoutMetadata(checkpoint, operatorId, why);
  }
}
