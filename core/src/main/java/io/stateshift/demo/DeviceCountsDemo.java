package io.stateshift.demo;

import static org.apache.spark.sql.functions.col;
import static org.apache.spark.sql.functions.window;

import io.stateshift.StateShiftExtensions;
import java.io.IOException;
import java.io.PrintStream;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Timestamp;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.stream.Stream;
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
 * The scenario users know: device events in a Delta table, counted per device over 5-minute
 * event-time windows with a 10-minute watermark, on RocksDB with 4 state partitions, into a Delta
 * table. Stop, more events arrive, set {@code spark.sql.streaming.stateStore.partitions} to 8,
 * restart the same query on the same checkpoint (the session has {@link
 * io.stateshift.StateShiftExtensions}), and check the output against a batch computation over all
 * events.
 */
public final class DeviceCountsDemo {
  public static final int DEFAULT_EVENTS = 200_000;

  /**
   * Fewer events span too little event time (2 hours per 100k) for any 5-minute window to close
   * behind the 10-minute watermark, and an append-mode sink would stay empty.
   */
  public static final int MIN_EVENTS = 20_000;

  static final int DEVICES = 500;
  static final int FROM_PARTITIONS = 4;
  static final int TO_PARTITIONS = 8;
  static final StructType EVENTS =
      new StructType()
          .add("device_id", DataTypes.StringType)
          .add("event_time", DataTypes.TimestampType)
          .add("reading", DataTypes.DoubleType);

  private DeviceCountsDemo() {}

  /**
   * What a run left behind.
   *
   * @param folder the run's working folder (events, checkpoint, results)
   * @param checkpoint the repartitioned query's checkpoint, kept for inspect, history and doctor
   * @param passed whether the output matched the batch computation
   * @param repartitionMs the on-demand repartition's time, or -1 when none was reported
   */
  public record Result(Path folder, Path checkpoint, boolean passed, long repartitionMs) {}

  /** Why a count is too few, for the command line's message. */
  public static String tooFewEvents(int events) {
    return String.format(
        "%,d is too few: the demo needs at least %,d for 5-minute windows to "
            + "close behind its 10-minute watermark",
        events, MIN_EVENTS);
  }

  /**
   * The run's working folder: {@code dir} (created if absent; refused unless empty, as the demo
   * deletes nothing), or, when null, a new temporary folder, so runs side by side never share one.
   */
  public static Path workingFolder(String dir) {
    try {
      if (dir == null) {
        return Files.createTempDirectory("stateshift-demo-");
      }
      Path path = Path.of(dir).toAbsolutePath();
      if (Files.isDirectory(path)) {
        try (Stream<Path> entries = Files.list(path)) {
          if (entries.findAny().isPresent()) {
            throw new IllegalArgumentException(
                "--dir "
                    + dir
                    + " is not empty; the demo deletes "
                    + "nothing, so pass a new or empty folder");
          }
        }
      }
      return Files.createDirectories(path);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  /** Runs the demo in a new temporary folder; returns 0 when the verification passed, 1 if not. */
  public static int run(SparkSession spark, int events, PrintStream out) {
    if (events < MIN_EVENTS) {
      throw new IllegalArgumentException("--events " + tooFewEvents(events));
    }
    return run(spark, events, workingFolder(null), out).passed() ? 0 : 1;
  }

  /** Runs the demo in {@code base}, which it leaves (checkpoint included) for a look. */
  public static Result run(SparkSession spark, int events, Path base, PrintStream out) {
    if (events < MIN_EVENTS) {
      throw new IllegalArgumentException("--events " + tooFewEvents(events));
    }
    String source = base.resolve("device-events").toString();
    String checkpoint = base.resolve("checkpoints/device-counts").toString();
    String target = base.resolve("device-count-results").toString();
    spark
        .conf()
        .set(
            "spark.sql.streaming.stateStore.providerClass",
            "org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider");
    spark
        .conf()
        .set("spark.sql.streaming.stateStore.rocksdb.changelogCheckpointing.enabled", "true");

    out.printf("stateshift demo: events per device over 5-minute windows (watermark 10 minutes)%n");
    out.printf("  working folder: %s%n", base);
    int firstHalf = events / 2;
    appendEvents(spark, source, 0, firstHalf, 4);
    out.printf("  %,d device events written to the Delta table device-events%n", firstHalf);

    spark.conf().set(StateShiftExtensions.STATE_PARTITIONS, Integer.toString(FROM_PARTITIONS));
    List<StreamingQueryProgress> first = runQuery(spark, source, checkpoint, target);
    out.printf(
        "  run 1: %d micro-batches on %d state partitions, %,d state rows%n",
        first.size(), stateInstances(first), stateRows(first));

    appendEvents(spark, source, firstHalf, events - firstHalf, 4);
    out.printf("  query stopped; %,d more events arrived%n", events - firstHalf);

    spark.conf().set(StateShiftExtensions.STATE_PARTITIONS, Integer.toString(TO_PARTITIONS));
    out.printf(
        "  %s set to %d; restarting the same query on the same checkpoint%n",
        StateShiftExtensions.STATE_PARTITIONS, TO_PARTITIONS);
    List<StreamingQueryProgress> second = runQuery(spark, source, checkpoint, target);
    waitForListeners(spark);
    Long repartitionMs =
        second.isEmpty() ? null : second.get(0).durationMs().get(StateShiftExtensions.PROGRESS_KEY);
    if (repartitionMs == null) {
      out.printf(
          "  VERIFICATION FAILED: the first progress reports no %s%n",
          StateShiftExtensions.PROGRESS_KEY);
      return new Result(base, Path.of(checkpoint), false, -1);
    }
    out.printf("  State repartition completed in %d ms%n", repartitionMs);
    StateShiftExtensions.lastRepartition(second.get(0).id())
        .ifPresent(
            result ->
                out.printf(
                    "  repartition: %d -> %d state partitions, %,d rows (%,d bytes) moved%n",
                    result.fromPartitions(),
                    result.toPartitions(),
                    result.rowsMoved(),
                    result.bytesMoved()));
    out.printf(
        "  run 2: %d micro-batches on %d state partitions, same checkpoint%n",
        second.size(), stateInstances(second));

    String watermark = second.get(second.size() - 1).eventTime().get("watermark");
    Timestamp closedBefore = Timestamp.from(java.time.Instant.parse(watermark));
    Dataset<Row> expected =
        spark
            .read()
            .format("delta")
            .load(source)
            .groupBy(window(col("event_time"), "5 minutes"), col("device_id"))
            .count()
            .filter(col("window.end").leq(closedBefore))
            .select(col("window.start"), col("window.end"), col("device_id"), col("count"));
    Dataset<Row> actual =
        spark
            .read()
            .format("delta")
            .load(target)
            .select(col("window.start"), col("window.end"), col("device_id"), col("count"));
    long expectedRows = expected.count();
    long actualRows = actual.count();
    long missing = expected.exceptAll(actual).count();
    long unexpected = actual.exceptAll(expected).count();
    boolean passed =
        expectedRows > 0
            && missing == 0
            && unexpected == 0
            && stateInstances(second) == TO_PARTITIONS;
    out.printf(
        "  verification: %,d closed windows (watermark %s): %,d in the sink, %d missing, "
            + "%d unexpected or duplicated%n",
        expectedRows, watermark, actualRows, missing, unexpected);
    out.printf(
        "  %s%n",
        passed
            ? "verification passed: the repartitioned query wrote exactly the batch result"
            : "VERIFICATION FAILED");
    out.printf("  checkpoint left at %s%n", checkpoint);
    out.printf("  see it with: stateshift history --checkpoint %s%n", checkpoint);
    return new Result(base, Path.of(checkpoint), passed, repartitionMs);
  }

  private static List<StreamingQueryProgress> runQuery(
      SparkSession spark, String source, String checkpoint, String target) {
    Dataset<Row> counts =
        spark
            .readStream()
            .format("delta")
            .option("maxFilesPerTrigger", 1)
            .load(source)
            .withWatermark("event_time", "10 minutes")
            .groupBy(window(col("event_time"), "5 minutes"), col("device_id"))
            .count();
    try {
      StreamingQuery query =
          counts
              .writeStream()
              .format("delta")
              .outputMode("append")
              .option("checkpointLocation", checkpoint)
              .trigger(Trigger.AvailableNow())
              .start(target);
      query.awaitTermination();
      return List.of(query.recentProgress());
    } catch (StreamingQueryException e) {
      throw new IllegalStateException("The demo query failed: " + e.getMessage(), e);
    }
  }

  /** Appends events in {@code commits} Delta commits, in event-time order, 2 hours per 100k. */
  private static void appendEvents(
      SparkSession spark, String table, int offset, int count, int commits) {
    long start = 1_767_225_600L; // 2026-01-01T00:00:00Z
    long spanSeconds = 72L; // average seconds of event time between consecutive events' slots
    Random random = new Random(offset);
    int perCommit = (count + commits - 1) / commits;
    for (int c = 0; c < commits; c++) {
      List<Row> rows = new ArrayList<>();
      for (int i = c * perCommit; i < Math.min(count, (c + 1) * perCommit); i++) {
        long n = offset + i;
        long seconds = start + n * spanSeconds / 1000 + random.nextInt(120);
        rows.add(
            RowFactory.create(
                "device-" + random.nextInt(DEVICES),
                Timestamp.from(java.time.Instant.ofEpochSecond(seconds)),
                random.nextDouble()));
      }
      spark
          .createDataFrame(rows, EVENTS)
          .repartition(2)
          .write()
          .format("delta")
          .mode("append")
          .save(table);
    }
  }

  /** Progress events reach listeners asynchronously; the repartition time is added by one. */
  private static void waitForListeners(SparkSession spark) {
    try {
      spark.sparkContext().listenerBus().waitUntilEmpty();
    } catch (java.util.concurrent.TimeoutException e) {
      throw new IllegalStateException(e);
    }
  }

  private static int stateInstances(List<StreamingQueryProgress> progress) {
    return progress.isEmpty() || progress.get(0).stateOperators().length == 0
        ? 0
        : (int) progress.get(progress.size() - 1).stateOperators()[0].numStateStoreInstances();
  }

  private static long stateRows(List<StreamingQueryProgress> progress) {
    return progress.isEmpty()
        ? 0
        : progress.get(progress.size() - 1).stateOperators()[0].numRowsTotal();
  }
}
