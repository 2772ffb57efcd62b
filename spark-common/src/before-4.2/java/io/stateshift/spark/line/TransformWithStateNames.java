package io.stateshift.spark.line;

/**
 * transformWithState's column families on lines before 4.2: unreachable, since those lines refuse
 * its state ({@link LineFeatures#TRANSFORM_WITH_STATE}).
 */
public final class TransformWithStateNames {
  private TransformWithStateNames() {}

  public static String stateVariable(String columnFamily) {
    throw new IllegalStateException("transformWithState state is refused on this Spark line");
  }

  public static boolean internal(String columnFamily) {
    throw new IllegalStateException("transformWithState state is refused on this Spark line");
  }
}
