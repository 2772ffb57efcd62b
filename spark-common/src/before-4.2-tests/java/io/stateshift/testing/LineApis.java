package io.stateshift.testing;

import org.apache.spark.sql.Row;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.streaming.DataStreamWriter;

/**
 * What the suite calls that only Spark 4.2 has, on lines before it: the tests that need them are
 * tagged (builtin-runner, kafka) and left out on these lines.
 */
public final class LineApis {
  private LineApis() {}

  public static final boolean BUILT_IN_RUNNER = false;

  public static void builtInRepartition(SparkSession spark, String checkpoint, int partitions) {
    throw new UnsupportedOperationException("Spark's built-in repartition runner came with 4.2");
  }

  public static DataStreamWriter<Row> named(DataStreamWriter<Row> writer, String name) {
    throw new UnsupportedOperationException("sink names came with Spark 4.2");
  }
}
