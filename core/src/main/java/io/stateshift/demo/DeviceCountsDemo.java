package io.stateshift.demo;

import static org.apache.spark.sql.functions.col;
import static org.apache.spark.sql.functions.window;

import io.stateshift.StateShiftExtensions;
import io.stateshift.monitor.MonitorSettings;
import io.stateshift.monitor.StreamMonitor;
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
import org.apache.spark.sql.streaming.StreamingQueryListener;
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
  public static final int DEFAULT_EVENTS = 60_000;

  /** {@code --quick}: the least events that close a window, on 2 then 4 state partitions. */
  public static final int QUICK_EVENTS = 20_000;

  /**
   * Fewer events span too little event time (2 hours per 100k) for any 5-minute window to close
   * behind the 10-minute watermark, and an append-mode sink would stay empty.
   */
  public static final int MIN_EVENTS = 20_000;

  static final int DEVICES = 500;
  static final int FROM_PARTITIONS = 4;
  static final int TO_PARTITIONS = 8;

  /** How big a run is: events, state partitions before and after, Delta commits per half. */
  public record Size(int events, int fromPartitions, int toPartitions, int commits) {
    public static Size of(Integer events, boolean quick) {
      return quick
          ? new Size(events == null ? QUICK_EVENTS : events, 2, 4, 1)
          : new Size(events == null ? DEFAULT_EVENTS : events, FROM_PARTITIONS, TO_PARTITIONS, 3);
    }
  }

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
   * @param history the folder of StreamMonitor's progress history of both runs
   * @param wallMs the run's wall time
   * @param longestSilenceMs the longest time between two lines of its commentary
   */
  public record Result(
      Path folder,
      Path checkpoint,
      boolean passed,
      long repartitionMs,
      Path history,
      long wallMs,
      long longestSilenceMs) {}

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
    return run(spark, new Size(events, FROM_PARTITIONS, TO_PARTITIONS, 4), base, out);
  }

  /** Runs the demo of {@code size} in {@code base}, commenting each phase on {@code out}. */
  public static Result run(SparkSession spark, Size size, Path base, PrintStream out) {
    int events = size.events();
    if (events < MIN_EVENTS) {
      throw new IllegalArgumentException("--events " + tooFewEvents(events));
    }
    String source = base.resolve("device-events").toString();
    String checkpoint = base.resolve("checkpoints/device-counts").toString();
    String target = base.resolve("device-count-results").toString();
    Path historyDir = base.resolve("monitor-history");
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
    StreamMonitor monitor =
        new StreamMonitor(
            MonitorSettings.defaultSettings()
                .with("history", historyDir.toString())
                .with("idleTimeoutMs", "0"));
    try (Commentary say = new Commentary(out)) {
      BatchLines batches = new BatchLines(say);
      spark.streams().addListener(monitor);
      spark.streams().addListener(batches);
      try {
        return run(spark, size, base, say, source, checkpoint, target, historyDir);
      } finally {
        waitForListeners(spark);
        spark.streams().removeListener(batches);
        spark.streams().removeListener(monitor);
        monitor.close();
      }
    }
  }

  private static Result run(
      SparkSession spark,
      Size size,
      Path base,
      Commentary say,
      String source,
      String checkpoint,
      String target,
      Path historyDir) {
    int events = size.events();
    int firstHalf = events / 2;
    say.phase("writing %,d device events to the Delta table device-events", firstHalf);
    appendEvents(spark, source, 0, firstHalf, size.commits());

    spark
        .conf()
        .set(StateShiftExtensions.STATE_PARTITIONS, Integer.toString(size.fromPartitions()));
    say.phase("run 1: the query on %d state partitions (RocksDB)", size.fromPartitions());
    // Run 1 stops with windows the watermark already closed still in state: the batch without
    // data that would emit them is run 2's first work anyway, so run 1 leaves it out.
    String noData = "spark.sql.streaming.noDataMicroBatches.enabled";
    spark.conf().set(noData, "false");
    List<StreamingQueryProgress> first;
    try {
      first = runQuery(spark, source, checkpoint, target);
    } finally {
      spark.conf().unset(noData);
    }
    waitForListeners(spark); // its batches' lines first
    say.line(
        "run 1: %d micro-batch%s on %d state partitions, %,d state rows; query stopped",
        first.size(), first.size() == 1 ? "" : "es", stateInstances(first), stateRows(first));

    say.phase("writing %,d more device events while the query is stopped", events - firstHalf);
    appendEvents(spark, source, firstHalf, events - firstHalf, size.commits());

    spark.conf().set(StateShiftExtensions.STATE_PARTITIONS, Integer.toString(size.toPartitions()));
    say.phase(
        "run 2: %s=%d; restarting the same query on the same checkpoint",
        StateShiftExtensions.STATE_PARTITIONS, size.toPartitions());
    List<StreamingQueryProgress> second = runQuery(spark, source, checkpoint, target);
    waitForListeners(spark);
    Long repartitionMs =
        second.isEmpty() ? null : second.get(0).durationMs().get(StateShiftExtensions.PROGRESS_KEY);
    if (repartitionMs == null) {
      say.line(
          "VERIFICATION FAILED: the first progress reports no %s",
          StateShiftExtensions.PROGRESS_KEY);
      return say.result(base, Path.of(checkpoint), false, -1, historyDir);
    }
    say.line("state repartition completed in %d ms", repartitionMs);
    StateShiftExtensions.lastRepartition(second.get(0).id())
        .ifPresent(
            result ->
                say.line(
                    "repartition: %d -> %d state partitions, %,d rows (%,d bytes) moved",
                    result.fromPartitions(),
                    result.toPartitions(),
                    result.rowsMoved(),
                    result.bytesMoved()));
    say.line(
        "run 2: %d micro-batch%s on %d state partitions, same checkpoint",
        second.size(), second.size() == 1 ? "" : "es", stateInstances(second));

    say.phase("verifying the output against a batch computation over all events");
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
    // a few thousand windows: compared on the driver, two jobs instead of four
    java.util.Map<String, Integer> left = new java.util.HashMap<>();
    expected.collectAsList().forEach(r -> left.merge(r.toString(), 1, Integer::sum));
    List<Row> written = actual.collectAsList();
    long expectedRows = left.values().stream().mapToLong(Integer::longValue).sum();
    long actualRows = written.size();
    long unexpected = 0;
    for (Row r : written) {
      Integer n = left.get(r.toString());
      if (n == null || n == 0) {
        unexpected++;
      } else {
        left.put(r.toString(), n - 1);
      }
    }
    long missing = left.values().stream().mapToLong(Integer::longValue).sum();
    boolean passed =
        expectedRows > 0
            && missing == 0
            && unexpected == 0
            && stateInstances(second) == size.toPartitions();
    say.line(
        "verification: %,d closed windows (watermark %s): %,d in the sink, %d missing, "
            + "%d unexpected or duplicated",
        expectedRows, watermark, actualRows, missing, unexpected);
    say.line(
        "%s",
        passed
            ? "verification passed: the repartitioned query wrote exactly the batch result"
            : "VERIFICATION FAILED");
    Result result = say.result(base, Path.of(checkpoint), passed, repartitionMs, historyDir);
    say.out.printf(
        "%ndemo %s in %.1f s (longest silence %.1f s)%n",
        passed ? "passed" : "FAILED", result.wallMs() / 1000.0, result.longestSilenceMs() / 1000.0);
    say.out.printf("  checkpoint:       %s%n", checkpoint);
    say.out.printf("  monitor history:  %s%n", historyDir);
    say.out.printf("next, try:%n");
    say.out.printf("  ./stateshift inspect --checkpoint %s%n", checkpoint);
    say.out.printf("  ./stateshift history --checkpoint %s%n", checkpoint);
    say.out.printf("  ./stateshift doctor --checkpoint %s --history %s%n", checkpoint, historyDir);
    say.out.printf(
        "  ./stateshift report --checkpoint %s --history %s --out %s%n",
        checkpoint, historyDir, base.resolve("report.html"));
    say.out.printf(
        "  ./stateshift repartition --checkpoint %s --partitions %d --dry-run%n",
        checkpoint, size.fromPartitions());
    return result;
  }

  /**
   * The demo's running commentary: each line with the time since the start, each phase named, and
   * while a phase runs without news, a line every {@link #TICK_MS} so the demo is never silent for
   * long. Measures the longest silence between lines.
   */
  static final class Commentary implements AutoCloseable {
    static final long TICK_MS = 5_000;
    final PrintStream out;
    private final long start = System.nanoTime();
    private long last = start;
    private long phaseStart = start;
    private long longestSilence;
    private String phase = "starting";
    private final Thread ticker;
    private volatile boolean closed;

    Commentary(PrintStream out) {
      this.out = out;
      ticker = new Thread(this::tick, "stateshift-demo-ticker");
      ticker.setDaemon(true);
      ticker.start();
    }

    synchronized void phase(String format, Object... args) {
      phase = String.format(format, args);
      phaseStart = System.nanoTime();
      print("> " + phase);
    }

    synchronized void line(String format, Object... args) {
      print("  " + String.format(format, args));
    }

    private void print(String text) {
      long now = System.nanoTime();
      longestSilence = Math.max(longestSilence, now - last);
      last = now;
      out.printf("[%6.1f s] %s%n", (now - start) / 1e9, text);
      out.flush();
    }

    private void tick() {
      while (!closed) {
        try {
          Thread.sleep(250);
        } catch (InterruptedException e) {
          return;
        }
        synchronized (this) {
          if (!closed && System.nanoTime() - last >= TICK_MS * 1_000_000) {
            print(
                String.format(
                    "  ... %s (%d s so far)",
                    phase, (System.nanoTime() - phaseStart) / 1_000_000_000));
          }
        }
      }
    }

    synchronized Result result(
        Path base, Path checkpoint, boolean passed, long repartitionMs, Path history) {
      long now = System.nanoTime();
      long silence = Math.max(longestSilence, now - last);
      return new Result(
          base,
          checkpoint,
          passed,
          repartitionMs,
          history,
          (now - start) / 1_000_000,
          silence / 1_000_000);
    }

    @Override
    public void close() {
      closed = true;
      ticker.interrupt();
    }
  }

  /** One line of commentary per micro-batch. */
  private static final class BatchLines extends StreamingQueryListener {
    private final Commentary say;

    BatchLines(Commentary say) {
      this.say = say;
    }

    @Override
    public void onQueryStarted(QueryStartedEvent event) {}

    @Override
    public void onQueryProgress(QueryProgressEvent event) {
      StreamingQueryProgress p = event.progress();
      if (p.numInputRows() == 0 && p.stateOperators().length == 0) {
        return;
      }
      say.line(
          "batch %d: %,d events in %,d ms, %,d state rows in %d partitions",
          p.batchId(),
          p.numInputRows(),
          p.batchDuration(),
          p.stateOperators().length == 0 ? 0 : p.stateOperators()[0].numRowsTotal(),
          p.stateOperators().length == 0 ? 0 : p.stateOperators()[0].numStateStoreInstances());
    }

    @Override
    public void onQueryTerminated(QueryTerminatedEvent event) {}
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

  /**
   * Appends events in {@code commits} Delta commits of one file each (so one micro-batch each), in
   * event-time order, 2 hours per 100k.
   */
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
          .repartition(1)
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
