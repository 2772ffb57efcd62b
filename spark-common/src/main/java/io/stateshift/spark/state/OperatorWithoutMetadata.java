package io.stateshift.spark.state;

import io.stateshift.StateShiftException;
import io.stateshift.checkpoint.CheckpointFiles;
import io.stateshift.checkpoint.StateLayout;
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
 * joins, told by their four named stores ({@code left-keyToNumValues}, {@code
 * left-keyWithIndexToValue}, {@code right-...}, each with its schema file; Spark 3.5 writes no
 * operator metadata for joins) and derived as a join, whose indexed stores are placed by the key
 * without its index; session windows (the key ends with the {@code session_window} column Spark's
 * analyzer always names so; placed by the key without it) and streaming {@code limit} (a key with
 * no data, all in partition 0). Those two are refused with the fix; for the rest the kind is told
 * from the value schema Spark's operators use (deduplication's {@code __dummy__},
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
      return join(files, operatorId, namedStores);
    }
    StateStoreColFamilySchema schema =
        LayoutReader.readSchema(files, operatorId, StateStores.DEFAULT_COLUMN_FAMILY);
    StructType key = schema.keySchema();
    StructType value = schema.valueSchema();
    StructField[] keyFields = key.fields();
    // Spark 3.5's session window state: the grouping keys, then the session's start
    // (StreamingSessionWindowStateManagerImplV1), stored under a prefix-key encoding
    boolean sessionStart =
        keyFields.length > 1
            && keyFields[keyFields.length - 1].name().equals("sessionStartTime")
            && keyFields[keyFields.length - 1].dataType()
                instanceof org.apache.spark.sql.types.TimestampType;
    if (sessionStart || key.getFieldIndex("session_window").isDefined()) {
      throw refuse(
          files,
          operatorId,
          "its state key has a "
              + (sessionStart ? "sessionStartTime" : "session_window")
              + " column (a session window, whose state is placed by part of the key)");
    }
    boolean keyHasData = false;
    for (StructField field : key.fields()) {
      keyHasData |= !(field.dataType() instanceof org.apache.spark.sql.types.NullType);
    }
    String name;
    if (!keyHasData) {
      // a streaming limit (its state lives in one partition), named as Spark's metadata names it,
      // so that it is refused as the operator it is, with the same fix on every line
      name = "globalLimit";
    } else if (value.fields().length == 1
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

  /** The four stores of a stream-stream join, in Spark's order. */
  static final List<String> JOIN_STORES =
      List.of(
          "left-keyToNumValues",
          "left-keyWithIndexToValue",
          "right-keyToNumValues",
          "right-keyWithIndexToValue");

  /**
   * A stream-stream join: exactly its four stores, whose schemas are a join's (a count per key; a
   * key with a trailing {@code index} per indexed value), the two sides' keys alike.
   */
  private static StatefulOperator join(
      CheckpointFiles files, long operatorId, List<String> namedStores) {
    if (!new java.util.HashSet<>(namedStores).equals(Set.copyOf(JOIN_STORES))) {
      throw refuse(
          files,
          operatorId,
          "it keeps its state in the named stores "
              + namedStores
              + ", which are not the four stores of a stream-stream join "
              + JOIN_STORES);
    }
    StructType joinKey = null;
    for (String store : JOIN_STORES) {
      StateStoreColFamilySchema schema = LayoutReader.readSchema(files, operatorId, store);
      StructType key = schema.keySchema();
      StructType value = schema.valueSchema();
      boolean indexed = store.endsWith("keyWithIndexToValue");
      StructType placed = key;
      if (indexed) {
        StructField[] fields = key.fields();
        if (fields.length < 2 || !fields[fields.length - 1].name().equals("index")) {
          throw refuse(
              files,
              operatorId,
              "its store "
                  + store
                  + " has no trailing index in its state key "
                  + key.simpleString());
        }
        placed = new StructType(java.util.Arrays.copyOf(fields, fields.length - 1));
      } else if (value.fields().length != 1 || !value.fields()[0].name().equals("value")) {
        throw refuse(
            files,
            operatorId,
            "its store " + store + " holds " + value.simpleString() + ", not a count per key");
      }
      if (joinKey == null) {
        joinKey = placed;
      } else if (!sameTypes(joinKey, placed)) {
        throw refuse(
            files,
            operatorId,
            "the keys of its stores differ ("
                + joinKey.simpleString()
                + ", "
                + placed.simpleString()
                + "), as a join's do not");
      }
    }
    List<StatefulOperator.Store> stores = new ArrayList<>();
    for (String store : JOIN_STORES) {
      stores.add(new StatefulOperator.Store(store, 0));
    }
    return new StatefulOperator(operatorId, StateLayout.JOIN, stores, -1, DERIVED);
  }

  /** The same field types in the same order (the names of a join's two sides may differ). */
  private static boolean sameTypes(StructType a, StructType b) {
    if (a.fields().length != b.fields().length) {
      return false;
    }
    for (int i = 0; i < a.fields().length; i++) {
      if (!a.fields()[i].dataType().sameType(b.fields()[i].dataType())) {
        return false;
      }
    }
    return true;
  }

  static StateShiftException refuse(CheckpointFiles files, long operatorId, String why) {
    return refuse(files.root().toString(), operatorId, why);
  }

  static StateShiftException refuse(String checkpoint, long operatorId, String why) {
    return StatefulOperator.refuseWithoutMetadata(checkpoint, operatorId, why);
  }
}
