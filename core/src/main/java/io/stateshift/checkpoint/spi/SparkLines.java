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

  private static SparkLine load() {
    for (ClassLoader loader :
        new ClassLoader[] {
          SparkLine.class.getClassLoader(), Thread.currentThread().getContextClassLoader()
        }) {
      if (loader == null) {
        continue;
      }
      for (SparkLine line : ServiceLoader.load(SparkLine.class, loader)) {
        return line;
      }
    }
    throw new IllegalStateException(
        "No stateshift Spark line on the class path: stateshift-core alone cannot read state. Use"
            + " the artifact for your Spark version, io.stateshift:stateshift-spark-<spark"
            + " line>_<scala version> (for Spark 4.2: stateshift-spark-4.2_2.13), which includes"
            + " the core.");
  }
}
