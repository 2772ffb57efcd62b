package io.stateshift.testing;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Random;
import org.apache.spark.api.java.function.VoidFunction2;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.RowFactory;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.streaming.StreamingQuery;
import org.apache.spark.sql.streaming.StreamingQueryException;
import org.apache.spark.sql.streaming.StreamingQueryProgress;
import org.apache.spark.sql.streaming.Trigger;

/**
 * Runs an {@link OperatorQueries} query over event files (one file per micro-batch, see {@link
 * StreamRun}) into the same idempotent per-batch parquet sink.
 */
public final class OperatorRun {
  private final SparkSession spark;
  private final Path input;
  private final StreamRun files;

  public OperatorRun(SparkSession spark, Path input) {
    this.spark = spark;
    this.input = input;
    this.files = new StreamRun(spark, input);
  }

  /** Random devices among {@code devices} (see {@link StreamRun#writeEvents}). */
  public void writeEvents(int index, int rows, int devices) {
    files.writeEvents(index, rows, devices);
  }

  public void writeFlush(int firstIndex) {
    files.writeFlush(firstIndex);
  }

  /**
   * Devices that come and go: file {@code index} holds devices {@code r-<4*index>} to {@code
   * r-<4*index + 7>}, so each device is seen in two consecutive files and then never again (its
   * sessions close, its timeouts fire). Event ids are unique.
   */
  public void writeRotatingEvents(int index, int rows) {
    Random random = new Random(index * 104729L);
    List<Row> out = new ArrayList<>();
    long sliceStart = StreamRun.START_SECONDS + index * 240L;
    for (int i = 0; i < rows; i++) {
      long ts = sliceStart + random.nextInt(240);
      out.add(
          RowFactory.create(
              "r" + index + "-" + i,
              "r-" + (4 * index + random.nextInt(8)),
              java.sql.Timestamp.from(java.time.Instant.ofEpochSecond(ts))));
    }
    files.writeRows(index, out);
  }

  public void writeRows(int index, List<Row> rows) {
    files.writeRows(index, rows);
  }

  /** The events as a fresh streaming read, one file per batch. */
  public Dataset<Row> stream() {
    return spark
        .readStream()
        .schema(StreamRun.EVENT_SCHEMA)
        .option("maxFilesPerTrigger", 1)
        .json(input.toString());
  }

  /** The same events as a batch read, for computations that check the oracle independently. */
  public Dataset<Row> batch() {
    return spark.read().schema(StreamRun.EVENT_SCHEMA).json(input.toString());
  }

  /** Runs the query over every file present now and returns its progress. */
  public List<StreamingQueryProgress> runAvailable(
      OperatorQueries query, Path checkpoint, Path sink, Map<String, String> sessionConf) {
    Runnable restoreSettings = SessionConf.set(spark, sessionConf);
    try {
      String sinkPath = sink.toString();
      StreamingQuery running =
          query
              .apply(this::stream)
              .writeStream()
              .outputMode(query.outputMode())
              .option("checkpointLocation", checkpoint.toString())
              .trigger(Trigger.AvailableNow())
              .foreachBatch(
                  (VoidFunction2<Dataset<Row>, Long>)
                      (batch, batchId) ->
                          batch.write().mode("overwrite").parquet(sinkPath + "/batch=" + batchId))
              .start();
      running.awaitTermination();
      return List.of(running.recentProgress());
    } catch (StreamingQueryException | java.util.concurrent.TimeoutException e) {
      throw new IllegalStateException(e);
    } finally {
      restoreSettings.run();
    }
  }

  /**
   * The sink's rows, sorted, as strings; in complete mode the last batch's table, otherwise every
   * batch's rows together.
   */
  public List<String> sinkRows(Path sink, OperatorQueries query) {
    if (!java.nio.file.Files.exists(sink)) {
      return List.of();
    }
    Dataset<Row> all = spark.read().parquet(sink.toString());
    if (query.outputMode().equals("complete")) {
      long last =
          ((Number) all.agg(org.apache.spark.sql.functions.max("batch")).first().get(0))
              .longValue();
      all = all.filter(org.apache.spark.sql.functions.col("batch").equalTo(last));
    }
    return all.drop("batch").collectAsList().stream().map(Row::toString).sorted().toList();
  }

  /** The rows of every batch of a per-batch sink after {@code batchId}, sorted, as strings. */
  public static List<String> rowsOfBatchesAfter(SparkSession spark, Path sink, long batchId) {
    return spark
        .read()
        .parquet(sink.toString())
        .where(org.apache.spark.sql.functions.col("batch").gt(batchId))
        .drop("batch")
        .collectAsList()
        .stream()
        .map(Row::toString)
        .sorted()
        .toList();
  }
}
