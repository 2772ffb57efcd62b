package io.stateshift.bench;

import static io.stateshift.bench.BenchOutput.log;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.stateshift.CheckpointReport;
import io.stateshift.RepartitionResult;
import io.stateshift.StateShift;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.lang.management.ManagementFactory;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.attribute.FileTime;
import java.time.Instant;
import java.time.LocalDateTime;
import java.time.format.DateTimeFormatter;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.function.Predicate;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.execution.streaming.state.StateStore$;
import org.apache.spark.sql.streaming.StreamingQuery;
import org.apache.spark.sql.streaming.StreamingQueryListener;
import org.apache.spark.sql.streaming.StreamingQueryProgress;
import org.apache.spark.sql.streaming.Trigger;

/**
 * What {@code stateshift prepare} costs a running query: batch durations of a live stateful query
 * before, during and after {@code ./stateshift prepare} runs against its checkpoint as a separate
 * process, as a user runs it.
 *
 * <p>The query is the benchmark's windowed count ({@link Workload.Shape#WINDOWED}) on RocksDB with
 * changelog checkpointing, {@code --from} shuffle partitions, a file source with one file per
 * micro-batch and a processing-time trigger, in this JVM. It first reads the benchmark's input for
 * {@code --keys} keys (4 files: the state build-up), then a feeder keeps two files of {@code
 * --batch-rows} events ahead of it, each updating existing keys, so every batch has the same size
 * and the state stays at {@code --keys} rows. After {@code --settle} batches, {@code --window}
 * batches are the first baseline; then, for each {@code --prepare-masters} entry, {@code
 * ./stateshift prepare --partitions <to> --master <m>} runs and {@code --window} more batches after
 * it are the next baseline. A batch whose run overlaps a prepare's process counts for that prepare.
 *
 * <p>Checks: the query keeps running (no exception, batches during every prepare); after it stops,
 * the state holds {@code --keys} rows whose counts sum to every event fed; the repartition to
 * {@code --to} then starts from the prepared layout and leaves the same rows and sum in the new
 * count. A failed check stops the benchmark with exit code 1. Run it with {@code bench/run
 * --live-prepare}; it is not a test.
 */
public final class LivePrepareBenchmark {

  /** Command-line options. */
  record Options(
      long keys,
      long batchRows,
      long triggerMillis,
      int window,
      int settle,
      int from,
      int to,
      List<String> prepareMasters,
      Path workDir,
      Path outDir,
      String master,
      List<String> argv) {

    static Options parse(String[] args) {
      Map<String, String> values = new LinkedHashMap<>();
      for (int i = 0; i < args.length; i++) {
        String a = args[i];
        if (a.equals("--help") || a.equals("-h")) {
          System.out.println(USAGE);
          System.exit(0);
        }
        if (!a.startsWith("--")) {
          throw new IllegalArgumentException("unexpected argument '" + a + "'");
        }
        String key = a.substring(2);
        int eq = key.indexOf('=');
        if (eq > 0) {
          values.put(key.substring(0, eq), key.substring(eq + 1));
        } else if (i + 1 < args.length) {
          values.put(key, args[++i]);
        } else {
          throw new IllegalArgumentException("--" + key + " needs a value");
        }
      }
      List<String> known =
          List.of(
              "keys",
              "batch-rows",
              "trigger-ms",
              "window",
              "settle",
              "from",
              "to",
              "prepare-masters",
              "work-dir",
              "out",
              "master");
      for (String k : values.keySet()) {
        if (!known.contains(k)) {
          throw new IllegalArgumentException("unknown option --" + k + "\n" + USAGE);
        }
      }
      Options o =
          new Options(
              Long.parseLong(values.getOrDefault("keys", "1000000").replace("_", "")),
              Long.parseLong(values.getOrDefault("batch-rows", "20000").replace("_", "")),
              Long.parseLong(values.getOrDefault("trigger-ms", "2000")),
              Integer.parseInt(values.getOrDefault("window", "10")),
              Integer.parseInt(values.getOrDefault("settle", "5")),
              Integer.parseInt(values.getOrDefault("from", "200")),
              Integer.parseInt(values.getOrDefault("to", "64")),
              List.of(
                      values
                          .getOrDefault("prepare-masters", "local[2],local[1]")
                          .split(";|,(?![^\\[]*\\])"))
                  .stream()
                  .map(String::trim)
                  .filter(s -> !s.isEmpty())
                  .toList(),
              Path.of(
                      values.getOrDefault(
                          "work-dir",
                          System.getProperty("java.io.tmpdir") + "/stateshift-live-prepare"))
                  .toAbsolutePath(),
              Path.of(values.getOrDefault("out", "bench/results")).toAbsolutePath(),
              values.getOrDefault("master", "local[2]"),
              List.of(args));
      if (o.window() < 1 || o.prepareMasters().isEmpty() || o.batchRows() < 1) {
        throw new IllegalArgumentException(
            "--window and --batch-rows must be at least 1, --prepare-masters not empty");
      }
      return o;
    }
  }

  static final String USAGE =
      """
      usage: bench/run --live-prepare [options]
        --keys 1000000               state keys the query builds up first (even)
        --batch-rows 20000           events per micro-batch after the build-up (updates of
                                     existing keys: the state stays at --keys rows)
        --trigger-ms 2000            the query's processing-time trigger interval
        --settle 5                   batches after the build-up that are not measured
        --window 10                  batches per baseline window (before the first prepare
                                     and after each)
        --from 200                   the query's shuffle (state) partitions
        --to 64                      prepare --partitions
        --prepare-masters local[2],local[1]   one ./stateshift prepare per entry, with --master
                                     (local[1]: one task at a time)
        --work-dir <tmp>/stateshift-live-prepare   input and checkpoint (deleted afterwards)
        --out bench/results          where live-prepare-<date>-<time>.md and .json go
        --master local[2]            the query's Spark master
      Heap of the benchmark JVM (the query): BENCH_HEAP (default 6g) or bench/run --heap 3g;
      the prepare processes run with ./stateshift's defaults (STATESHIFT_JAVA_OPTS).""";

  /** One micro-batch that read input, as its progress event reports it. */
  record Batch(
      long id, long startMillis, long durationMillis, long inputRows, Map<String, Long> parts) {
    long endMillis() {
      return startMillis + durationMillis;
    }

    Map<String, Object> toJson() {
      Map<String, Object> m = new LinkedHashMap<>();
      m.put("batchId", id);
      m.put("start", Instant.ofEpochMilli(startMillis).toString());
      m.put("triggerExecutionMillis", durationMillis);
      m.put("inputRows", inputRows);
      m.put("durationMs", parts);
      return m;
    }
  }

  /** A stretch of the run: a baseline window or one prepare. */
  static final class Phase {
    final String name;
    final String prepareMaster; // null for a baseline window
    long startMillis;
    long endMillis;
    final List<Batch> batches = new ArrayList<>();
    final Map<String, Object> prepare = new LinkedHashMap<>();
    double loadBefore;
    double loadAfter;

    Phase(String name, String prepareMaster) {
      this.name = name;
      this.prepareMaster = prepareMaster;
    }

    Map<String, Object> toJson() {
      Map<String, Object> m = new LinkedHashMap<>();
      m.put("name", name);
      m.put("prepareMaster", prepareMaster);
      m.put("start", Instant.ofEpochMilli(startMillis).toString());
      m.put("end", Instant.ofEpochMilli(endMillis).toString());
      m.put("loadAverageBefore", loadBefore);
      m.put("loadAverageAfter", loadAfter);
      m.put("stats", Stats.of(batches).toJson());
      if (!prepare.isEmpty()) {
        m.put("prepare", prepare);
      }
      m.put("batches", batches.stream().map(Batch::toJson).toList());
      return m;
    }
  }

  /** Mean, median, p90 (nearest rank) and max of batch durations, in milliseconds. */
  record Stats(int n, double mean, double median, double p90, double max) {
    static Stats of(List<Batch> batches) {
      double[] d = batches.stream().mapToDouble(Batch::durationMillis).sorted().toArray();
      if (d.length == 0) {
        return new Stats(0, Double.NaN, Double.NaN, Double.NaN, Double.NaN);
      }
      double median =
          d.length % 2 == 1 ? d[d.length / 2] : (d[d.length / 2 - 1] + d[d.length / 2]) / 2;
      double p90 = d[(int) Math.ceil(0.9 * d.length) - 1];
      return new Stats(
          d.length, java.util.Arrays.stream(d).average().orElse(0), median, p90, d[d.length - 1]);
    }

    Map<String, Object> toJson() {
      Map<String, Object> m = new LinkedHashMap<>();
      m.put("batches", n);
      m.put("meanMillis", n == 0 ? null : mean);
      m.put("medianMillis", n == 0 ? null : median);
      m.put("p90Millis", n == 0 ? null : p90);
      m.put("maxMillis", n == 0 ? null : max);
      return m;
    }
  }

  /** Within this ratio of the baseline, as issue #23 asks of prepare on a live query. */
  static final double ALLOWED_RATIO = 1.20;

  private final Options options;
  private final SparkSession spark;
  private final Path projectDir = Path.of("").toAbsolutePath();
  private final Map<String, Object> environment = new LinkedHashMap<>();
  private final Map<String, Object> checks = new LinkedHashMap<>();
  private final List<Phase> phases = new ArrayList<>();
  private final List<Batch> allBatches = new ArrayList<>();
  private final List<String> warnings = new ArrayList<>();
  private final Path mdFile;
  private final Path jsonFile;
  private volatile UUID queryId;
  private volatile Throwable feederFailure;
  private long buildMillis;
  private long filesFed;

  private LivePrepareBenchmark(Options options) {
    this.options = options;
    String stamp = LocalDateTime.now().format(DateTimeFormatter.ofPattern("yyyy-MM-dd-HHmmss"));
    mdFile = options.outDir().resolve("live-prepare-" + stamp + ".md");
    jsonFile = options.outDir().resolve("live-prepare-" + stamp + ".json");
    spark =
        SparkSession.builder()
            .master(options.master())
            .appName("stateshift live prepare benchmark")
            .config("spark.ui.enabled", "false")
            .config("spark.sql.session.timeZone", "UTC")
            .getOrCreate();
    spark.sparkContext().setLogLevel("WARN");
    environment.put("started", LocalDateTime.now().toString());
    String niceness = System.getenv("STATESHIFT_PREPARE_NICE");
    environment.put(
        "command",
        (niceness != null ? "STATESHIFT_PREPARE_NICE=" + niceness + " " : "")
            + "bench/run --live-prepare "
            + String.join(" ", options.argv()));
    environment.put("cores", Runtime.getRuntime().availableProcessors());
    environment.put("master", options.master());
    environment.put("java", System.getProperty("java.version"));
    environment.put("spark", spark.version());
    environment.put("sparkLine", BenchLine.name());
    environment.put("maxHeapBytes", Runtime.getRuntime().maxMemory());
    String commit = BenchOutput.git(projectDir, "rev-parse", "--short", "HEAD").trim();
    environment.put("gitCommit", commit.isEmpty() ? "unknown commit" : commit);
    String status =
        BenchOutput.git(
                projectDir,
                "status",
                "--porcelain",
                "--untracked-files=no",
                "core/src/main",
                "spark-common/src",
                BenchLine.module() + "/src/main")
            .trim();
    environment.put("gitDirty", !status.isEmpty());
  }

  public static void main(String[] args) {
    Options options;
    try {
      options = Options.parse(args);
    } catch (IllegalArgumentException e) {
      System.err.println(e.getMessage());
      System.exit(2);
      return;
    }
    LivePrepareBenchmark bench = new LivePrepareBenchmark(options);
    int exit = 0;
    try {
      bench.run();
    } catch (Throwable t) {
      exit = 1;
      System.err.println();
      System.err.println("BENCHMARK FAILED: " + t);
      t.printStackTrace();
      bench.writeResults(String.valueOf(t));
    } finally {
      bench.spark.stop();
    }
    if (exit == 0) {
      Dirs.delete(options.workDir());
    } else {
      System.err.println("work dir kept for inspection: " + options.workDir());
    }
    System.exit(exit);
  }

  private void run() throws Exception {
    Path work = options.workDir();
    Dirs.delete(work);
    Path input = work.resolve("input");
    Path pool = work.resolve("pool");
    Path staging = work.resolve("staging");
    Path checkpoint = work.resolve("checkpoint");
    Files.createDirectories(pool);
    Files.createDirectories(staging);
    log("work dir %s, results %s", work, mdFile);
    // ./stateshift builds its jar and class archive on first use: not inside a measurement
    Path buildLog = work.resolve("stateshift-build.log");
    if (runProcess(List.of(projectDir.resolve("stateshift").toString(), "classpath"), buildLog)[0]
        != 0) {
      throw new IllegalStateException(
          "./stateshift classpath failed: " + BenchOutput.tail(buildLog));
    }

    long t = System.nanoTime();
    int buildFiles = 4;
    Workload.writeInput(spark, input, options.keys(), buildFiles);
    int poolSize = 8;
    List<Path> poolFiles = new ArrayList<>();
    for (int f = 0; f < poolSize; f++) {
      Path file = pool.resolve(String.format("pool-%02d.parquet", f));
      Workload.writeEvents(
          spark, file, options.keys(), f * options.batchRows(), (f + 1) * options.batchRows());
      poolFiles.add(file);
    }
    log(
        "input for %,d keys and %d batch files of %,d events written in %.1f s",
        options.keys(), poolSize, options.batchRows(), (System.nanoTime() - t) / 1e9);

    spark.streams().addListener(new Recorder());
    Workload.Provider.ROCKSDB_CHANGELOG.conf.forEach((k, v) -> spark.conf().set(k, v));
    spark.conf().set("spark.sql.shuffle.partitions", Integer.toString(options.from()));
    Workload.Shape shape = Workload.Shape.WINDOWED;
    long started = System.currentTimeMillis();
    StreamingQuery query =
        shape
            .apply(
                () ->
                    spark
                        .readStream()
                        .schema(Workload.SCHEMA)
                        .option("maxFilesPerTrigger", 1)
                        .parquet(input.toString()))
            .writeStream()
            .queryName("live-prepare-windowed-count")
            .format("noop")
            .outputMode(shape.outputMode)
            .option("checkpointLocation", checkpoint.toString())
            .trigger(Trigger.ProcessingTime(options.triggerMillis(), TimeUnit.MILLISECONDS))
            .start();
    queryId = query.id();
    Thread feeder = null;
    try {
      long buildRows = 2 * options.keys();
      awaitBatches(query, "the state build-up", b -> true, buildFiles);
      buildMillis = System.currentTimeMillis() - started;
      log("built %,d keys in %d batches, %.1f s", options.keys(), buildFiles, buildMillis / 1e3);

      // keeps two files ahead of the query: every batch reads one file of --batch-rows events
      feeder =
          new Thread(
              () -> {
                try {
                  while (!Thread.currentThread().isInterrupted()) {
                    if (filesFedSnapshot() - steadyBatches() < 2) {
                      Path src = poolFiles.get((int) (filesFedSnapshot() % poolSize));
                      Path tmp = staging.resolve("next.parquet");
                      Files.copy(src, tmp, StandardCopyOption.REPLACE_EXISTING);
                      Files.setLastModifiedTime(
                          tmp, FileTime.fromMillis(System.currentTimeMillis()));
                      Files.move(
                          tmp,
                          input.resolve(String.format("live-%06d.parquet", filesFedSnapshot())),
                          StandardCopyOption.ATOMIC_MOVE);
                      synchronized (this) {
                        filesFed++;
                      }
                    }
                    Thread.sleep(50);
                  }
                } catch (InterruptedException e) {
                  Thread.currentThread().interrupt();
                } catch (IOException | RuntimeException e) {
                  feederFailure = e;
                }
              },
              "live-prepare-feeder");
      feeder.setDaemon(true);
      feeder.start();

      awaitBatches(query, "settling", steady(), options.settle());
      baseline(query, "baseline before");
      for (String prepareMaster : options.prepareMasters()) {
        Phase p = prepare(query, checkpoint, prepareMaster);
        if (p.batches.isEmpty()) {
          throw new IllegalStateException(
              "no batch of the query ran during " + p.name + ": the query did not make progress");
        }
        baseline(query, "baseline after " + prepareMaster);
        writeResults(null);
      }
      feeder.interrupt();
      feeder.join();
      query.processAllAvailable();
      if (query.exception().isDefined()) {
        throw new IllegalStateException("the query failed", query.exception().get());
      }
      checks.put("queryException", "none");
      long steadyRows = filesFedSnapshot() * options.batchRows();
      checks.put("eventsFed", buildRows + steadyRows);
      log("%d batches in all, %d after the build-up", allBatches.size(), steadyBatches());
    } finally {
      if (feeder != null) {
        feeder.interrupt();
      }
      query.stop();
    }
    checkState(checkpoint, 2 * options.keys() + filesFedSnapshot() * options.batchRows());
    writeResults(null);
    System.out.println();
    System.out.println(Files.readString(mdFile));
    System.out.println("results: " + mdFile);
    System.out.println("         " + jsonFile);
  }

  private synchronized long filesFedSnapshot() {
    return filesFed;
  }

  private long steadyBatches() {
    synchronized (allBatches) {
      return allBatches.stream().filter(steady()).count();
    }
  }

  private Predicate<Batch> steady() {
    return b -> b.inputRows() == options.batchRows();
  }

  /** Waits for {@code window} more batches and records them as a baseline window. */
  private Phase baseline(StreamingQuery query, String name) {
    Phase phase = new Phase(name, null);
    phase.loadBefore = loadAverage();
    phase.startMillis = System.currentTimeMillis();
    long from = phase.startMillis;
    List<Batch> got =
        awaitBatches(query, name, steady().and(b -> b.startMillis() >= from), options.window());
    phase.batches.addAll(got);
    phase.endMillis = System.currentTimeMillis();
    phase.loadAfter = loadAverage();
    phases.add(phase);
    Stats s = Stats.of(got);
    log("%s: %d batches, mean %.0f ms, median %.0f ms", name, s.n(), s.mean(), s.median());
    return phase;
  }

  /** Runs ./stateshift prepare against the live checkpoint; records the batches it overlaps. */
  private Phase prepare(StreamingQuery query, Path checkpoint, String prepareMaster) {
    Phase phase = new Phase("during prepare, --master " + prepareMaster, prepareMaster);
    Path logFile = options.workDir().resolve("prepare.log");
    Path outFile = options.workDir().resolve("prepare.json");
    List<String> command =
        List.of(
            projectDir.resolve("stateshift").toString(),
            "prepare",
            "--checkpoint",
            checkpoint.toString(),
            "--partitions",
            Integer.toString(options.to()),
            "--master",
            prepareMaster,
            "--json");
    phase.prepare.put("command", String.join(" ", command));
    phase.loadBefore = loadAverage();
    log("running %s", String.join(" ", command));
    phase.startMillis = System.currentTimeMillis();
    long[] exit = runProcess(command, outFile, logFile);
    phase.endMillis = System.currentTimeMillis();
    phase.loadAfter = loadAverage();
    phase.prepare.put("exitCode", exit[0]);
    phase.prepare.put("wallMillis", exit[1]);
    if (exit[0] != 0) {
      throw new IllegalStateException(
          "./stateshift prepare exited with " + exit[0] + ": " + BenchOutput.tail(logFile));
    }
    try {
      JsonNode json = new ObjectMapper().readTree(outFile.toFile());
      phase.prepare.put("totalMillis", json.path("totalMillis").asLong());
      JsonNode prepared = json.path("prepared");
      phase.prepare.put("preparedBatch", prepared.path("preparedBatch").asLong());
      phase.prepare.put("rows", prepared.path("rows").asLong());
      phase.prepare.put("bytes", prepared.path("bytes").asLong());
      phase.prepare.put("removed", json.path("removed").asInt());
      if (prepared.path("rows").asLong() != options.keys()) {
        throw new IllegalStateException(
            "prepare reports " + prepared.path("rows") + " rows, the state has " + options.keys());
      }
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
    // the batches whose run overlapped the process, the one running at its start included;
    // wait for the one running at its end to report
    long a = phase.startMillis;
    long b = phase.endMillis;
    awaitBatches(query, "the batch running at the prepare's end", x -> x.startMillis() >= b, 1);
    synchronized (allBatches) {
      for (Batch x : allBatches) {
        if (steady().test(x) && x.startMillis() < b && x.endMillis() > a) {
          phase.batches.add(x);
        }
      }
    }
    phases.add(phase);
    Stats s = Stats.of(phase.batches);
    log(
        "%s: %.1f s, %d batches, mean %.0f ms, median %.0f ms",
        phase.name, exit[1] / 1e3, s.n(), s.mean(), s.median());
    if (s.n() < 3) {
      warn(phase.name + ": only " + s.n() + " batches overlapped the prepare");
    }
    return phase;
  }

  /**
   * Waits until {@code count} batches that match {@code which} have reported (counted from now on
   * for baselines: {@code which} says which), failing when the query stops or 10 minutes pass.
   */
  private List<Batch> awaitBatches(
      StreamingQuery query, String what, Predicate<Batch> which, int count) {
    long deadline = System.currentTimeMillis() + TimeUnit.MINUTES.toMillis(10);
    while (true) {
      synchronized (allBatches) {
        List<Batch> got = allBatches.stream().filter(which).toList();
        if (got.size() >= count) {
          return new ArrayList<>(got.subList(0, count));
        }
      }
      if (feederFailure != null) {
        throw new IllegalStateException("the feeder failed", feederFailure);
      }
      if (!query.isActive()) {
        throw new IllegalStateException(
            "the query stopped while waiting for " + what,
            query.exception().isDefined() ? query.exception().get() : null);
      }
      if (System.currentTimeMillis() > deadline) {
        throw new IllegalStateException(
            new TimeoutException(what + ": fewer than " + count + " batches in 10 minutes"));
      }
      try {
        Thread.sleep(50);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        throw new IllegalStateException(e);
      }
    }
  }

  /**
   * After the query stopped: its state (Spark's statestore source, as users read it) holds {@code
   * --keys} rows whose counts sum to every event fed; the repartition to {@code --to} starts from
   * the last prepared layout and leaves the same.
   */
  private void checkState(Path checkpoint, long events) {
    StateStore$.MODULE$.unloadAll();
    String cp = checkpoint.toString();
    long[] before = stateRowsAndSum(cp);
    checks.put("stateRowsBefore", before[0]);
    checks.put("countSumBefore", before[1]);
    if (before[0] != options.keys() || before[1] != events) {
      throw new IllegalStateException(
          String.format(
              "CORRECTNESS FAILURE: the stopped query's state has %d rows summing to %d; expected"
                  + " %d rows summing to the %d events fed",
              before[0], before[1], options.keys(), events));
    }
    StateShift shift = StateShift.get(spark);
    long t = System.nanoTime();
    RepartitionResult result =
        shift.repartitionState(cp).toPartitions(options.to()).assumeStopped().execute();
    checks.put("repartitionMillis", (System.nanoTime() - t) / 1_000_000);
    checks.put("repartitionPath", result.path().toString());
    checks.put("repartitionRowsReplayed", result.path().rowsReplayed());
    StateStore$.MODULE$.unloadAll();
    CheckpointReport after = shift.inspect(cp);
    long misplaced =
        after.operators().stream()
            .flatMap(o -> o.stores().stream())
            .mapToLong(CheckpointReport.StoreReport::misplacedKeys)
            .sum();
    long[] rows = stateRowsAndSum(cp);
    checks.put("partitionsAfter", after.partitions());
    checks.put("misplacedKeysAfter", misplaced);
    checks.put("stateRowsAfter", rows[0]);
    checks.put("countSumAfter", rows[1]);
    List<String> problems = new ArrayList<>();
    if (!result.path().prepared()) {
      problems.add("the repartition did not start from the prepared layout: " + result.path());
    }
    if (after.partitions() != options.to()) {
      problems.add("inspect reports " + after.partitions() + " partitions");
    }
    if (misplaced != 0) {
      problems.add(misplaced + " keys outside their partition");
    }
    if (rows[0] != before[0] || rows[1] != before[1]) {
      problems.add(rows[0] + " rows summing to " + rows[1] + " after the repartition");
    }
    checks.put("ok", problems.isEmpty());
    if (!problems.isEmpty()) {
      throw new IllegalStateException("CORRECTNESS FAILURE: " + String.join("; ", problems));
    }
    log("checks passed: %s", checks);
  }

  private long[] stateRowsAndSum(String cp) {
    var state = spark.read().format("statestore").option("operatorId", 0).load(cp);
    org.apache.spark.sql.Row r =
        state
            .agg(
                org.apache.spark.sql.functions.count("*"),
                org.apache.spark.sql.functions.sum("value.count"))
            .first();
    return new long[] {r.getLong(0), r.isNullAt(1) ? 0 : r.getLong(1)};
  }

  /** Records every micro-batch of the query that read input. */
  private final class Recorder extends StreamingQueryListener {
    @Override
    public void onQueryStarted(QueryStartedEvent event) {}

    @Override
    public void onQueryProgress(QueryProgressEvent event) {
      StreamingQueryProgress p = event.progress();
      if (!p.id().equals(queryId) || p.numInputRows() == 0) {
        return;
      }
      Long trigger = p.durationMs().get("triggerExecution");
      Batch b =
          new Batch(
              p.batchId(),
              Instant.parse(p.timestamp()).toEpochMilli(),
              trigger == null ? p.batchDuration() : trigger,
              p.numInputRows(),
              new java.util.TreeMap<>(p.durationMs()));
      synchronized (allBatches) {
        allBatches.add(b);
      }
    }

    @Override
    public void onQueryTerminated(QueryTerminatedEvent event) {}
  }

  // ---- results ----

  private void writeResults(String failure) {
    try {
      List<Batch> baseline = new ArrayList<>();
      phases.stream().filter(p -> p.prepareMaster == null).forEach(p -> baseline.addAll(p.batches));
      Stats base = Stats.of(baseline);
      Map<String, Object> root = new LinkedHashMap<>();
      root.put("environment", environment);
      Map<String, Object> opts = new LinkedHashMap<>();
      opts.put("keys", options.keys());
      opts.put("batchRows", options.batchRows());
      opts.put("triggerMillis", options.triggerMillis());
      opts.put("window", options.window());
      opts.put("settle", options.settle());
      opts.put("from", options.from());
      opts.put("to", options.to());
      opts.put("prepareMasters", options.prepareMasters());
      opts.put("queryMaster", options.master());
      root.put("options", opts);
      root.put("failure", failure);
      root.put("warnings", warnings);
      root.put("buildMillis", buildMillis);
      root.put("baseline", base.toJson());
      List<Object> during = new ArrayList<>();
      for (Phase p : phases) {
        if (p.prepareMaster != null) {
          Stats s = Stats.of(p.batches);
          Map<String, Object> m = new LinkedHashMap<>();
          m.put("prepareMaster", p.prepareMaster);
          m.put("prepareWallMillis", p.prepare.get("wallMillis"));
          m.put("stats", s.toJson());
          m.put("meanRatio", s.mean() / base.mean());
          m.put("medianRatio", s.median() / base.median());
          m.put("p90Ratio", s.p90() / base.p90());
          m.put("withinAllowedRatio", s.mean() / base.mean() <= ALLOWED_RATIO);
          during.add(m);
        }
      }
      root.put("duringPrepare", during);
      root.put("checks", checks);
      root.put("phases", phases.stream().map(Phase::toJson).toList());
      Report.writeJson(jsonFile, root);
      Files.createDirectories(mdFile.getParent());
      Files.writeString(mdFile, markdown(base, failure), StandardCharsets.UTF_8);
    } catch (IOException | RuntimeException e) {
      System.err.println("bench: could not write results: " + e);
    }
  }

  private String markdown(Stats base, String failure) {
    StringBuilder out = new StringBuilder();
    out.append("# stateshift prepare on a live query, ")
        .append(environment.get("started"))
        .append("\n\n");
    out.append("`").append(environment.get("command")).append("`  \n");
    out.append(
        String.format(
            Locale.ROOT,
            "%s cores, query on %s, Java %s, Spark %s, -Xmx %d MB; stateshift at %s%s%n%n",
            environment.get("cores"),
            environment.get("master"),
            environment.get("java"),
            environment.get("spark"),
            (Long) environment.get("maxHeapBytes") >> 20,
            environment.get("gitCommit"),
            Boolean.TRUE.equals(environment.get("gitDirty"))
                ? " (working tree with uncommitted changes)"
                : ""));
    if (failure != null) {
      out.append("**BENCHMARK FAILED:** ").append(failure).append("\n\n");
    }
    out.append(
        String.format(
            Locale.ROOT,
            "Windowed count, RocksDB with changelog checkpointing, %d state partitions, %,d keys "
                + "(built up in %.1f s), then one file of %,d events per batch, processing-time "
                + "trigger %d ms. `./stateshift prepare --partitions %d` ran against the live "
                + "checkpoint as a separate process; a batch whose run overlapped it counts as "
                + "during. Batch duration = `durationMs.triggerExecution`, seconds. Ratios: during "
                + "/ baseline (all baseline windows together); issue #23 allows %.2f.%n%n",
            options.from(),
            options.keys(),
            buildMillis / 1e3,
            options.batchRows(),
            options.triggerMillis(),
            options.to(),
            ALLOWED_RATIO));
    out.append(
        "| window | prepare wall s | batches | mean s | median s | p90 s | max s | mean ratio |"
            + " median ratio | p90 ratio | load avg (start / end) |\n");
    out.append("|---|---|---|---|---|---|---|---|---|---|---|\n");
    for (Phase p : phases) {
      Stats s = Stats.of(p.batches);
      boolean during = p.prepareMaster != null;
      out.append(
          String.format(
              Locale.ROOT,
              "| %s | %s | %d | %s | %s | %s | %s | %s | %s | %s | %.1f / %.1f |%n",
              p.name,
              during ? Report.secs(((Number) p.prepare.get("wallMillis")).doubleValue()) : "-",
              s.n(),
              secs(s.mean()),
              secs(s.median()),
              secs(s.p90()),
              secs(s.max()),
              during ? ratio(s.mean() / base.mean()) : "-",
              during ? ratio(s.median() / base.median()) : "-",
              during ? ratio(s.p90() / base.p90()) : "-",
              p.loadBefore,
              p.loadAfter));
    }
    out.append(
        String.format(
            Locale.ROOT,
            "| all baseline windows | - | %d | %s | %s | %s | %s | 1 | 1 | 1 | - |%n%n",
            base.n(),
            secs(base.mean()),
            secs(base.median()),
            secs(base.p90()),
            secs(base.max())));
    for (Phase p : phases) {
      if (p.prepareMaster != null) {
        double r = Stats.of(p.batches).mean() / base.mean();
        out.append(
            String.format(
                Locale.ROOT,
                "- %s: mean batch %s the baseline's (%.2f); prepared batch %s, %,d rows, in %s s"
                    + " (wall, JVM start included)%n",
                p.name,
                r <= ALLOWED_RATIO ? "within 20% of" : "MORE than 20% above",
                r,
                p.prepare.get("preparedBatch"),
                ((Number) p.prepare.getOrDefault("rows", 0L)).longValue(),
                Report.secs(((Number) p.prepare.get("wallMillis")).doubleValue())));
      }
    }
    if (!checks.isEmpty()) {
      out.append("\nChecks: ").append(checks).append('\n');
    }
    if (!warnings.isEmpty()) {
      out.append("\n## Warnings\n\n")
          .append(String.join("\n", warnings.stream().map(w -> "- " + w).toList()))
          .append('\n');
    }
    return out.toString();
  }

  private static String secs(double millis) {
    return Double.isNaN(millis) ? "n/a" : Report.secs(millis);
  }

  private static String ratio(double r) {
    return Double.isNaN(r) ? "n/a" : String.format(Locale.ROOT, "%.2f", r);
  }

  // ---- helpers ----

  private static double loadAverage() {
    return ManagementFactory.getOperatingSystemMXBean().getSystemLoadAverage();
  }

  /** Runs a command from the project folder; returns its exit code and wall milliseconds. */
  private long[] runProcess(List<String> command, Path logFile) {
    return runProcess(command, null, logFile);
  }

  private long[] runProcess(List<String> command, Path stdout, Path stderr) {
    ProcessBuilder pb = new ProcessBuilder(command).directory(projectDir.toFile());
    BenchLine.into(pb);
    if (stdout == null) {
      pb.redirectErrorStream(true);
      pb.redirectOutput(ProcessBuilder.Redirect.to(stderr.toFile()));
    } else {
      pb.redirectOutput(ProcessBuilder.Redirect.to(stdout.toFile()));
      pb.redirectError(ProcessBuilder.Redirect.to(stderr.toFile()));
    }
    try {
      long t = System.nanoTime();
      Process p = pb.start();
      if (!p.waitFor(30, TimeUnit.MINUTES)) {
        p.destroyForcibly();
        throw new IllegalStateException(command + " timed out");
      }
      return new long[] {p.exitValue(), (System.nanoTime() - t) / 1_000_000};
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException(e);
    }
  }

  private void warn(String message) {
    warnings.add(message);
    System.err.println("bench: WARNING " + message);
  }
}
