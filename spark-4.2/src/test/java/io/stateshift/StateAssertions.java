package io.stateshift;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.file.Path;
import java.util.List;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.SparkSession;

/** Checks on a repartitioned checkpoint made with Spark's own state data sources. */
final class StateAssertions {
  private StateAssertions() {}

  /**
   * Reads every store back with Spark's statestore source and checks each key's partition against
   * Spark's hash partitioning, computed independently in SQL: pmod(hash(key), n).
   */
  static void assertEveryKeyInItsSparkPartition(
      SparkSession spark, Path checkpoint, long batchId, int partitions) {
    assertEveryKeyInItsSparkPartition(spark, checkpoint.toString(), batchId, partitions);
  }

  static void assertEveryKeyInItsSparkPartition(
      SparkSession spark, String checkpoint, long batchId, int partitions) {
    List<Row> operators =
        spark
            .read()
            .format("state-metadata")
            .load(checkpoint)
            .select("operatorId", "stateStoreName")
            .collectAsList();
    assertThat(operators).isNotEmpty();
    for (Row op : operators) {
      Dataset<Row> state =
          spark
              .read()
              .format("statestore")
              .option("batchId", batchId)
              .option("operatorId", op.getLong(0))
              .option("storeName", op.getString(1))
              .load(checkpoint);
      long rows = state.count();
      long misplaced =
          state
              .selectExpr("partition_id", "pmod(hash(key), " + partitions + ") AS expected")
              .filter("partition_id != expected")
              .count();
      assertThat(rows).as("rows of operator %s", op.getLong(0)).isPositive();
      assertThat(misplaced).as("misplaced keys of operator %s", op.getLong(0)).isZero();
      long highest =
          state.agg(org.apache.spark.sql.functions.max("partition_id")).first().getInt(0);
      assertThat(highest).isLessThan(partitions);
    }
  }

  /** Spark's state-metadata source must report the new count for every operator. */
  static void assertMetadataReports(SparkSession spark, Path checkpoint, int partitions) {
    assertMetadataReports(spark, checkpoint.toString(), partitions);
  }

  static void assertMetadataReports(SparkSession spark, String checkpoint, int partitions) {
    List<Row> rows =
        spark
            .read()
            .format("state-metadata")
            .load(checkpoint)
            .select("numPartitions")
            .collectAsList();
    assertThat(rows).isNotEmpty().allSatisfy(r -> assertThat(r.getInt(0)).isEqualTo(partitions));
  }

  /**
   * Repartitions the checkpoint from the API and checks what the result reports: the counts, and
   * for every store as many rows written as read.
   */
  static RepartitionResult repartition(SparkSession spark, Path checkpoint, int from, int to) {
    RepartitionResult result =
        StateShift.get(spark).repartitionState(checkpoint.toString()).toPartitions(to).execute();
    assertThat(result.fromPartitions()).isEqualTo(from);
    assertThat(result.toPartitions()).isEqualTo(to);
    assertThat(result.rowsMoved()).isPositive();
    assertThat(result.stores())
        .allSatisfy(s -> assertThat(s.rowsWritten()).isEqualTo(s.rowsRead()));
    return result;
  }
}
