package io.stateshift.spark.line;

import io.stateshift.spark.state.PartitionKeyExtractor;
import org.apache.spark.sql.catalyst.expressions.UnsafeRow;
import org.apache.spark.sql.execution.streaming.operators.stateful.StatePartitionKeyExtractorFactory;
import org.apache.spark.sql.execution.streaming.operators.stateful.transformwithstate.TransformWithStateVariableInfo;
import org.apache.spark.sql.execution.streaming.state.StatePartitionKeyExtractor;
import org.apache.spark.sql.types.StructType;

/** Spark 4.2 names the partition key of every operator's state key itself: its factory, wrapped. */
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
    StatePartitionKeyExtractor spark =
        StatePartitionKeyExtractorFactory.create(
            operatorName,
            keySchema,
            storeName,
            columnFamily,
            formatVersion > 0 ? scala.Option.apply((Object) formatVersion) : scala.Option.empty(),
            scala.Option.apply(stateVariable));
    return new PartitionKeyExtractor() {
      @Override
      public StructType partitionKeySchema() {
        return spark.partitionKeySchema();
      }

      @Override
      public UnsafeRow partitionKey(UnsafeRow stateKey) {
        return spark.partitionKey(stateKey);
      }
    };
  }
}
