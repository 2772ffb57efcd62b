package io.stateshift.spark.state;

import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.SparkSession;

/**
 * Spark's own state data sources, as the suite reads a checkpoint back with them: {@code
 * state-metadata} (operatorId, operatorName, stateStoreName, numPartitions) and {@code statestore}
 * (partition_id, key, value). A line whose Spark has none (3.5) compiles its own class of this name
 * that returns the same columns.
 */
public final class StateSources {
  private StateSources() {}

  /** Whether this Spark writes operator metadata ({@code state/<op>/_metadata}). */
  public static final boolean OPERATOR_METADATA = true;

  public static Dataset<Row> metadata(SparkSession spark, String checkpoint) {
    return spark.read().format("state-metadata").load(checkpoint);
  }

  public static Dataset<Row> state(
      SparkSession spark, String checkpoint, long batchId, long operatorId, String storeName) {
    return spark
        .read()
        .format("statestore")
        .option("batchId", batchId)
        .option("operatorId", operatorId)
        .option("storeName", storeName)
        .load(checkpoint);
  }
}
