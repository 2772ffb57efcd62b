package io.stateshift.spark.state;

import org.apache.spark.sql.catalyst.expressions.UnsafeRow;
import org.apache.spark.sql.types.StructType;

/**
 * The part of a state key that Spark hashes to place it in a partition: the grouping key inside a
 * session window's key, a join's key inside its indexed key, a transformWithState variable's
 * grouping key inside a map, timer or TTL key. Each line supplies it ({@code
 * io.stateshift.spark.line.PartitionKeys}): Spark 4.2 names it itself, earlier lines by the same
 * rules.
 */
public interface PartitionKeyExtractor {
  StructType partitionKeySchema();

  /** The partition key of {@code stateKey}; may reuse its result row between calls. */
  UnsafeRow partitionKey(UnsafeRow stateKey);
}
