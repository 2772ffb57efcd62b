package io.stateshift.spark.line;

/** What stateshift does on this line and not on others. */
public final class LineFeatures {
  private LineFeatures() {}

  /** transformWithState's state (column families, timers, TTL) is read and written on 4.2 only. */
  public static final boolean TRANSFORM_WITH_STATE = false;
}
