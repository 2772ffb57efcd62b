package io.stateshift.checkpoint.spi;

import java.util.ServiceLoader;

/** Finds the {@link SparkLine} on the class path: the module of the Spark line in use. */
public final class SparkLines {
  private static volatile SparkLine current;

  private SparkLines() {}

  /** The Spark line implementation; fails with the artifact to add when there is none. */
  public static SparkLine get() {
    SparkLine line = current;
    if (line == null) {
      synchronized (SparkLines.class) {
        if (current == null) {
          current = load();
        }
        line = current;
      }
    }
    return line;
  }

  /**
   * The line, if the Spark it runs on is of that line: each line calls Spark's private classes as
   * its own Spark has them, so on another Spark it would fail in the middle of a change, or write
   * state that Spark cannot continue.
   */
  static SparkLine requireOwnSpark(SparkLine line, String sparkVersion) {
    String running = lineOf(sparkVersion);
    if (!running.equals(line.sparkLine())) {
      throw new io.stateshift.StateShiftException(
          io.stateshift.StateShiftException.Reason.SPARK_LINE_MISMATCH,
          "stateshift's Spark "
              + line.sparkLine()
              + " line runs on Spark "
              + sparkVersion
              + ": use the artifact of Spark "
              + running
              + " (io.stateshift:stateshift-spark-"
              + running
              + "_<scala version>), or STATESHIFT_SPARK_LINE="
              + running
              + " with the command line.");
    }
    return line;
  }

  /** The line of a Spark version: {@code 4.1} for {@code 4.1.3}. */
  public static String lineOf(String sparkVersion) {
    String[] parts = sparkVersion.split("\\.");
    return parts.length >= 2 ? parts[0] + "." + parts[1] : sparkVersion;
  }

  private static SparkLine load() {
    for (ClassLoader loader :
        new ClassLoader[] {
          SparkLine.class.getClassLoader(), Thread.currentThread().getContextClassLoader()
        }) {
      if (loader == null) {
        continue;
      }
      for (SparkLine line : ServiceLoader.load(SparkLine.class, loader)) {
        return requireOwnSpark(line, org.apache.spark.package$.MODULE$.SPARK_VERSION());
      }
    }
    throw new IllegalStateException(
        "No stateshift Spark line on the class path: stateshift-core alone cannot read state. Use"
            + " the artifact for your Spark version, io.stateshift:stateshift-spark-<spark"
            + " line>_<scala version> (for Spark 4.2: stateshift-spark-4.2_2.13), which includes"
            + " the core.");
  }
}
