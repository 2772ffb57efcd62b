package io.stateshift.spark.line;

import org.apache.spark.sql.execution.streaming.operators.stateful.transformwithstate.StateStoreColumnFamilySchemaUtils;

/** How Spark 4.2 names transformWithState's column families. */
public final class TransformWithStateNames {
  private TransformWithStateNames() {}

  /** The state variable a column family belongs to (a timer's, TTL's or index's owner). */
  public static String stateVariable(String columnFamily) {
    return StateStoreColumnFamilySchemaUtils.getBaseStateName(columnFamily);
  }

  /** Spark's own column family (timers, TTL indexes), not a user's state variable. */
  public static boolean internal(String columnFamily) {
    return StateStoreColumnFamilySchemaUtils.isInternalColFamily(columnFamily);
  }
}
