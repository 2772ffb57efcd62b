package io.stateshift.testing;

import java.nio.file.Files;
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
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.StructType;

/**
 * A stream of device events in JSON files (one file per micro-batch), a stateful query over it, and
 * an exactly-once sink: each micro-batch is written to its own folder {@code batch=<id>} with
 * overwrite, so a replayed batch replaces its earlier attempt instead of adding to it.
 */
public final class StreamRun {
  public static final StructType EVENT_SCHEMA =
      new StructType()
          .add("eventId", DataTypes.StringType)
          .add("device", DataTypes.StringType)
          .add("ts", DataTypes.TimestampType);
  public static final long START_SECONDS = 1_700_000_000L;

  private final SparkSession spark;
  private final Path input;

  public StreamRun(SparkSession spark, Path input) {
    this.spark = spark;
    this.input = input;
  }

  /** The folder the query reads its input files from. */
  public String inputLocation() {
    return input.toString();
  }

  /**
   * Writes input file {@code index}: {@code rows} events in a 4-minute slice of event time, with
   * some duplicated event ids and out-of-order times well within the 10-minute watermark.
   */
  public void writeEvents(int index, int rows, int devices) {
    Random random = new Random(index * 7919L);
    List<Row> out = new ArrayList<>();
    long sliceStart = START_SECONDS + index * 240L;
    for (int i = 0; i < rows; i++) {
      String id = "e" + index + "-" + (i % Math.max(1, rows * 9 / 10)); // ~10% duplicates
      long ts = sliceStart + random.nextInt(240);
      out.add(
          RowFactory.create(
              id,
              "device-" + random.nextInt(devices),
              java.sql.Timestamp.from(java.time.Instant.ofEpochSecond(ts))));
    }
    writeFile(index, out);
  }

  /**
   * Two final files far ahead in event time: the second batch sees a watermark past every earlier
   * window, so append-mode output is complete and deterministic for all earlier events.
   */
  public void writeFlush(int firstIndex) {
    for (int k = 0; k < 2; k++) {
      long ts = START_SECONDS + 1_000_000L + k;
      writeFile(
          firstIndex + k,
          List.of(
              RowFactory.create(
                  "flush-" + k,
                  "flush",
                  java.sql.Timestamp.from(java.time.Instant.ofEpochSecond(ts)))));
    }
  }

  /** Writes input file {@code index} with the given events (rows of {@link #EVENT_SCHEMA}). */
  public void writeRows(int index, List<Row> rows) {
    writeFile(index, rows);
  }

  private void writeFile(int index, List<Row> rows) {
    Path tmp = input.resolveSibling(input.getFileName() + "-tmp-" + index);
    spark
        .createDataFrame(rows, EVENT_SCHEMA)
        .coalesce(1)
        .write()
        .mode("overwrite")
        .json(tmp.toString());
    try {
      Files.createDirectories(input);
      try (var files = Files.list(tmp)) {
        Path part =
            files
                .filter(p -> p.getFileName().toString().endsWith(".json"))
                .findFirst()
                .orElseThrow();
        Files.move(part, input.resolve(String.format("events-%04d.json", index)));
      }
      try (var walk = Files.walk(tmp)) {
        walk.sorted(java.util.Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
      }
    } catch (java.io.IOException e) {
      throw new java.io.UncheckedIOException(e);
    }
  }

  /** Runs the query over all files present now (one file per batch) and returns its progress. */
  public List<StreamingQueryProgress> runAvailable(
      StatefulQueries query, Path checkpoint, Path sink, Map<String, String> sessionConf) {
    return runAvailable(query, checkpoint.toString(), sink, sessionConf);
  }

  /** The same, with the checkpoint at any Hadoop location (hdfs://...). */
  public List<StreamingQueryProgress> runAvailable(
      StatefulQueries query, String checkpoint, Path sink, Map<String, String> sessionConf) {
    Runnable restoreSettings = SessionConf.set(spark, sessionConf);
    try {
      Dataset<Row> events =
          spark
              .readStream()
              .schema(EVENT_SCHEMA)
              .option("maxFilesPerTrigger", 1)
              .json(input.toString());
      String sinkPath = sink.toString();
      StreamingQuery running =
          query
              .apply(events)
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
      awaitQueryEvents(spark);
      return List.of(running.recentProgress());
    } catch (StreamingQueryException | java.util.concurrent.TimeoutException e) {
      throw new IllegalStateException(e);
    } finally {
      restoreSettings.run();
    }
  }

  /**
   * Waits until Spark has delivered the queued listener events. A query started with
   * StateShiftExtensions deletes its lease file when its termination event is delivered, which
   * happens asynchronously: after this, the checkpoint of a stopped query is settled.
   */
  public static void awaitQueryEvents(SparkSession spark) {
    try {
      spark.sparkContext().listenerBus().waitUntilEmpty();
    } catch (java.util.concurrent.TimeoutException e) {
      throw new IllegalStateException(e);
    }
  }

  /** The state store instances of every stateful operator in every progress, in order. */
  public static List<Long> stateInstances(List<StreamingQueryProgress> progress) {
    List<Long> out = new ArrayList<>();
    for (StreamingQueryProgress p : progress) {
      for (org.apache.spark.sql.streaming.StateOperatorProgress op : p.stateOperators()) {
        out.add(op.numStateStoreInstances());
      }
    }
    return out;
  }

  /**
   * The sink's rows, sorted, as strings: the form oracle comparisons use. In complete mode that is
   * the last batch's table; otherwise every batch's rows together.
   */
  public List<String> sinkRows(Path sink, StatefulQueries query) {
    Dataset<Row> all = spark.read().parquet(sink.toString());
    if (query.outputMode().equals("complete")) {
      long last =
          ((Number) all.agg(org.apache.spark.sql.functions.max("batch")).first().get(0))
              .longValue();
      all = all.filter(org.apache.spark.sql.functions.col("batch").equalTo(last));
    }
    return all.drop("batch").collectAsList().stream().map(Row::toString).sorted().toList();
  }
}
