package io.stateshift.monitor;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.stateshift.checkpoint.spi.SparkLines;
import io.stateshift.monitor.internal.FileBacklog;
import io.stateshift.monitor.internal.MonitorMetrics;
import java.io.IOException;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.StandardOpenOption;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Collections;
import java.util.Deque;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;
import org.apache.spark.SparkConf;
import org.apache.spark.SparkEnv;
import org.apache.spark.sql.streaming.SourceProgress;
import org.apache.spark.sql.streaming.StateOperatorProgress;
import org.apache.spark.sql.streaming.StreamingQueryListener;
import org.apache.spark.sql.streaming.StreamingQueryProgress;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Watches every streaming query of the application, enabled by conf alone: {@code
 * spark.sql.streaming.streamingQueryListeners=io.stateshift.monitor.StreamMonitor}. Publishes
 * per-query metrics through Spark's metrics system (source {@code stateshift}), raises {@link
 * Alert}s, and can append each progress event to a JSON-lines history for the doctor and the
 * report. Settings: {@code spark.stateshift.monitor.*} ({@link MonitorSettings}).
 */
public class StreamMonitor extends StreamingQueryListener implements AutoCloseable {
  public static final String PREFIX = MonitorSettings.PREFIX;
  private static final Logger LOG = LoggerFactory.getLogger(StreamMonitor.class);
  private static final ObjectMapper JSON = new ObjectMapper();
  private static final List<AlertCallback> GLOBAL_CALLBACKS = new CopyOnWriteArrayList<>();
  private static final int KEPT_ALERTS = 1000;

  /**
   * What handling one progress event cost on Spark's listener thread: over all events, and the
   * median and 95th percentile of the newest 1024 (the first event of a JVM pays for class loading;
   * the percentiles show the steady state).
   */
  public record Overhead(
      long events, double meanMicros, double maxMicros, double p50Micros, double p95Micros) {}

  private final long[] recentNanos = new long[1024];

  private final MonitorSettings settings;
  private final List<AlertCallback> callbacks = new CopyOnWriteArrayList<>();
  private final Map<UUID, Watch> watches = new ConcurrentHashMap<>();
  private final Deque<Alert> alerts = new ArrayDeque<>();
  private final ScheduledExecutorService idleChecker;
  private long events;
  private long totalNanos;
  private long maxNanos;

  /** Used by Spark when a {@code SparkConf} is at hand (the conf path). */
  public StreamMonitor(SparkConf conf) {
    this(MonitorSettings.resolve(key -> conf.contains(key) ? conf.get(key) : null));
  }

  /** Settings from the running application's conf, when there is one; else the defaults. */
  public StreamMonitor() {
    this(
        SparkEnv.get() == null
            ? MonitorSettings.defaultSettings()
            : MonitorSettings.resolve(
                key ->
                    SparkEnv.get().conf().contains(key) ? SparkEnv.get().conf().get(key) : null));
  }

  public StreamMonitor(MonitorSettings settings) {
    this.settings = settings;
    for (String className : settings.alertCallbacks()) {
      try {
        callbacks.add(
            (AlertCallback)
                Class.forName(className, true, Thread.currentThread().getContextClassLoader())
                    .getConstructor()
                    .newInstance());
      } catch (ReflectiveOperationException | ClassCastException e) {
        throw new IllegalArgumentException(
            PREFIX
                + "alertCallbacks names "
                + className
                + ", which is not an AlertCallback with a public no-argument constructor",
            e);
      }
    }
    if (settings.idleTimeoutMs() > 0) {
      idleChecker =
          Executors.newSingleThreadScheduledExecutor(
              r -> {
                Thread t = new Thread(r, "stateshift-monitor-idle");
                t.setDaemon(true);
                return t;
              });
      long period = Math.max(100, Math.min(5_000, settings.idleTimeoutMs() / 4));
      idleChecker.scheduleAtFixedRate(this::checkIdle, period, period, TimeUnit.MILLISECONDS);
    } else {
      idleChecker = null;
    }
  }

  public MonitorSettings settings() {
    return settings;
  }

  /** Adds a callback for this monitor's alerts. */
  public StreamMonitor addCallback(AlertCallback callback) {
    callbacks.add(callback);
    return this;
  }

  /** Adds a callback for the alerts of every monitor in this JVM (also those Spark created). */
  public static void addGlobalCallback(AlertCallback callback) {
    GLOBAL_CALLBACKS.add(callback);
  }

  public static void removeGlobalCallback(AlertCallback callback) {
    GLOBAL_CALLBACKS.remove(callback);
  }

  /** The alerts raised so far (the newest 1000). */
  public synchronized List<Alert> alerts() {
    return List.copyOf(alerts);
  }

  public synchronized Overhead overhead() {
    int n = (int) Math.min(events, recentNanos.length);
    long[] sorted = java.util.Arrays.copyOf(recentNanos, n);
    java.util.Arrays.sort(sorted);
    double p50 = n == 0 ? 0 : sorted[n / 2] / 1000.0;
    double p95 = n == 0 ? 0 : sorted[Math.min(n - 1, (int) Math.ceil(n * 0.95) - 1)] / 1000.0;
    return new Overhead(
        events, events == 0 ? 0 : totalNanos / 1000.0 / events, maxNanos / 1000.0, p50, p95);
  }

  @Override
  public void close() {
    if (idleChecker != null) {
      idleChecker.shutdownNow();
    }
  }

  // ---- events ---------------------------------------------------------------------------------

  @Override
  public void onQueryStarted(QueryStartedEvent event) {
    Watch watch = watch(event.id(), event.name());
    watch.runId = event.runId().toString();
    watch.lastDataMs = System.currentTimeMillis();
    describe(watch);
  }

  @Override
  public void onQueryProgress(QueryProgressEvent event) {
    long start = System.nanoTime();
    StreamingQueryProgress progress = event.progress();
    Watch watch = watch(progress.id(), progress.name());
    synchronized (watch) {
      watch.runId = progress.runId().toString();
      if (watch.checkpointRoot == null) {
        describe(watch);
      }
      try {
        observe(watch, progress);
      } catch (RuntimeException e) {
        LOG.warn(
            "stateshift monitor: cannot observe progress of {}: {}", watch.label(), e.toString());
      }
    }
    long nanos = System.nanoTime() - start;
    synchronized (this) {
      recentNanos[(int) (events % recentNanos.length)] = nanos;
      events++;
      totalNanos += nanos;
      maxNanos = Math.max(maxNanos, nanos);
    }
    if (settings.metrics()) {
      MonitorMetrics metrics = MonitorMetrics.shared();
      metrics.set("monitor.overheadMicros", nanos / 1000.0);
      metrics.set("monitor.overheadMicrosMean", overhead().meanMicros());
    }
  }

  @Override
  public void onQueryIdle(QueryIdleEvent event) {
    // Idle time is measured from the last batch with input by the idle checker.
  }

  @Override
  public void onQueryTerminated(QueryTerminatedEvent event) {
    Watch watch = watches.remove(event.id());
    String label = watch == null ? event.id().toString() : watch.label();
    if (event.exception().isDefined()) {
      String error = event.exception().get();
      String firstLine = error.lines().findFirst().orElse(error);
      raise(
          watch,
          event.id().toString(),
          event.runId().toString(),
          -1,
          AlertType.QUERY_FAILED,
          "query " + label + " terminated with an exception: " + firstLine);
    }
    if (watch != null && settings.history() != null) {
      ObjectNode line = JSON.createObjectNode();
      line.put("event", "terminated");
      line.put("id", event.id().toString());
      line.put("runId", event.runId().toString());
      line.put("timestampMs", System.currentTimeMillis());
      line.put("exception", event.exception().isDefined() ? event.exception().get() : null);
      appendHistory(watch, line.toString(), -1);
    }
  }

  // ---- per query ------------------------------------------------------------------------------

  /** What the monitor remembers about one query between its progress events. */
  private static final class Watch {
    final UUID id;
    final String name;
    final String key;
    String runId;
    long triggerIntervalMs = -1;
    String checkpointRoot;
    long lastDataMs = System.currentTimeMillis();
    boolean idleRaised;
    int slowStreak;
    boolean slowRaised;
    final Map<Integer, Deque<Long>> stateRows = new HashMap<>();
    final Map<Integer, Boolean> growthRaised = new HashMap<>();
    final Deque<Double> backlog = new ArrayDeque<>();
    boolean backlogRaised;
    final Map<Integer, FileBacklog> fileBacklogs = new HashMap<>();

    Watch(UUID id, String name) {
      this.id = id;
      this.name = name;
      this.key =
          name == null || name.isBlank() ? id.toString() : name.replaceAll("[^A-Za-z0-9_-]", "_");
    }

    String label() {
      return name == null ? id.toString() : name + " (" + id + ")";
    }
  }

  private Watch watch(UUID id, String name) {
    return watches.computeIfAbsent(id, k -> new Watch(id, name));
  }

  private void describe(Watch watch) {
    SparkLines.get()
        .describeQuery(watch.id)
        .ifPresent(
            info -> {
              watch.triggerIntervalMs = info.triggerIntervalMs();
              watch.checkpointRoot = info.checkpointRoot();
            });
  }

  private void observe(Watch watch, StreamingQueryProgress p) {
    long batchMs = p.durationMs().getOrDefault("triggerExecution", 0L);
    long interval =
        settings.triggerIntervalMs() >= 0
            ? settings.triggerIntervalMs()
            : Math.max(0, watch.triggerIntervalMs);
    if (p.numInputRows() > 0) {
      watch.lastDataMs = System.currentTimeMillis();
      watch.idleRaised = false;
    }
    Map<String, Double> gauges = new HashMap<>();
    gauges.put("batchDurationMs", (double) batchMs);
    gauges.put("triggerIntervalMs", (double) interval);
    gauges.put("inputRows", (double) p.numInputRows());
    gauges.put("inputRowsPerSecond", finite(p.inputRowsPerSecond()));
    gauges.put("processedRowsPerSecond", finite(p.processedRowsPerSecond()));
    gauges.put("batchId", (double) p.batchId());
    Long repartition = p.durationMs().get("controlBatch.REPARTITION");
    if (repartition != null) {
      gauges.put("repartitionMs", (double) repartition);
    }
    long delay = ProgressHistory.watermarkDelayMs(jsonOf(p.eventTime()));
    if (delay >= 0) {
      gauges.put("watermarkDelayMs", (double) delay);
    }

    // Slow batches: the batch took longer than the trigger interval.
    if (interval > 0 && batchMs > interval) {
      watch.slowStreak++;
      if (watch.slowStreak >= settings.consecutiveBatches() && !watch.slowRaised) {
        watch.slowRaised = true;
        raise(
            watch,
            p.batchId(),
            AlertType.SLOW_BATCHES,
            String.format(
                "%d batches in a row "
                    + "took longer than the %d ms trigger interval (last: batch %d, %d ms)",
                watch.slowStreak, interval, p.batchId(), batchMs));
      }
    } else {
      watch.slowStreak = 0;
      watch.slowRaised = false;
    }

    // State rows per operator, growing without levelling off.
    StateOperatorProgress[] operators = p.stateOperators();
    for (int i = 0; i < operators.length; i++) {
      StateOperatorProgress op = operators[i];
      String prefix = "operator" + i + "_" + op.operatorName() + ".";
      gauges.put(prefix + "stateRows", (double) op.numRowsTotal());
      gauges.put(prefix + "stateMemoryBytes", (double) op.memoryUsedBytes());
      gauges.put(prefix + "rowsDroppedByWatermark", (double) op.numRowsDroppedByWatermark());
      Deque<Long> rows = watch.stateRows.computeIfAbsent(i, k -> new ArrayDeque<>());
      if (p.numInputRows() == 0 && !rows.isEmpty()) {
        continue; // an idle batch says nothing about growth
      }
      rows.addLast(op.numRowsTotal());
      while (rows.size() > settings.consecutiveBatches() + 1) {
        rows.removeFirst();
      }
      if (growingWithoutLevellingOff(rows)) {
        if (!watch.growthRaised.getOrDefault(i, false)) {
          watch.growthRaised.put(i, true);
          raise(
              watch,
              p.batchId(),
              AlertType.STATE_GROWTH,
              String.format(
                  "state rows of "
                      + "operator %d (%s) grew for %d batches in a row without levelling off: %s; is a "
                      + "watermark missing or too loose?",
                  i, op.operatorName(), rows.size() - 1, rows));
        }
      } else if (!isRising(rows)) {
        watch.growthRaised.put(i, false);
      }
    }

    // Backlog per source: what the source reports, or for files what the monitor measures.
    double backlog = 0;
    boolean anyBacklog = false;
    SourceProgress[] sources = p.sources();
    for (int i = 0; i < sources.length; i++) {
      SourceProgress source = sources[i];
      String prefix = "source" + i + ".";
      Map<String, String> reported = source.metrics();
      for (String metric :
          List.of(
              "avgOffsetsBehindLatest",
              "maxOffsetsBehindLatest",
              "minOffsetsBehindLatest",
              "numFilesOutstanding",
              "numBytesOutstanding")) {
        String value = reported.get(metric);
        if (value != null) {
          gauges.put(prefix + metric, parse(value));
        }
      }
      gauges.put(prefix + "inputRows", (double) source.numInputRows());
      if (reported.containsKey("maxOffsetsBehindLatest")) {
        backlog += parse(reported.get("maxOffsetsBehindLatest"));
        anyBacklog = true;
      } else if (reported.containsKey("numFilesOutstanding")) {
        backlog += parse(reported.get("numFilesOutstanding"));
        anyBacklog = true;
      } else if (settings.fileBacklog()
          && watch.checkpointRoot != null
          && source.endOffset() != null) {
        final int index = i;
        FileBacklog tracker =
            watch.fileBacklogs.computeIfAbsent(
                i,
                k ->
                    FileBacklog.of(watch.checkpointRoot, index, source.description()).orElse(null));
        if (tracker != null) {
          try {
            FileBacklog.Outstanding outstanding = tracker.measure(source.endOffset());
            gauges.put(prefix + "numFilesOutstanding", (double) outstanding.files());
            gauges.put(prefix + "numBytesOutstanding", (double) outstanding.bytes());
            backlog += outstanding.files();
            anyBacklog = true;
          } catch (IOException | RuntimeException e) {
            LOG.debug("stateshift monitor: cannot measure file backlog", e);
          }
        }
      }
    }
    if (anyBacklog) {
      gauges.put("backlog", backlog);
      watch.backlog.addLast(backlog);
      while (watch.backlog.size() > settings.consecutiveBatches() + 1) {
        watch.backlog.removeFirst();
      }
      if (watch.backlog.size() == settings.consecutiveBatches() + 1
          && isStrictlyRising(watch.backlog)) {
        if (!watch.backlogRaised) {
          watch.backlogRaised = true;
          raise(
              watch,
              p.batchId(),
              AlertType.BACKLOG_GROWTH,
              String.format(
                  "the source backlog "
                      + "grew for %d batches in a row: %s; input arrives faster than the query takes it "
                      + "in",
                  settings.consecutiveBatches(), watch.backlog));
        }
      } else if (!isStrictlyRising(watch.backlog)) {
        watch.backlogRaised = false;
      }
    }

    if (settings.metrics()) {
      MonitorMetrics metrics = MonitorMetrics.shared();
      gauges.forEach((name, value) -> metrics.set(watch.key + "." + name, value));
    }
    if (settings.history() != null) {
      ObjectNode line = JSON.createObjectNode();
      line.put("event", "progress");
      line.put("triggerIntervalMs", interval);
      if (anyBacklog) {
        line.put("backlog", backlog);
      }
      line.set("progress", jsonOf(p.json()));
      appendHistory(watch, line.toString(), p.batchId());
    }
  }

  /** K increases in a row, the last at least levelOffRatio of the first: not levelling off. */
  private boolean growingWithoutLevellingOff(Deque<Long> rows) {
    if (rows.size() < settings.consecutiveBatches() + 1 || !isStrictlyRisingLongs(rows)) {
      return false;
    }
    List<Long> list = new ArrayList<>(rows);
    long first = list.get(1) - list.get(0);
    long last = list.get(list.size() - 1) - list.get(list.size() - 2);
    return last >= settings.levelOffRatio() * first;
  }

  private static boolean isRising(Deque<Long> rows) {
    if (rows.size() < 2) {
      return true;
    }
    List<Long> list = new ArrayList<>(rows);
    return list.get(list.size() - 1) > list.get(list.size() - 2);
  }

  private static boolean isStrictlyRisingLongs(Deque<Long> values) {
    Long previous = null;
    for (Long v : values) {
      if (previous != null && v <= previous) {
        return false;
      }
      previous = v;
    }
    return true;
  }

  private static boolean isStrictlyRising(Deque<Double> values) {
    Double previous = null;
    for (Double v : values) {
      if (previous != null && v <= previous) {
        return false;
      }
      previous = v;
    }
    return true;
  }

  private void checkIdle() {
    long now = System.currentTimeMillis();
    for (Watch watch : watches.values()) {
      synchronized (watch) {
        if (!watch.idleRaised && now - watch.lastDataMs > settings.idleTimeoutMs()) {
          watch.idleRaised = true;
          raise(
              watch,
              -1,
              AlertType.QUERY_IDLE,
              String.format(
                  "no input for %d ms (idle " + "timeout %d ms): is the source still delivering?",
                  now - watch.lastDataMs, settings.idleTimeoutMs()));
        }
      }
    }
  }

  // ---- alerts, history ------------------------------------------------------------------------

  private void raise(Watch watch, long batchId, AlertType type, String message) {
    raise(watch, watch.id.toString(), watch.runId, batchId, type, message);
  }

  private void raise(
      Watch watch, String queryId, String runId, long batchId, AlertType type, String message) {
    Alert alert =
        new Alert(
            type,
            queryId,
            watch == null ? null : watch.name,
            runId,
            batchId,
            message,
            System.currentTimeMillis());
    LOG.warn("stateshift monitor alert: {}", alert);
    synchronized (this) {
      alerts.addLast(alert);
      while (alerts.size() > KEPT_ALERTS) {
        alerts.removeFirst();
      }
    }
    if (settings.metrics()) {
      String key = watch == null ? queryId : watch.key;
      MonitorMetrics.shared().counter(key + ".alerts." + type).inc();
      MonitorMetrics.shared().counter("alerts." + type).inc();
    }
    List<AlertCallback> all = new ArrayList<>(callbacks);
    all.addAll(GLOBAL_CALLBACKS);
    for (AlertCallback callback : all) {
      try {
        callback.onAlert(alert);
      } catch (RuntimeException e) {
        LOG.warn("stateshift monitor: alert callback {} failed", callback, e);
      }
    }
  }

  private void appendHistory(Watch watch, String line, long batchId) {
    try {
      Path dir = new Path(settings.history());
      String base = watch.id + "-" + watch.runId;
      if ("file".equals(dir.toUri().getScheme()) || dir.toUri().getScheme() == null) {
        java.nio.file.Path folder = java.nio.file.Path.of(dir.toUri().getPath());
        Files.createDirectories(folder);
        Files.writeString(
            folder.resolve(base + ".jsonl"),
            line + "\n",
            StandardCharsets.UTF_8,
            StandardOpenOption.CREATE,
            StandardOpenOption.APPEND);
        return;
      }
      // Object stores cannot append: one small file per event, read back the same way.
      Path file = new Path(dir, base + "-" + (batchId < 0 ? "end" : batchId) + ".jsonl");
      FileSystem fs =
          file.getFileSystem(
              io.stateshift.checkpoint.SessionSettings.hadoopConf(
                  org.apache.spark.sql.SparkSession.active()));
      try (OutputStream out = fs.create(file, true)) {
        out.write((line + "\n").getBytes(StandardCharsets.UTF_8));
      }
    } catch (IOException | RuntimeException e) {
      LOG.warn(
          "stateshift monitor: cannot write history to {}: {}", settings.history(), e.toString());
    }
  }

  private static com.fasterxml.jackson.databind.JsonNode jsonOf(Object value) {
    try {
      if (value instanceof String text) {
        return JSON.readTree(text);
      }
      return JSON.valueToTree(value == null ? Collections.emptyMap() : value);
    } catch (IOException e) {
      return JSON.createObjectNode();
    }
  }

  private static double finite(double value) {
    return Double.isFinite(value) ? value : 0;
  }

  private static double parse(String value) {
    try {
      return Double.parseDouble(value);
    } catch (NumberFormatException e) {
      return 0;
    }
  }
}
