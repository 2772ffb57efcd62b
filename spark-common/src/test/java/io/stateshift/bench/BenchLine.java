package io.stateshift.bench;

import io.stateshift.testing.LineApis;

/**
 * The Spark line the benchmark runs on: bench/run builds the line's module (spark-&lt;line&gt;),
 * runs the benchmark from its test classes and names the line with {@code -Dstateshift.line}. The
 * fresh processes ({@code ./stateshift}) get the same line through STATESHIFT_SPARK_LINE.
 */
final class BenchLine {
  private BenchLine() {}

  /** The line, as ./stateshift names it (4.2, 4.1, 4.0, 3.5). */
  static String name() {
    return System.getProperty("stateshift.line", "4.2");
  }

  /** The line's module folder. */
  static String module() {
    return "spark-" + name();
  }

  /** Whether the line's Spark has its own offline repartition runner (4.2 and later). */
  static boolean hasBuiltInRunner() {
    return LineApis.BUILT_IN_RUNNER;
  }

  /** Points a fresh ./stateshift process at this line; returns {@code pb}. */
  static ProcessBuilder into(ProcessBuilder pb) {
    pb.environment().put("STATESHIFT_SPARK_LINE", name());
    return pb;
  }
}
