package io.stateshift.spark;

/** Spark 4.0's {@link io.stateshift.checkpoint.spi.SparkLine}: registered in META-INF/services. */
public final class SparkLine40 extends SparkLineBase {
  @Override
  public String sparkLine() {
    return "4.0";
  }
}
