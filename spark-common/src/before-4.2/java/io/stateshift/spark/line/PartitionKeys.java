package io.stateshift.spark.line;

import io.stateshift.spark.state.PartitionKeyExtractor;
import io.stateshift.spark.state.ScalaBridge;
import org.apache.spark.sql.catalyst.expressions.BoundReference;
import org.apache.spark.sql.catalyst.expressions.Expression;
import org.apache.spark.sql.catalyst.expressions.UnsafeProjection;
import org.apache.spark.sql.catalyst.expressions.UnsafeRow;
import org.apache.spark.sql.execution.streaming.operators.stateful.transformwithstate.TransformWithStateVariableInfo;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;

/**
 * The partition key of a state key on lines whose Spark does not name it (before 4.2), by the rules
 * each operator's state manager follows when it writes: the whole key, or the key without its last
 * field (a session window's start, a join's value index).
 */
public final class PartitionKeys {
  private PartitionKeys() {}

  /**
   * @param formatVersion the operator's state format version, 0 when unknown
   * @param stateVariable the transformWithState variable of the column family, else null
   */
  public static PartitionKeyExtractor of(
      String operatorName,
      StructType keySchema,
      String storeName,
      String columnFamily,
      int formatVersion,
      TransformWithStateVariableInfo stateVariable) {
    switch (operatorName) {
      case "stateStoreSave",
      "dedupe",
      "dedupeWithinWatermark",
      "flatMapGroupsWithState",
      "applyInPandasWithState":
        return whole(keySchema);
      case "sessionWindowStateStoreSaveExec":
        return withoutLast(keySchema);
      case "symmetricHashJoin":
        // format 3 keeps the four stores as column families of one; before, as stores
        String store = formatVersion >= 3 ? columnFamily : storeName;
        return store.endsWith("keyWithIndexToValue") ? withoutLast(keySchema) : whole(keySchema);
      case "transformWithStateExec",
      "transformWithStateInPandasExec",
      "transformWithStateInPySparkExec":
        // refused before it gets here: LineFeatures.TRANSFORM_WITH_STATE
        throw new IllegalStateException("transformWithState state is refused on this Spark line");
      default:
        throw new IllegalArgumentException(
            "no partition key is known for the state of operator " + operatorName);
    }
  }

  private static PartitionKeyExtractor whole(StructType keySchema) {
    return new PartitionKeyExtractor() {
      @Override
      public StructType partitionKeySchema() {
        return keySchema;
      }

      @Override
      public UnsafeRow partitionKey(UnsafeRow stateKey) {
        return stateKey;
      }
    };
  }

  /** Every field but the last, as a row of its own. */
  private static PartitionKeyExtractor withoutLast(StructType keySchema) {
    StructField[] fields = keySchema.fields();
    if (fields.length < 2) {
      throw new IllegalArgumentException("a key of one field has no part to drop: " + keySchema);
    }
    StructField[] kept = java.util.Arrays.copyOf(fields, fields.length - 1);
    StructType schema = new StructType(kept);
    java.util.List<Expression> refs = new java.util.ArrayList<>();
    for (int i = 0; i < kept.length; i++) {
      refs.add(new BoundReference(i, kept[i].dataType(), kept[i].nullable()));
    }
    UnsafeProjection projection = UnsafeProjection.create(ScalaBridge.seq(refs));
    return new PartitionKeyExtractor() {
      @Override
      public StructType partitionKeySchema() {
        return schema;
      }

      @Override
      public UnsafeRow partitionKey(UnsafeRow stateKey) {
        return projection.apply(stateKey);
      }
    };
  }
}
