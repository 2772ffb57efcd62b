package io.stateshift.spark.line;

/**
 * Stands in for Spark 4's transformWithState variable on 3.5, which has no transformWithState
 * (renamed by the build, as {@link StateStoreIterator}); never made.
 */
public final class TransformWithStateVariableInfo {
  private TransformWithStateVariableInfo() {}

  public String stateName() {
    throw new IllegalStateException("Spark 3.5 has no transformWithState");
  }

  public Object stateVariableType() {
    throw new IllegalStateException("Spark 3.5 has no transformWithState");
  }
}
