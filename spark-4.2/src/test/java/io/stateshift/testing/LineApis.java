package io.stateshift.testing;

import org.apache.spark.sql.Row;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.streaming.DataStreamWriter;

/** What the suite calls that only Spark 4.2 has: its built-in runner and named sinks. */
public final class LineApis {
  private LineApis() {}

  /** Whether this line has Spark's own offline repartition runner (tag builtin-runner). */
  public static final boolean BUILT_IN_RUNNER = true;

  /** Spark's own offline repartition of a stopped query's checkpoint. */
  public static void builtInRepartition(SparkSession spark, String checkpoint, int partitions) {
    ((org.apache.spark.sql.classic.SparkSession) spark)
        .streamingCheckpointManager()
        .repartition(checkpoint, partitions, true);
  }

  /** The writer with a sink name (Spark's sink evolution API, not yet public). */
  public static DataStreamWriter<Row> named(DataStreamWriter<Row> writer, String name) {
    return ((org.apache.spark.sql.classic.DataStreamWriter<Row>) writer).name(name);
  }
}
