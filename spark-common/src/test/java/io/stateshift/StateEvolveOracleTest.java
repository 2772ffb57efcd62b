package io.stateshift;

import static org.apache.spark.sql.functions.col;
import static org.apache.spark.sql.functions.count;
import static org.apache.spark.sql.functions.length;
import static org.apache.spark.sql.functions.lit;
import static org.apache.spark.sql.functions.max;
import static org.apache.spark.sql.functions.sum;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.stateshift.testing.CheckpointDigest;
import io.stateshift.testing.OperatorRun;
import io.stateshift.testing.SessionConf;
import io.stateshift.testing.SparkTestSession;
import io.stateshift.testing.StateStores;
import io.stateshift.testing.StreamRun;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.function.Function;
import java.util.stream.Collectors;
import org.apache.spark.api.java.function.VoidFunction2;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.streaming.StreamingQuery;
import org.apache.spark.sql.streaming.Trigger;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * The oracle of an evolution: an aggregation that loses {@code max(ts)} and gains {@code
 * sum(length(eventId))} (filled with 0) restarts on the evolved checkpoint, and its output equals a
 * fresh run of the new query over the input after the evolution plus the carried counts.
 */
class StateEvolveOracleTest {
  static final int ROWS = 300;
  static final int DEVICES = 10;

  private final SparkSession spark = SparkTestSession.get();

  @TempDir Path tmp;

  static Dataset<Row> oldQuery(Dataset<Row> events) {
    return events.groupBy("device").agg(count(lit(1)).as("n"), max("ts").as("last"));
  }

  static Dataset<Row> newQuery(Dataset<Row> events) {
    return events
        .groupBy("device")
        .agg(count(lit(1)).as("n"), sum(length(col("eventId"))).as("total"));
  }

  @Tag("cover")
  @ParameterizedTest(name = "grouped aggregation on {0}")
  @EnumSource(
      value = StateStores.class,
      names = {"HDFS", "ROCKSDB"})
  void evolvedAggregationContinuesWithCarriedAndFilledValues(StateStores store) {
    OperatorRun input = new OperatorRun(spark, tmp.resolve("input"));
    Path checkpoint = tmp.resolve("checkpoint");
    Path sink = tmp.resolve("sink");
    input.writeEvents(0, ROWS, DEVICES);
    input.writeEvents(1, ROWS, DEVICES);
    run(oldQuery(input.stream()), checkpoint, sink, store);
    Map<String, Long> carried =
        StateShift.get(spark)
            .readState(checkpoint.toString())
            .load()
            .select(col("key.device"), col("value.count"))
            .collectAsList()
            .stream()
            .collect(Collectors.toMap(r -> r.getString(0), r -> r.getLong(1)));
    assertThat(carried).hasSize(DEVICES);

    var digest = CheckpointDigest.of(checkpoint);
    Dataset<Row> otherKey = input.stream().groupBy("device", "eventId").agg(count(lit(1)).as("n"));
    assertThatThrownBy(
            () ->
                StateShift.get(spark)
                    .evolveState(checkpoint.toString())
                    .toQuery(otherKey)
                    .execute())
        .isInstanceOf(StateShiftException.class)
        .hasMessageContaining("key change");
    assertThatThrownBy(
            () ->
                StateShift.get(spark)
                    .evolveState(checkpoint.toString())
                    .toQuery(newQuery(input.stream()))
                    .fill("sum", "'many'")
                    .execute())
        .hasMessageContaining("does not widen safely");
    assertThat(CheckpointDigest.of(checkpoint)).isEqualTo(digest);

    RepartitionResult evolved =
        StateShift.get(spark)
            .evolveState(checkpoint.toString())
            .toQuery(newQuery(input.stream()))
            .fill("sum", "0")
            .execute();
    assertThat(evolved.rowsMoved()).isEqualTo(DEVICES);
    assertThat(StateShift.get(spark).verify(checkpoint.toString()).problems()).isEmpty();
    assertThat(
            StateShift.get(spark).readState(checkpoint.toString()).load().schema().simpleString())
        .contains("value:struct<count:bigint,sum:bigint>");

    input.writeEvents(2, ROWS, DEVICES);
    input.writeEvents(3, ROWS, DEVICES);
    // the changed query writes a table of another shape: its own sink
    Path newSink = tmp.resolve("new-sink");
    run(newQuery(input.stream()), checkpoint, newSink, store);
    List<String> written = lastBatch(newSink);

    List<String> oracle = oracle(spark, tmp.resolve("oracle"), carried);
    assertThat(written).hasSize(DEVICES).containsExactlyElementsOf(oracle);
  }

  /**
   * The oracle: the new query, fresh, over files 2 and 3 (in {@code dir}), its last table plus the
   * counts carried from before the evolution.
   */
  static List<String> oracle(SparkSession spark, Path dir, Map<String, Long> carried) {
    OperatorRun after = new OperatorRun(spark, dir.resolve("input"));
    after.writeEvents(2, ROWS, DEVICES);
    after.writeEvents(3, ROWS, DEVICES);
    Path oracleSink = dir.resolve("sink");
    run(spark, newQuery(after.stream()), dir.resolve("checkpoint"), oracleSink, StateStores.HDFS);
    Function<Row, String> plusCarried =
        r ->
            org.apache.spark.sql.RowFactory.create(
                    r.getString(0), r.getLong(1) + carried.get(r.getString(0)), r.get(2))
                .toString();
    return lastBatchRows(spark, oracleSink).stream().map(plusCarried).sorted().toList();
  }

  private void run(Dataset<Row> query, Path checkpoint, Path sink, StateStores store) {
    run(spark, query, checkpoint, sink, store);
  }

  private List<String> lastBatch(Path sink) {
    return lastBatchRows(spark, sink).stream().map(Row::toString).sorted().toList();
  }

  /** Runs {@code query} in complete mode over what its input holds, 3 partitions. */
  static void run(
      SparkSession spark, Dataset<Row> query, Path checkpoint, Path sink, StateStores store) {
    Runnable restore = SessionConf.set(spark, store.withPartitions(3));
    try {
      String sinkPath = sink.toString();
      StreamingQuery running =
          query
              .writeStream()
              .outputMode("complete")
              .option("checkpointLocation", checkpoint.toString())
              .trigger(Trigger.AvailableNow())
              .foreachBatch(
                  (VoidFunction2<Dataset<Row>, Long>)
                      (batch, id) ->
                          batch.write().mode("overwrite").parquet(sinkPath + "/batch=" + id))
              .start();
      running.awaitTermination();
      StreamRun.awaitQueryEvents(spark);
    } catch (Exception e) {
      throw new IllegalStateException(e);
    } finally {
      restore.run();
    }
  }

  /** The rows of the sink's last batch (the complete table). */
  static List<Row> lastBatchRows(SparkSession spark, Path sink) {
    Dataset<Row> all = spark.read().parquet(sink.toString());
    long last = ((Number) all.agg(max("batch")).first().get(0)).longValue();
    return all.where(col("batch").equalTo(last)).drop("batch").collectAsList();
  }
}
