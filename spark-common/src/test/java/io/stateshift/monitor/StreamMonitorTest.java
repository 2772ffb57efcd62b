package io.stateshift.monitor;

import static org.assertj.core.api.Assertions.assertThat;

import com.codahale.metrics.Gauge;
import com.codahale.metrics.Metric;
import io.stateshift.monitor.internal.MonitorMetrics;
import io.stateshift.spark.MetricsSource;
import io.stateshift.testing.SparkTestSession;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.BooleanSupplier;
import org.apache.spark.SparkConf;
import org.apache.spark.api.java.function.VoidFunction2;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.streaming.StreamingQuery;
import org.apache.spark.sql.streaming.StreamingQueryListener;
import org.apache.spark.sql.streaming.Trigger;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The monitor on real running queries: each alert raised by a query that has the problem, the
 * metrics visible through Spark's metrics system, the history written, the conf path, and the time
 * the monitor spends per progress event.
 */
class StreamMonitorTest {
  private static final List<StreamMonitor.Overhead> OVERHEADS = new CopyOnWriteArrayList<>();
  private final SparkSession spark = SparkTestSession.get();
  private StreamMonitor monitor;
  private StreamingQuery query;

  @TempDir Path tmp;

  /** A callback Spark-style conf can name: records every alert it gets. */
  public static final class RecordingCallback implements AlertCallback {
    static final List<Alert> RECEIVED = new CopyOnWriteArrayList<>();

    @Override
    public void onAlert(Alert alert) {
      RECEIVED.add(alert);
    }
  }

  private StreamMonitor attach(MonitorSettings settings) {
    monitor = new StreamMonitor(settings);
    spark.streams().addListener(monitor);
    return monitor;
  }

  @AfterEach
  void detach() throws Exception {
    if (query != null && query.isActive()) {
      query.stop();
    }
    // Events of the stopped query still queued would reach the monitor (which writes its history
    // into this test's temporary folder) while JUnit deletes that folder.
    spark.sparkContext().listenerBus().waitUntilEmpty();
    if (monitor != null) {
      spark.streams().removeListener(monitor);
      monitor.close();
      OVERHEADS.add(monitor.overhead());
    }
  }

  @AfterAll
  static void reportOverhead() {
    long events = OVERHEADS.stream().mapToLong(StreamMonitor.Overhead::events).sum();
    double mean =
        OVERHEADS.stream().mapToDouble(o -> o.meanMicros() * o.events()).sum()
            / Math.max(1, events);
    double max = OVERHEADS.stream().mapToDouble(StreamMonitor.Overhead::maxMicros).max().orElse(0);
    System.out.printf(
        "stateshift monitor overhead in the live queries: %d progress events, "
            + "mean %.0f us, max %.0f us per event (includes first-event class loading)%n",
        events, mean, max);
    assertThat(events).isPositive();
  }

  /**
   * The steady-state cost per batch: the real progress events of a file-source query replayed
   * through fresh monitors, first with metrics, alert checks and history (one JSON line per event),
   * then also with the file-backlog measurement (one listing of the input folder per event).
   * Returns a line for the report.
   */
  private static void measureSteadyState(
      List<StreamingQueryListener.QueryProgressEvent> real, Path tmp, int filesInFolder) {
    for (boolean fileBacklog : new boolean[] {false, true}) {
      StreamMonitor replay =
          new StreamMonitor(
              settings(
                  "history",
                  tmp.resolve("replay-" + fileBacklog).toString(),
                  "fileBacklog",
                  Boolean.toString(fileBacklog)));
      for (int round = 0; round < 60; round++) {
        for (StreamingQueryListener.QueryProgressEvent event : real) {
          replay.onQueryProgress(event);
        }
      }
      StreamMonitor.Overhead o = replay.overhead();
      replay.close();
      System.out.printf(
          "stateshift monitor overhead, steady state, %s: %d replayed events, "
              + "mean %.0f us, p50 %.0f us, p95 %.0f us, max %.0f us per batch; load average %.1f "
              + "on %d cores%n",
          fileBacklog
              ? "metrics + alerts + history + file backlog (listing " + filesInFolder + " files)"
              : "metrics + alerts + history",
          o.events(),
          o.meanMicros(),
          o.p50Micros(),
          o.p95Micros(),
          o.maxMicros(),
          java.lang.management.ManagementFactory.getOperatingSystemMXBean().getSystemLoadAverage(),
          Runtime.getRuntime().availableProcessors());
      if (!fileBacklog) {
        assertThat(o.p50Micros())
            .as("median time per progress event, microseconds")
            .isLessThan(50_000);
      }
    }
  }

  private static MonitorSettings settings(String... pairs) {
    MonitorSettings s = MonitorSettings.defaultSettings().with("idleTimeoutMs", "0");
    for (int i = 0; i < pairs.length; i += 2) {
      s = s.with(pairs[i], pairs[i + 1]);
    }
    return s;
  }

  private Alert awaitAlert(AlertType type, long timeoutMs) throws InterruptedException {
    long deadline = System.currentTimeMillis() + timeoutMs;
    while (System.currentTimeMillis() < deadline) {
      for (Alert alert : monitor.alerts()) {
        if (alert.type() == type) {
          return alert;
        }
      }
      Thread.sleep(100);
    }
    throw new AssertionError(
        "no "
            + type
            + " alert within "
            + timeoutMs
            + " ms; alerts: "
            + monitor.alerts()
            + "; last progress: "
            + (query == null ? null : query.lastProgress()));
  }

  private static void await(BooleanSupplier condition, long timeoutMs, String what)
      throws InterruptedException {
    long deadline = System.currentTimeMillis() + timeoutMs;
    while (!condition.getAsBoolean()) {
      if (System.currentTimeMillis() > deadline) {
        throw new AssertionError("timed out waiting for " + what);
      }
      Thread.sleep(100);
    }
  }

  private Dataset<Row> rate(int rowsPerSecond) {
    return spark
        .readStream()
        .format("rate")
        .option("rowsPerSecond", rowsPerSecond)
        .option("numPartitions", 1)
        .load();
  }

  @Test
  void slowForeachBatchAboveTheTriggerInterval() throws Exception {
    Path history = tmp.resolve("history");
    attach(settings("history", history.toString()));
    query =
        rate(10)
            .writeStream()
            .queryName("slow_sink")
            .trigger(Trigger.ProcessingTime(200))
            .foreachBatch(
                (VoidFunction2<Dataset<Row>, Long>)
                    (batch, id) -> {
                      batch.count();
                      Thread.sleep(450);
                    })
            .option("checkpointLocation", tmp.resolve("checkpoint").toString())
            .start();
    Alert alert = awaitAlert(AlertType.SLOW_BATCHES, 180_000);
    assertThat(alert.queryName()).isEqualTo("slow_sink");
    assertThat(alert.message()).contains("3 batches in a row").contains("200 ms trigger interval");

    // The doctor reads the same story from the history the monitor wrote.
    query.stop();
    io.stateshift.doctor.DoctorReport report =
        io.stateshift.StateShift.get(spark)
            .doctor(tmp.resolve("checkpoint").toString())
            .history(history.toString())
            .run();
    assertThat(report.findings())
        .anySatisfy(
            f -> {
              assertThat(f.code()).isEqualTo("BATCHES_SLOWER_THAN_TRIGGER");
              assertThat(f.evidence()).contains("200 ms trigger interval");
            });
    assertThat(report.has("STATELESS")).isTrue();
  }

  @Test
  void stateGrowingWithoutWatermarkPublishesMetricsAndHistory() throws Exception {
    Path history = tmp.resolve("history");
    attach(settings("history", history.toString()));
    spark.conf().set("spark.sql.shuffle.partitions", "2"); // another test may have unset it
    query =
        rate(100)
            .dropDuplicates("value")
            .writeStream()
            .queryName("dedup_forever")
            .trigger(Trigger.ProcessingTime(300))
            .foreachBatch((VoidFunction2<Dataset<Row>, Long>) (batch, id) -> batch.count())
            .option("checkpointLocation", tmp.resolve("checkpoint").toString())
            .start();
    Alert alert = awaitAlert(AlertType.STATE_GROWTH, 180_000);
    assertThat(alert.message()).contains("operator 0 (dedupe)").contains("watermark");

    // The metrics, as Spark's metrics system (and so every configured sink) holds them.
    assertThat(MetricsSource.registeredBySourceName(MonitorMetrics.SOURCE_NAME)).isTrue();
    Map<String, Metric> inSpark = MetricsSource.registeredInSpark(MonitorMetrics.SOURCE_NAME);
    String rowsGauge =
        inSpark.keySet().stream()
            .filter(n -> n.endsWith(".stateshift.dedup_forever.operator0_dedupe.stateRows"))
            .findFirst()
            .orElseThrow(() -> new AssertionError("no state rows gauge in " + inSpark.keySet()));
    assertThat(((Number) ((Gauge<?>) inSpark.get(rowsGauge)).getValue()).doubleValue())
        .isPositive();
    for (String metric :
        List.of(
            "batchDurationMs",
            "triggerIntervalMs",
            "inputRowsPerSecond",
            "processedRowsPerSecond",
            "operator0_dedupe.stateMemoryBytes",
            "alerts.STATE_GROWTH")) {
      assertThat(inSpark.keySet())
          .as(metric)
          .anySatisfy(n -> assertThat(n).endsWith(".stateshift.dedup_forever." + metric));
    }
    assertThat(
            ((Number)
                    ((Gauge<?>)
                            inSpark.get(
                                rowsGauge.replace(
                                    "operator0_dedupe.stateRows", "triggerIntervalMs")))
                        .getValue())
                .doubleValue())
        .isEqualTo(300.0);
    // ... and as a configured sink exports them: Spark's JmxSink (SparkTestSession) as MBeans.
    javax.management.MBeanServer jmx =
        java.lang.management.ManagementFactory.getPlatformMBeanServer();
    javax.management.ObjectName rowsBean =
        jmx.queryNames(new javax.management.ObjectName("metrics:*"), null).stream()
            .filter(n -> rowsGauge.equals(n.getKeyProperty("name")))
            .findFirst()
            .orElseThrow(() -> new AssertionError("no JMX bean for " + rowsGauge));
    assertThat(((Number) jmx.getAttribute(rowsBean, "Value")).doubleValue()).isPositive();

    query.stop();
    ProgressHistory read =
        ProgressHistory.read(history.toString(), spark.sparkContext().hadoopConfiguration());
    assertThat(read.batches()).hasSizeGreaterThanOrEqualTo(4);
    assertThat(read.batches()).extracting(ProgressHistory.Batch::batchId).isSorted();
    assertThat(read.batches()).allSatisfy(b -> assertThat(b.triggerIntervalMs()).isEqualTo(300));
    assertThat(read.operators()).containsExactly("0:dedupe");
  }

  @Test
  void growingFileBacklog() throws Exception {
    attach(settings("fileBacklog", "true"));
    List<StreamingQueryListener.QueryProgressEvent> seen = new CopyOnWriteArrayList<>();
    StreamingQueryListener recorder =
        new StreamingQueryListener() {
          @Override
          public void onQueryStarted(QueryStartedEvent event) {}

          @Override
          public void onQueryProgress(QueryProgressEvent event) {
            seen.add(event);
          }

          @Override
          public void onQueryTerminated(QueryTerminatedEvent event) {}
        };
    spark.streams().addListener(recorder);
    Path input = tmp.resolve("input");
    Files.createDirectories(input);
    AtomicBoolean writing = new AtomicBoolean(true);
    Thread writer =
        new Thread(
            () -> {
              int n = 0;
              while (writing.get()) {
                try {
                  for (int k = 0; k < 2; k++, n++) {
                    Path hidden = input.resolve(".f" + n + ".tmp");
                    Files.writeString(hidden, "{\"v\":" + n + "}\n");
                    Files.move(
                        hidden, input.resolve("f" + n + ".json"), StandardCopyOption.ATOMIC_MOVE);
                  }
                  Thread.sleep(200);
                } catch (Exception e) {
                  return;
                }
              }
            });
    writer.start();
    try {
      query =
          spark
              .readStream()
              .schema("v long")
              .option("maxFilesPerTrigger", 1)
              .json(input.toString())
              .writeStream()
              .queryName("backlog")
              .trigger(Trigger.ProcessingTime(300))
              .foreachBatch((VoidFunction2<Dataset<Row>, Long>) (batch, id) -> batch.count())
              .option("checkpointLocation", tmp.resolve("checkpoint").toString())
              .start();
      Alert alert = awaitAlert(AlertType.BACKLOG_GROWTH, 180_000);
      assertThat(alert.message()).contains("grew for 3 batches in a row");
      Map<String, Metric> inSpark = MetricsSource.registeredInSpark(MonitorMetrics.SOURCE_NAME);
      String outstanding =
          inSpark.keySet().stream()
              .filter(n -> n.endsWith(".stateshift.backlog.source0.numFilesOutstanding"))
              .findFirst()
              .orElseThrow();
      assertThat(((Number) ((Gauge<?>) inSpark.get(outstanding)).getValue()).doubleValue())
          .isGreaterThanOrEqualTo(3);
    } finally {
      spark.streams().removeListener(recorder);
      writing.set(false);
      writer.join();
    }
    try (var files = Files.list(input)) {
      measureSteadyState(List.copyOf(seen), tmp, (int) files.count());
    }
  }

  @Test
  void queryFailingWithAnExceptionReachesTheCallbacks() throws Exception {
    RecordingCallback.RECEIVED.clear();
    List<Alert> programmatic = new CopyOnWriteArrayList<>();
    attach(settings("alertCallbacks", RecordingCallback.class.getName()))
        .addCallback(programmatic::add);
    query =
        rate(10)
            .writeStream()
            .queryName("failing")
            .trigger(Trigger.ProcessingTime(100))
            .foreachBatch(
                (VoidFunction2<Dataset<Row>, Long>)
                    (batch, id) -> {
                      if (id >= 1) {
                        throw new IllegalStateException("sink rejected batch " + id);
                      }
                    })
            .option("checkpointLocation", tmp.resolve("checkpoint").toString())
            .start();
    Alert alert = awaitAlert(AlertType.QUERY_FAILED, 180_000);
    assertThat(alert.message()).contains("sink rejected batch 1");
    await(
        () -> !programmatic.isEmpty() && !RecordingCallback.RECEIVED.isEmpty(),
        5_000,
        "both callbacks");
    assertThat(programmatic).extracting(Alert::type).contains(AlertType.QUERY_FAILED);
    assertThat(RecordingCallback.RECEIVED).extracting(Alert::type).contains(AlertType.QUERY_FAILED);
  }

  @Test
  void idleQuery() throws Exception {
    attach(settings("idleTimeoutMs", "1500"));
    Path input = tmp.resolve("empty-input");
    Files.createDirectories(input);
    query =
        spark
            .readStream()
            .schema("v long")
            .json(input.toString())
            .writeStream()
            .queryName("idle")
            .trigger(Trigger.ProcessingTime(200))
            .foreachBatch((VoidFunction2<Dataset<Row>, Long>) (batch, id) -> batch.count())
            .option("checkpointLocation", tmp.resolve("checkpoint").toString())
            .start();
    Alert alert = awaitAlert(AlertType.QUERY_IDLE, 180_000);
    assertThat(alert.queryName()).isEqualTo("idle");
    assertThat(alert.message()).contains("idle timeout 1500 ms");
  }

  @Test
  void sparkInstantiatesTheMonitorFromConf() {
    SparkConf conf =
        new SparkConf(false)
            .set("spark.sql.streaming.streamingQueryListeners", StreamMonitor.class.getName())
            .set("spark.stateshift.monitor.consecutiveBatches", "7")
            .set("spark.stateshift.monitor.alertCallbacks", RecordingCallback.class.getName())
            .set("spark.stateshift.monitor.idleTimeoutMs", "0");
    // The same call Spark's StreamingQueryManager makes for that setting.
    List<StreamingQueryListener> listeners =
        io.stateshift.spark.SparkCalls.loadStreamingQueryListeners(conf);
    assertThat(listeners).singleElement().isInstanceOf(StreamMonitor.class);
    StreamMonitor created = (StreamMonitor) listeners.get(0);
    assertThat(created.settings().consecutiveBatches()).isEqualTo(7);
    assertThat(created.settings().alertCallbacks())
        .containsExactly(RecordingCallback.class.getName());
    created.close();
  }
}
