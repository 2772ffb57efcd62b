package io.stateshift.spark;

/** Spark 3.5's {@link io.stateshift.checkpoint.spi.SparkLine}: registered in META-INF/services. */
public final class SparkLine35 extends SparkLineBase {
  @Override
  public String sparkLine() {
    return "3.5";
  }

  /** Spark 3.5 has state checkpoint format v1 only. */
  @Override
  public boolean checkpointFormatV2() {
    return false;
  }
}
