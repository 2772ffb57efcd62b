package io.stateshift.spark.state;

import io.stateshift.checkpoint.ColumnFamily;
import org.apache.spark.sql.execution.streaming.operators.stateful.transformwithstate.TransformWithStateVariableInfo;
import org.apache.spark.sql.execution.streaming.state.KeyStateEncoderSpec;
import org.apache.spark.sql.types.StructType;

/**
 * One column family of a store that keeps several, as the state schema v3 file lists it: a
 * transformWithState user state variable or one of Spark's internal ones (timers, TTL indexes), or
 * one of the four stores of a stream-stream join in state format 3.
 *
 * @param encoderSpec how keys are encoded (whole key, prefix scan or range scan), from the schema
 * @param multipleValues a list state: several values per key, written with put then merge
 * @param internal Spark's own column family (name starting with {@code $})
 * @param stateVariable the transformWithState variable it belongs to, which tells Spark's partition
 *     key extractor where the grouping key sits in this column family's key; null for a join, whose
 *     extractor goes by the column family's name and the join state format
 */
public record ColumnFamilySchema(
    String name,
    StructType keySchema,
    StructType valueSchema,
    KeyStateEncoderSpec encoderSpec,
    boolean multipleValues,
    boolean internal,
    TransformWithStateVariableInfo stateVariable)
    implements ColumnFamily {

  /** The column families of a store, as this Spark line read them. */
  static java.util.List<ColumnFamilySchema> of(io.stateshift.checkpoint.StoreSpec spec) {
    return spec.columnFamilies().stream().map(ColumnFamilySchema.class::cast).toList();
  }
}
