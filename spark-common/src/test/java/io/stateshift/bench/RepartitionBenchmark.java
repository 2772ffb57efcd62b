package io.stateshift.bench;

import static io.stateshift.bench.BenchOutput.log;

import io.stateshift.CheckpointReport;
import io.stateshift.RepartitionResult;
import io.stateshift.StateChange;
import io.stateshift.StateShift;
import io.stateshift.StateShiftException;
import io.stateshift.StateShiftExtensions;
import io.stateshift.config.StateShiftConf;
import io.stateshift.testing.LineApis;
import io.stateshift.testing.StandaloneCluster;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.LocalDateTime;
import java.time.format.DateTimeFormatter;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.TimeUnit;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.execution.streaming.state.StateStore$;
import org.apache.spark.sql.streaming.StreamingQuery;

/**
 * Side-by-side benchmark of state repartitioning, on fresh copies of the same checkpoint:
 *
 * <ol>
 *   <li>stateshift: {@code
 *       StateShift.get(spark).repartitionState(copy).toPartitions(to).execute()};
 *   <li>Spark's built-in offline runner, {@code streamingCheckpointManager().repartition(copy, to,
 *       true)} (RocksDB only);
 *   <li>replay: a new checkpoint and the same query over the whole input with the new count;
 *   <li>floor: read every state row once and write the same bytes once to plain files.
 * </ol>
 *
 * Run it with {@code bench/run} (see bench/README.md); it is not a test and never runs in {@code
 * mvn test}. stateshift's result is checked after every run: same rows per store as before, every
 * key in its Spark partition, the new count; a wrong result stops the benchmark with exit code 1.
 */
public final class RepartitionBenchmark {

  /** Command-line options. */
  record Options(
      List<Long> keys,
      List<Workload.Shape> shapes,
      List<Workload.Provider> providers,
      List<int[]> directions,
      int repeat,
      boolean cold,
      String coldHeap,
      int files,
      Path workDir,
      Path outDir,
      List<String> methods,
      boolean keep,
      boolean warmup,
      String master,
      double tail,
      String fs,
      List<String> argv) {

    static Options parse(String[] args) {
      Map<String, String> values = new LinkedHashMap<>();
      List<String> flags = new ArrayList<>();
      for (int i = 0; i < args.length; i++) {
        String a = args[i];
        if (!a.startsWith("--")) {
          throw new IllegalArgumentException("unexpected argument '" + a + "'");
        }
        String key = a.substring(2);
        int eq = key.indexOf('=');
        if (eq > 0) {
          values.put(key.substring(0, eq), key.substring(eq + 1));
        } else if (List.of("cold", "keep", "help", "no-warmup").contains(key)) {
          flags.add(key);
        } else if (i + 1 < args.length) {
          values.put(key, args[++i]);
        } else {
          throw new IllegalArgumentException("--" + key + " needs a value");
        }
      }
      if (flags.contains("help")) {
        System.out.println(USAGE);
        System.exit(0);
      }
      List<String> known =
          List.of(
              "keys",
              "shapes",
              "providers",
              "directions",
              "repeat",
              "cold-heap",
              "files",
              "work-dir",
              "out",
              "methods",
              "master",
              "tail",
              "fs");
      for (String k : values.keySet()) {
        if (!known.contains(k)) {
          throw new IllegalArgumentException("unknown option --" + k + "\n" + USAGE);
        }
      }
      List<int[]> directions = new ArrayList<>();
      for (String d : split(values.getOrDefault("directions", "8:16,200:8,200:64,200:400"))) {
        String[] p = d.split("->|:");
        directions.add(new int[] {Integer.parseInt(p[0].trim()), Integer.parseInt(p[1].trim())});
      }
      List<String> methods =
          split(
              values.getOrDefault(
                  "methods",
                  String.join(
                      ",",
                      Results.WARM.stream()
                          .filter(m -> BenchLine.hasBuiltInRunner() || !m.equals(Results.BUILTIN))
                          .toList())));
      for (String m : methods) {
        if (!Results.ALL_WARM.contains(m)) {
          throw new IllegalArgumentException("unknown method '" + m + "' " + Results.ALL_WARM);
        }
        if (m.equals(Results.BUILTIN) && !BenchLine.hasBuiltInRunner()) {
          throw new IllegalArgumentException(
              "--methods builtin: the Spark "
                  + BenchLine.name()
                  + " line has no built-in repartition runner (it came with Spark 4.2);"
                  + " compare with --methods replay (a new checkpoint and the same query over"
                  + " the whole input with the new partition count)");
        }
      }
      return new Options(
          split(values.getOrDefault("keys", "200000,1000000")).stream()
              .map(s -> Long.parseLong(s.replace("_", "")))
              .toList(),
          split(values.getOrDefault("shapes", "windowed,dedup")).stream()
              .map(Workload.Shape::parse)
              .toList(),
          split(values.getOrDefault("providers", "rocksdb,hdfs")).stream()
              .map(Workload.Provider::parse)
              .toList(),
          directions,
          Integer.parseInt(values.getOrDefault("repeat", "3")),
          flags.contains("cold"),
          values.getOrDefault("cold-heap", "2g"),
          Integer.parseInt(values.getOrDefault("files", "4")),
          Path.of(
                  values.getOrDefault(
                      "work-dir", System.getProperty("java.io.tmpdir") + "/stateshift-bench"))
              .toAbsolutePath(),
          Path.of(values.getOrDefault("out", "bench/results")).toAbsolutePath(),
          methods,
          flags.contains("keep"),
          !flags.contains("no-warmup"),
          values.getOrDefault("master", "local[2]"),
          Double.parseDouble(values.getOrDefault("tail", "0.01")),
          remoteFs(values.getOrDefault("fs", RemoteCheckpoints.LOCAL), methods, flags),
          List.of(args));
    }

    /** {@code --fs}, checked against the methods that can run on a copy elsewhere. */
    private static String remoteFs(String value, List<String> methods, List<String> flags) {
      String fs = RemoteCheckpoints.parse(value);
      List<String> remote = List.of(Results.STATESHIFT, Results.UNCHECKED, Results.MIGRATE);
      if (!fs.equals(RemoteCheckpoints.LOCAL)
          && (!remote.containsAll(methods) || flags.contains("cold"))) {
        throw new IllegalArgumentException(
            "--fs " + fs + " times the methods " + remote + " only, without --cold");
      }
      return fs;
    }

    private static List<String> split(String s) {
      return List.of(s.split(",")).stream().map(String::trim).filter(x -> !x.isEmpty()).toList();
    }
  }

  static final String USAGE =
      """
      usage: bench/run [options]
        --keys 200000,1000000        distinct state keys per checkpoint (even; 3000000, 10000000...)
        --shapes windowed,dedup      windowed count (window 5 min + key, watermark) / dropDuplicates
                                     / join (stream-stream join; --keys k = 2k input rows per side)
        --providers rocksdb,hdfs     also: rocksdb-changelog
        --directions 8:16,200:8,200:64,200:400   from:to partition counts (200: Spark's
                                     default; also e.g. 16:6)
        --repeat 3                   timed runs per method (min and median reported)
        --methods stateshift,builtin,replay,floor   (builtin: Spark 4.2's own runner, on the
                                     4.2 line only) also: unchecked (stateshift without the
                                     placement check), ondemand,restart (restart the query
                                     with spark.sql.streaming.stateStore.partitions set / unset),
                                     migrate (stateshift migrate to the other provider),
                                     prepared (prepare, a tail batch, then the repartition
                                     from the prepared layout; hdfs, rocksdb-changelog),
                                     erase (edit deleting ~1% of the keys, count kept)
        --tail 0.01                  share of the keys the prepared method's tail batch updates
        --cold                       also time fresh processes: ./stateshift repartition (of the
                                     same Spark line) vs the built-in runner in a fresh java
                                     (4.2 only; slow)
        --cold-heap 2g               -Xmx of the cold processes (./stateshift's default)
        --files 4                    input files = micro-batches of the query
        --work-dir /tmp/stateshift-bench   checkpoints, copies and input (deleted unless --keep)
        --out bench/results          where the .md and .json results go
        --master local[2]            or standalone: a Master and two Workers of one core
                                     each on loopback, started by the benchmark
        --fs local                   where the timed copies live: local, hdfs (a MiniDFSCluster
                                     in this JVM) or s3 (the loopback S3 server); hdfs and s3
                                     time stateshift, unchecked and migrate only
        --no-warmup                  skip the untimed warm-up (every method once on 2,000 keys)
        --keep                       keep input and checkpoints in the work dir, and reuse
                                     the ones a previous run with --keep left there
      Heap of the benchmark JVM: BENCH_HEAP (default 6g) or bench/run --heap 6g.""";

  private final Options options;
  private final SparkSession spark;
  private final StateShift shift;
  private final StageRecorder stages = new StageRecorder();
  private final Path projectDir = Path.of("").toAbsolutePath();
  private final List<Results.Case> cases = new ArrayList<>();
  private final Map<String, Object> environment = new LinkedHashMap<>();
  private final Path mdFile;
  private final Path jsonFile;
  private final List<String> warnings = new ArrayList<>();

  /** {@code --master standalone}: a Master and two Workers of one core each, as child JVMs. */
  static final String STANDALONE = "standalone";

  /** The cold built-in runner's main class: in the test classes of the lines that have one. */
  static final String BUILTIN_MAIN = "io.stateshift.bench.BuiltinRepartitionMain";

  /** The standalone cluster with --master standalone; null otherwise. */
  private final StandaloneCluster cluster;

  /** The file system of the timed copies with --fs hdfs|s3; null on the local disk. */
  private final RemoteCheckpoints remote;

  private RepartitionBenchmark(Options options) {
    this.options = options;
    String stamp = LocalDateTime.now().format(DateTimeFormatter.ofPattern("yyyy-MM-dd-HHmmss"));
    mdFile = options.outDir().resolve("repartition-" + stamp + ".md");
    jsonFile = options.outDir().resolve("repartition-" + stamp + ".json");
    SparkSession.Builder builder = SparkSession.builder();
    if (options.methods().contains(Results.ONDEMAND)) {
      builder.config("spark.sql.extensions", "io.stateshift.StateShiftExtensions");
    }
    String master = options.master();
    if (master.equals(STANDALONE)) {
      cluster = startCluster(builder);
      master = cluster.masterUrl();
    } else {
      cluster = null;
    }
    spark =
        builder
            .master(master)
            .appName("stateshift repartition benchmark")
            .config("spark.ui.enabled", "false")
            .config("spark.sql.session.timeZone", "UTC")
            // no background snapshotting or unloading of state stores in the middle of a timing
            .config("spark.sql.streaming.stateStore.maintenanceInterval", "600s")
            .getOrCreate();
    spark.sparkContext().setLogLevel("WARN");
    spark.streams(); // the StateStoreCoordinator, which RocksDB stores and the built-in runner need
    spark.sparkContext().addSparkListener(stages);
    shift = StateShift.get(spark);
    try {
      remote =
          options.fs().equals(RemoteCheckpoints.LOCAL)
              ? null
              : RemoteCheckpoints.start(
                  options.fs(),
                  options.workDir().resolve("remote-fs"),
                  spark.sparkContext().hadoopConfiguration());
    } catch (Exception e) {
      spark.stop();
      throw new IllegalStateException("cannot start the --fs " + options.fs() + " server", e);
    }
    environment.put("started", LocalDateTime.now().toString());
    environment.put("command", "bench/run " + String.join(" ", options.argv()));
    environment.put("cores", Runtime.getRuntime().availableProcessors());
    environment.put("master", spark.sparkContext().master());
    environment.put("checkpointFs", options.fs());
    environment.put("java", System.getProperty("java.version"));
    environment.put("spark", spark.version());
    environment.put("sparkLine", BenchLine.name());
    environment.put("maxHeapBytes", Runtime.getRuntime().maxMemory());
    environment.put(
        "repetitionsText",
        options.repeat()
            + " warm run(s) per method"
            + (options.cold() ? ", cold runs as well" : ""));
    environment.put("inputFiles", options.files());
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
    environment.put(
        "gitModifiedMainFiles",
        status.isEmpty()
            ? List.of()
            : List.of(status.split("\n")).stream().map(String::trim).toList());
  }

  /**
   * Starts the standalone cluster the tests start (a Master and two Workers on loopback, executors
   * of one core and 640 MB) and points {@code builder} at it, with stateshift's library jar (built
   * by {@code ./stateshift classpath}, which bench/run runs first) shipped to the executors.
   */
  private StandaloneCluster startCluster(SparkSession.Builder builder) {
    Path jar = projectDir.resolve(BenchLine.module() + "/target/stateshift.jar");
    if (!Files.isRegularFile(jar)) {
      throw new IllegalStateException(jar + " is missing: run ./stateshift classpath first");
    }
    System.setProperty("stateshift.projectDir", projectDir.toString());
    Path base = options.workDir().resolve("standalone");
    StandaloneCluster started;
    try {
      Dirs.delete(base);
      started = StandaloneCluster.start(base, base.resolve("logs"), CLUSTER_PORT, 2);
    } catch (Exception e) {
      throw new IllegalStateException("cannot start the standalone cluster", e);
    }
    started.appConf(base.resolve("events")).forEach(builder::config);
    builder.config("spark.eventLog.enabled", "false");
    builder.config("spark.jars", jar.toUri().toString());
    return started;
  }

  /** The first of the ports the benchmark's standalone cluster takes (the tests use others). */
  static final int CLUSTER_PORT = 19700;

  public static void main(String[] args) {
    Options options;
    try {
      options = Options.parse(args);
    } catch (IllegalArgumentException e) {
      System.err.println(e.getMessage());
      System.exit(2);
      return;
    }
    RepartitionBenchmark bench = new RepartitionBenchmark(options);
    int exit = 0;
    try {
      bench.runAll();
    } catch (Throwable t) {
      exit = 1;
      System.err.println();
      System.err.println("BENCHMARK FAILED: " + t);
      t.printStackTrace();
      bench.writeResults(String.valueOf(t));
    } finally {
      bench.spark.stop();
      if (bench.cluster != null) {
        try {
          bench.cluster.close();
        } catch (Exception e) {
          System.err.println("stopping the standalone cluster: " + e);
        }
      }
      if (bench.remote != null) {
        try {
          bench.remote.close();
        } catch (Exception e) {
          System.err.println("stopping the --fs server: " + e);
        }
      }
    }
    System.exit(exit);
  }

  private void runAll() throws IOException {
    Files.createDirectories(options.workDir());
    if (options.cold()) {
      requireStateshiftScript();
    }
    log("work dir %s, results %s", options.workDir(), mdFile);
    if (options.warmup()) {
      warmUp();
    }
    for (long keys : options.keys()) {
      Path input = options.workDir().resolve("input-" + keys);
      long t = System.nanoTime();
      if (options.keep() && Files.isDirectory(input)) {
        log("reusing the kept input %s", input); // --keep: a previous run with --keep wrote it
      } else {
        Workload.writeInput(spark, input, keys, options.files());
      }
      log(
          "input for %,d keys: %d files, %.1f MB, written in %.1f s",
          keys, options.files(), Dirs.size(input) / 1048576.0, (System.nanoTime() - t) / 1e9);
      for (Workload.Shape shape : options.shapes()) {
        for (Workload.Provider provider : options.providers()) {
          Map<Integer, Path> masters = new TreeMap<>();
          Map<Integer, long[]> builds = new TreeMap<>();
          try {
            for (int[] direction : options.directions()) {
              Results.Case c = new Results.Case();
              c.shape = shape.label;
              c.provider = provider.label;
              c.keys = keys;
              c.from = direction[0];
              c.to = direction[1];
              c.fs = options.fs();
              cases.add(c);
              Path master =
                  masters.computeIfAbsent(
                      c.from,
                      from -> {
                        Path cp =
                            options
                                .workDir()
                                .resolve(
                                    String.format(
                                        "master-%d-%s-%s-%d",
                                        keys,
                                        shape.name().toLowerCase(Locale.ROOT),
                                        provider.name().toLowerCase(Locale.ROOT),
                                        from));
                        builds.put(from, build(shape, provider, input, cp, from));
                        return cp;
                      });
              c.buildMillis = builds.get(c.from)[0];
              c.buildBatches = (int) builds.get(c.from)[1];
              runCase(c, shape, provider, input, master, options.repeat(), options.cold());
              writeResults(null);
            }
          } finally {
            if (!options.keep()) {
              masters.values().forEach(Dirs::delete);
            }
          }
        }
      }
      if (!options.keep()) {
        Dirs.delete(input);
      }
    }
    writeResults(null);
    System.out.println();
    System.out.println(Files.readString(mdFile));
    System.out.println("results: " + mdFile);
    System.out.println("         " + jsonFile);
  }

  /**
   * Runs every method once, untimed, on 2,000 keys for each shape and provider, so that class
   * loading, code generation and JIT of the first timed run do not count against one method.
   */
  private void warmUp() {
    long t = System.nanoTime();
    long keys = 2000;
    Path input = options.workDir().resolve("warmup-input");
    Path cp = options.workDir().resolve("warmup-master");
    Workload.writeInput(spark, input, keys, options.files());
    int[] direction = options.directions().get(0);
    for (Workload.Shape shape : options.shapes()) {
      for (Workload.Provider provider : options.providers()) {
        Results.Case c = new Results.Case();
        c.shape = shape.label;
        c.provider = provider.label;
        c.keys = keys;
        c.from = direction[0];
        c.to = direction[1];
        Dirs.delete(cp); // never reuse a warm-up checkpoint, even with --keep
        build(shape, provider, input, cp, c.from);
        runCase(c, shape, provider, input, cp, 1, false);
        Dirs.delete(cp);
      }
    }
    Dirs.delete(input);
    log("warm-up done in %.1f s", (System.nanoTime() - t) / 1e9);
  }

  // ---- building the checkpoint ----

  private long[] build(
      Workload.Shape shape, Workload.Provider provider, Path input, Path cp, int partitions) {
    if (options.keep() && Files.isDirectory(cp.resolve("commits"))) {
      log("reusing the kept checkpoint %s (build time not measured)", cp.getFileName());
      return new long[] {0, 0};
    }
    Dirs.delete(cp);
    unloadStateStores();
    long t = System.nanoTime();
    int batches =
        Workload.runQuery(spark, shape, provider, input, cp, partitions).recentProgress().length;
    long millis = (System.nanoTime() - t) / 1_000_000;
    unloadStateStores();
    log(
        "built %s (%d partitions, %d batches) in %.1f s",
        cp.getFileName(), partitions, batches, millis / 1000.0);
    return new long[] {millis, batches};
  }

  // ---- one case: all methods, interleaved ----

  private void runCase(
      Results.Case c,
      Workload.Shape shape,
      Workload.Provider provider,
      Path input,
      Path master,
      int repeat,
      boolean cold) {
    String name =
        String.format(
            Locale.ROOT, "%s %s %,d keys %d->%d", c.shape, c.providerLabel(), c.keys, c.from, c.to);
    c.stateBytes = Dirs.size(master.resolve("state"));
    c.stateFiles = Dirs.fileCount(master.resolve("state"));
    CheckpointReport before = shift.inspect(master.toString());
    // stateshift's inspect counts only the operators it supports; Spark's source counts joins
    Map<String, Long> rowsBefore =
        shape == Workload.Shape.JOIN ? sparkRowsPerStore(master) : rowsPerStore(before);
    c.rowsBefore = rowsBefore.values().stream().mapToLong(Long::longValue).sum();
    c.storesPerPartition = Math.max(1, rowsBefore.size());
    if (before.partitions() != c.from || c.rowsBefore != shape.stateRows(c.keys)) {
      throw new IllegalStateException(
          name
              + ": the built checkpoint has "
              + before.partitions()
              + " partitions and "
              + c.rowsBefore
              + " state rows; expected "
              + c.from
              + " and "
              + shape.stateRows(c.keys)
              + ". The workload generator is wrong.");
    }
    log(
        "%s: state %.1f MB in %d files, %,d rows",
        name, c.stateBytes / 1048576.0, c.stateFiles, c.rowsBefore);
    List<String> methods = new ArrayList<>();
    for (String m : options.methods()) {
      if (m.equals(Results.BUILTIN) && !provider.rocksDb) {
        c.method(m).skipped = "the built-in runner supports RocksDB only";
        continue;
      }
      if (m.equals(Results.ERASE) && shape == Workload.Shape.JOIN) {
        c.method(m).skipped =
            "a join is erased by its key fields, which this workload does not name";
        continue;
      }
      c.method(m);
      methods.add(m);
    }
    for (int rep = 0; rep < repeat; rep++) {
      for (int i = 0; i < methods.size(); i++) {
        // rotate the order each repetition, so no method always runs first
        String method = methods.get((i + rep) % methods.size());
        Results.Method m = c.method(method);
        if (m.error != null) {
          continue;
        }
        try {
          Results.Run run =
              switch (method) {
                case Results.STATESHIFT -> timeStateshift(c, master, rowsBefore);
                case Results.UNCHECKED -> timeWithoutPlacementCheck(c, master, rowsBefore);
                case Results.MIGRATE -> timeMigrate(c, provider, master, rowsBefore);
                case Results.PREPARED ->
                    timePrepared(c, shape, provider, input, master, rowsBefore);
                case Results.ERASE -> timeErase(c, master);
                case Results.BUILTIN -> timeBuiltin(c, shape, master, rowsBefore);
                case Results.REPLAY -> timeReplay(c, shape, provider, input);
                case Results.FLOOR -> timeFloor(c, master);
                case Results.ONDEMAND ->
                    timeRestart(c, shape, provider, input, master, rowsBefore, true);
                case Results.RESTART ->
                    timeRestart(c, shape, provider, input, master, rowsBefore, false);
                default -> throw new IllegalStateException(method);
              };
          run.repetition = rep + 1;
          m.runs.add(run);
          log(
              "%s: %-10s run %d: %7.2f s  peak heap %,d MB%s",
              name,
              method,
              rep + 1,
              run.millis / 1000.0,
              run.heapPeakBytes >> 20,
              run.phases.isEmpty() ? "" : "  phases " + run.phases);
        } catch (CorrectnessFailure e) {
          throw e;
        } catch (StateShiftException e) {
          if (!e.reason().isBadInput()) {
            throw e;
          }
          // a clear refusal (an operator stateshift does not support yet): n/a, not a failure
          m.skipped = "refused: " + e.getMessage();
          log("%s: %s refused: %s", name, method, e.getMessage());
        } catch (RuntimeException e) {
          if (method.equals(Results.STATESHIFT)) {
            throw e;
          }
          m.error = String.valueOf(e);
          warn(name + ": " + method + " failed: " + e);
          e.printStackTrace();
        }
      }
    }
    if (cold) {
      boolean coldBuiltin = provider.rocksDb && BenchLine.hasBuiltInRunner();
      if (!BenchLine.hasBuiltInRunner()) {
        c.method(Results.COLD_BUILTIN).skipped =
            "the Spark " + BenchLine.name() + " line has no built-in runner";
      } else if (!provider.rocksDb) {
        c.method(Results.COLD_BUILTIN).skipped = "the built-in runner supports RocksDB only";
      }
      Results.Method warmStateshift = c.method(Results.STATESHIFT);
      if (warmStateshift.skipped != null) {
        c.method(Results.COLD_STATESHIFT).skipped = warmStateshift.skipped;
      }
      for (int rep = 0; rep < repeat; rep++) {
        boolean builtinFirst = rep % 2 == 1; // alternate which process runs first
        if (builtinFirst && coldBuiltin) {
          timeColdBuiltin(c, provider, master, rep + 1, name);
        }
        if (warmStateshift.skipped == null) {
          timeColdStateshift(c, master, rowsBefore, rep + 1, name);
        }
        if (!builtinFirst && coldBuiltin) {
          timeColdBuiltin(c, provider, master, rep + 1, name);
        }
      }
    }
  }

  // ---- the four warm methods ----

  /** stateshift with the placement check off (the switch it keeps for measuring only). */
  private Results.Run timeWithoutPlacementCheck(
      Results.Case c, Path master, Map<String, Long> rowsBefore) {
    spark.conf().set(StateShiftConf.PLACEMENT_CHECK.key(), "false");
    try {
      return timeStateshift(c, master, rowsBefore);
    } finally {
      spark.conf().unset(StateShiftConf.PLACEMENT_CHECK.key());
    }
  }

  private Results.Run timeStateshift(Results.Case c, Path master, Map<String, Long> rowsBefore) {
    // a fresh copy looks recently written; its query is stopped
    return timeStateChange(
        "stateshift",
        c,
        master,
        rowsBefore,
        copy -> shift.repartitionState(copy).toPartitions(c.to).assumeStopped(),
        null);
  }

  /** stateshift moving the state to the other provider, with the case's partition change. */
  private Results.Run timeMigrate(
      Results.Case c, Workload.Provider provider, Path master, Map<String, Long> rowsBefore) {
    String target = provider.rocksDb ? "hdfs" : "rocksdb";
    return timeStateChange(
        "migrate to " + target,
        c,
        master,
        rowsBefore,
        copy -> shift.migrateState(copy).toProvider(target).toPartitions(c.to).assumeStopped(),
        target.equals("hdfs") ? "HDFSBacked" : "RocksDB");
  }

  /**
   * The repartition at restart from a prepared layout: untimed, {@code prepare} on a fresh copy,
   * then one more batch over an input file that updates {@code --tail} of the keys (the tail);
   * timed, the repartition, which must take the prepared path and replay the tail. Compare with
   * {@link #timeStateshift}, the full path over the same state.
   */
  private Results.Run timePrepared(
      Results.Case c,
      Workload.Shape shape,
      Workload.Provider provider,
      Path input,
      Path master,
      Map<String, Long> rowsBefore) {
    Path copy = freshCopy(master);
    shift.prepareState(copy.toString()).toPartitions(c.to).execute();
    Path tailFile = Workload.writeTail(spark, input, c.keys, options.tail());
    try {
      Workload.runQuery(spark, shape, provider, input, copy, c.from);
    } finally {
      Dirs.delete(tailFile);
      unloadStateStores();
    }
    Results.Run run = new Results.Run();
    RepartitionResult result;
    prepare();
    try (HeapSampler heap = HeapSampler.start()) {
      long t = System.nanoTime();
      result = shift.repartitionState(copy.toString()).toPartitions(c.to).assumeStopped().execute();
      run.millis = (System.nanoTime() - t) / 1_000_000;
      record(run, heap);
    }
    run.phases = new LinkedHashMap<>(result.phaseMillis());
    run.check.put("path", result.path().toString());
    run.check.put("rowsReplayed", result.path().rowsReplayed());
    run.check.put("tailShare", options.tail());
    String problem =
        !result.path().prepared()
            ? "the prepared layout was not used: " + result.path()
            : check(copy, c.to, rowsBefore, run);
    if (problem != null) {
      throw new CorrectnessFailure(
          "prepared " + c.from + "->" + c.to + " on " + copy + ": " + problem + " (copy kept)");
    }
    Dirs.delete(copy);
    return run;
  }

  /** The keys the erase deletes: about 1% of them, wherever they are. */
  static final String ERASE_PREDICATE = "pmod(hash(key), 100) = 0";

  /**
   * stateshift's edit deleting about 1% of the keys of a fresh copy, the partition count kept;
   * checked: every row read, about 1% deleted, and inspect counts what the edit kept.
   */
  private Results.Run timeErase(Results.Case c, Path master) {
    String copy = remote != null ? remote.copy(master) : freshCopy(master).toString();
    Results.Run run = new Results.Run();
    RepartitionResult result;
    prepare();
    try (HeapSampler heap = HeapSampler.start()) {
      long t = System.nanoTime();
      result = shift.editState(copy).deleteWhere(ERASE_PREDICATE).assumeStopped().execute();
      run.millis = (System.nanoTime() - t) / 1_000_000;
      record(run, heap);
    }
    run.phases = new LinkedHashMap<>(result.phaseMillis());
    long read = result.stores().stream().mapToLong(RepartitionResult.StoreMove::rowsRead).sum();
    long kept = result.rowsMoved();
    run.check.put("deleted", read - kept);
    CheckpointReport after = shift.inspect(copy);
    long rowsAfter = rowsPerStore(after).values().stream().mapToLong(Long::longValue).sum();
    String problem =
        read != c.rowsBefore
            ? "read " + read + " rows, the checkpoint had " + c.rowsBefore
            : read - kept < read / 200 || read - kept > read / 50
                ? "deleted " + (read - kept) + " of " + read + " rows, not about 1%"
                : after.partitions() != c.from
                    ? "inspect reports " + after.partitions() + " partitions"
                    : rowsAfter != kept
                        ? "inspect counts " + rowsAfter + " rows, kept " + kept
                        : null;
    if (problem != null) {
      throw new CorrectnessFailure("erase on " + copy + ": " + problem + " (copy kept)");
    }
    if (remote != null) {
      remote.delete(copy);
    } else {
      Dirs.delete(Path.of(copy));
    }
    return run;
  }

  /**
   * Times one state change of a fresh copy and checks it: rows moved, then {@link #check}, and the
   * provider inspect reports when {@code providerNamed} is not null.
   */
  private Results.Run timeStateChange(
      String name,
      Results.Case c,
      Path master,
      Map<String, Long> rowsBefore,
      java.util.function.Function<String, StateChange<?>> change,
      String providerNamed) {
    String copy = remote != null ? remote.copy(master) : freshCopy(master).toString();
    Results.Run run = new Results.Run();
    RepartitionResult result;
    prepare();
    try (HeapSampler heap = HeapSampler.start()) {
      long t = System.nanoTime();
      result = change.apply(copy).execute();
      run.millis = (System.nanoTime() - t) / 1_000_000;
      record(run, heap);
    }
    run.phases = new LinkedHashMap<>(result.phaseMillis());
    String problem =
        result.rowsMoved() != c.rowsBefore
            ? "reported " + result.rowsMoved() + " rows moved, the checkpoint had " + c.rowsBefore
            : check(copy, c.to, rowsBefore, run);
    if (problem == null && providerNamed != null) {
      String providerAfter = shift.inspect(copy).stateStoreProvider();
      run.check.put("provider", providerAfter);
      if (!providerAfter.contains(providerNamed)) {
        problem = "inspect reports the provider " + providerAfter;
      }
    }
    if (problem != null) {
      throw new CorrectnessFailure(
          name
              + " "
              + c.from
              + "->"
              + c.to
              + " on "
              + copy
              + ": "
              + problem
              + " (copy kept for inspection)");
    }
    if (remote != null) {
      remote.delete(copy);
    } else {
      Dirs.delete(Path.of(copy));
    }
    return run;
  }

  private Results.Run timeBuiltin(
      Results.Case c, Workload.Shape shape, Path master, Map<String, Long> rowsBefore) {
    Path copy = freshCopy(master);
    Results.Run run = new Results.Run();
    prepare();
    try (HeapSampler heap = HeapSampler.start()) {
      long t = System.nanoTime();
      spark.streams(); // needs the StateStoreCoordinator
      LineApis.builtInRepartition(spark, copy.toString(), c.to);
      run.millis = (System.nanoTime() - t) / 1_000_000;
      record(run, heap);
    } finally {
      unloadStateStores();
    }
    String what = c.shape + " " + c.provider + " " + c.keys + " keys " + c.from + "->" + c.to;
    String problem;
    try {
      problem =
          shape == Workload.Shape.JOIN
              ? checkJoinWithSpark(copy, c.to, rowsBefore, run)
              : check(copy, c.to, rowsBefore, run);
    } catch (RuntimeException e) {
      // stateshift's inspect may refuse what the built-in runner leaves; ask Spark's own source
      run.check.put("inspectRefused", String.valueOf(e.getMessage()));
      warnOnce(
          "stateshift inspect refuses the checkpoint the built-in runner left ("
              + what
              + "), checked with Spark's statestore source instead: "
              + e.getMessage());
      try {
        problem = checkWithSpark(copy, c.to, c.rowsBefore, run);
      } catch (RuntimeException e2) {
        run.check.put("unverified", String.valueOf(e2));
        problem = "could not be verified: " + e2;
      }
    }
    if (problem != null) {
      warn(what + ": built-in result check: " + problem);
    }
    Dirs.delete(copy);
    return run;
  }

  private Results.Run timeReplay(
      Results.Case c, Workload.Shape shape, Workload.Provider provider, Path input) {
    Path cp = options.workDir().resolve("replay-checkpoint");
    Dirs.delete(cp);
    Results.Run run = new Results.Run();
    prepare();
    try (HeapSampler heap = HeapSampler.start()) {
      long t = System.nanoTime();
      int batches =
          Workload.runQuery(spark, shape, provider, input, cp, c.to).recentProgress().length;
      run.millis = (System.nanoTime() - t) / 1_000_000;
      record(run, heap);
      run.check.put("batches", batches);
    } finally {
      unloadStateStores();
    }
    CheckpointReport after = shift.inspect(cp.toString());
    long rows = rowsPerStore(after).values().stream().mapToLong(Long::longValue).sum();
    run.check.put("rows", rows);
    run.check.put("partitions", after.partitions());
    if (rows != c.rowsBefore || after.partitions() != c.to) {
      warn(
          "replay produced "
              + rows
              + " rows in "
              + after.partitions()
              + " partitions, expected "
              + c.rowsBefore
              + " in "
              + c.to);
    }
    Dirs.delete(cp);
    return run;
  }

  /**
   * Restarts the stopped query on a fresh copy, over the same input (so no new data: the query
   * starts and stops without a batch), with {@code spark.sql.streaming.stateStore.partitions} set
   * to the new count (on-demand repartition at start) or unset (the plain restart it adds to).
   */
  private Results.Run timeRestart(
      Results.Case c,
      Workload.Shape shape,
      Workload.Provider provider,
      Path input,
      Path master,
      Map<String, Long> rowsBefore,
      boolean onDemand) {
    Path copy = freshCopy(master);
    Results.Run run = new Results.Run();
    prepare();
    try (HeapSampler heap = HeapSampler.start()) {
      if (onDemand) {
        spark.conf().set(StateShiftExtensions.STATE_PARTITIONS, Integer.toString(c.to));
      }
      long t = System.nanoTime();
      StreamingQuery query;
      try {
        query = Workload.runQuery(spark, shape, provider, input, copy, c.from);
      } catch (RuntimeException e) {
        throw refusalIn(e);
      }
      run.millis = (System.nanoTime() - t) / 1_000_000;
      record(run, heap);
      run.check.put("batches", query.recentProgress().length);
      if (onDemand) {
        // the repartition's own phases, and the rest of the restart around them
        StateShiftExtensions.lastRepartition(query.id())
            .ifPresent(
                result -> {
                  run.phases = new LinkedHashMap<>(result.phaseMillis());
                  run.phases.put("query", run.millis - result.totalMillis());
                });
      }
    } finally {
      spark.conf().unset(StateShiftExtensions.STATE_PARTITIONS);
      unloadStateStores();
    }
    if (onDemand) {
      String problem = check(copy, c.to, rowsBefore, run);
      if (problem != null) {
        throw new CorrectnessFailure(
            "on-demand "
                + c.from
                + "->"
                + c.to
                + " on "
                + copy
                + ": "
                + problem
                + " (copy kept for inspection)");
      }
    }
    Dirs.delete(copy);
    return run;
  }

  /** The StateShiftException that refused the query's start, if that is what {@code e} is. */
  private static RuntimeException refusalIn(RuntimeException e) {
    for (Throwable t = e; t != null; t = t.getCause()) {
      if (t instanceof StateShiftException refusal) {
        return refusal;
      }
    }
    return e;
  }

  private Results.Run timeFloor(Results.Case c, Path master) {
    Path copy = freshCopy(master);
    Path out = options.workDir().resolve("floor-out");
    Dirs.delete(out);
    Results.Run run = new Results.Run();
    long rows;
    prepare();
    try (HeapSampler heap = HeapSampler.start()) {
      long t = System.nanoTime();
      rows = FloorCopy.run(spark, copy, out);
      run.millis = (System.nanoTime() - t) / 1_000_000;
      record(run, heap);
    } finally {
      unloadStateStores();
    }
    run.check.put("rows", rows);
    run.check.put("bytesWritten", Dirs.size(out));
    if (rows != c.rowsBefore) {
      warn("floor copied " + rows + " rows, expected " + c.rowsBefore);
    }
    Dirs.delete(out);
    Dirs.delete(copy);
    return run;
  }

  // ---- cold: fresh processes ----

  private void timeColdStateshift(
      Results.Case c, Path master, Map<String, Long> rowsBefore, int rep, String name) {
    // ./stateshift rebuilds its jar when src/main changed: let that happen outside the timing
    Path buildLog = options.workDir().resolve("cold-stateshift-build.log");
    if (runProcess(
            BenchLine.into(
                new ProcessBuilder(projectDir.resolve("stateshift").toString(), "classpath")),
            buildLog,
            new Results.Run())
        != 0) {
      throw new IllegalStateException(
          "./stateshift classpath failed: " + BenchOutput.tail(buildLog));
    }
    Path copy = freshCopy(master);
    Results.Run run = new Results.Run();
    run.repetition = rep;
    Path logFile = options.workDir().resolve("cold-stateshift.log");
    ProcessBuilder pb =
        new ProcessBuilder(
            projectDir.resolve("stateshift").toString(),
            "repartition",
            "--checkpoint",
            copy.toString(),
            "--partitions",
            Integer.toString(c.to),
            "--assume-stopped");
    pb.environment().put("STATESHIFT_JAVA_OPTS", "-Xmx" + options.coldHeap());
    BenchLine.into(pb);
    int exit = runProcess(pb, logFile, run);
    if (exit != 0) {
      throw new IllegalStateException(
          "./stateshift repartition exited with " + exit + ": " + BenchOutput.tail(logFile));
    }
    String problem = check(copy, c.to, rowsBefore, run);
    if (problem != null) {
      throw new CorrectnessFailure(
          "cold stateshift " + c.from + "->" + c.to + " on " + copy + ": " + problem);
    }
    c.method(Results.COLD_STATESHIFT).runs.add(run);
    log("%s: %-15s run %d: %7.2f s", name, Results.COLD_STATESHIFT, rep, run.millis / 1000.0);
    Dirs.delete(copy);
  }

  private void timeColdBuiltin(
      Results.Case c, Workload.Provider provider, Path master, int rep, String name) {
    Results.Method m = c.method(Results.COLD_BUILTIN);
    if (m.error != null) {
      return;
    }
    Path copy = freshCopy(master);
    Results.Run run = new Results.Run();
    run.repetition = rep;
    Path logFile = options.workDir().resolve("cold-builtin.log");
    String java = Path.of(System.getProperty("java.home"), "bin", "java").toString();
    ProcessBuilder pb =
        new ProcessBuilder(
            java,
            "@" + projectDir.resolve("spark-jvm.options"),
            "-Xmx" + options.coldHeap(),
            "-Dlog4j2.configurationFile="
                + projectDir.resolve("core/src/main/resources/stateshift-log4j2.properties"),
            "-cp",
            System.getProperty("java.class.path"),
            BUILTIN_MAIN,
            copy.toString(),
            Integer.toString(c.to),
            provider.providerClass());
    int exit = runProcess(pb, logFile, run);
    if (exit != 0) {
      m.error = "exit code " + exit + ": " + BenchOutput.tail(logFile);
      warn(name + ": cold built-in failed: " + m.error);
    } else {
      m.runs.add(run);
      log("%s: %-15s run %d: %7.2f s", name, Results.COLD_BUILTIN, rep, run.millis / 1000.0);
    }
    Dirs.delete(copy);
  }

  private int runProcess(ProcessBuilder pb, Path logFile, Results.Run run) {
    pb.directory(projectDir.toFile());
    pb.redirectErrorStream(true);
    pb.redirectOutput(ProcessBuilder.Redirect.to(logFile.toFile()));
    try {
      long t = System.nanoTime();
      Process p = pb.start();
      if (!p.waitFor(60, TimeUnit.MINUTES)) {
        p.destroyForcibly();
        throw new IllegalStateException(pb.command() + " timed out");
      }
      run.millis = (System.nanoTime() - t) / 1_000_000;
      return p.exitValue();
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException(e);
    }
  }

  // ---- helpers ----

  /** Same state everywhere before a timing: no cached stores, a collected heap, no old stages. */
  private void prepare() {
    unloadStateStores();
    System.gc();
    stages.reset(spark);
  }

  private void record(Results.Run run, HeapSampler heap) {
    heap.close();
    run.heapBaselineBytes = heap.baselineBytes();
    run.heapPeakBytes = heap.peakBytes();
    run.heapPeakAfterGcBytes = heap.peakAfterGcBytes();
    run.stages = stages.drain(spark);
  }

  private static void unloadStateStores() {
    StateStore$.MODULE$.unloadAll();
  }

  private Path freshCopy(Path master) {
    Path copy = options.workDir().resolve("copy");
    Dirs.delete(copy);
    Dirs.copy(master, copy);
    return copy;
  }

  /** Checks a repartitioned copy with stateshift's inspect; returns the problem, or null. */
  private String check(Path copy, int to, Map<String, Long> rowsBefore, Results.Run run) {
    return check(copy.toString(), to, rowsBefore, run);
  }

  /** The same for a copy at any location (a remote one with --fs). */
  private String check(String copy, int to, Map<String, Long> rowsBefore, Results.Run run) {
    CheckpointReport after = shift.inspect(copy);
    Map<String, Long> rowsAfter = rowsPerStore(after);
    long misplaced =
        after.operators().stream()
            .flatMap(o -> o.stores().stream())
            .mapToLong(CheckpointReport.StoreReport::misplacedKeys)
            .sum();
    run.check.put("partitions", after.partitions());
    run.check.put("rowsPerStore", rowsAfter);
    run.check.put("misplacedKeys", misplaced);
    List<String> problems = new ArrayList<>();
    if (after.partitions() != to) {
      problems.add("inspect reports " + after.partitions() + " partitions, expected " + to);
    }
    if (!rowsAfter.equals(rowsBefore)) {
      problems.add("rows per store " + rowsAfter + " differ from before " + rowsBefore);
    }
    if (misplaced != 0) {
      problems.add(misplaced + " keys outside their Spark partition");
    }
    run.check.put("ok", problems.isEmpty());
    return problems.isEmpty() ? null : String.join("; ", problems);
  }

  /**
   * Checks a repartitioned copy with Spark's statestore source alone (last committed batch): rows,
   * and keys whose partition_id is not pmod(hash(key), to). Returns the problem, or null.
   */
  private String checkWithSpark(Path copy, int to, long expectedRows, Results.Run run) {
    long rows = 0;
    long misplaced = 0;
    int highest = -1;
    try (var list = Files.list(copy.resolve("state"))) {
      for (String op :
          list.map(p -> p.getFileName().toString()).filter(n -> n.matches("\\d+")).toList()) {
        var state =
            spark.read().format("statestore").option("operatorId", op).load(copy.toString());
        rows += state.count();
        misplaced += state.filter("partition_id != pmod(hash(key), " + to + ")").count();
        Object max = state.agg(org.apache.spark.sql.functions.max("partition_id")).first().get(0);
        highest = Math.max(highest, max == null ? -1 : ((Number) max).intValue());
      }
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
    run.check.put("sparkRows", rows);
    run.check.put("sparkMisplacedKeys", misplaced);
    run.check.put("sparkHighestPartition", highest);
    List<String> problems = new ArrayList<>();
    if (rows != expectedRows) {
      problems.add("Spark's statestore source reads " + rows + " rows, expected " + expectedRows);
    }
    if (misplaced != 0) {
      problems.add(misplaced + " keys outside their Spark partition");
    }
    if (highest >= to) {
      problems.add("rows in partition " + highest + " of " + to);
    }
    run.check.put("ok", problems.isEmpty());
    return problems.isEmpty() ? null : String.join("; ", problems);
  }

  /** Rows per "operator/store" through Spark's statestore source (also for joins). */
  private Map<String, Long> sparkRowsPerStore(Path checkpoint) {
    Map<String, Long> out = new TreeMap<>();
    try {
      for (int op : FloorCopy.operators(checkpoint)) {
        for (String store : FloorCopy.storeNames(checkpoint, op)) {
          out.put(
              op + "/" + (store == null ? "default" : store),
              statestore(checkpoint, op, store).count());
        }
      }
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
    return out;
  }

  private org.apache.spark.sql.Dataset<org.apache.spark.sql.Row> statestore(
      Path checkpoint, int op, String store) {
    var reader = spark.read().format("statestore").option("operatorId", op);
    if (store != null) {
      reader = reader.option("storeName", store);
    }
    return reader.load(checkpoint.toString());
  }

  /**
   * Checks a repartitioned join checkpoint with Spark's statestore source: rows per store as before
   * and no partition beyond the new count. (Misplaced keys are not checked here: the partition key
   * of keyWithIndexToValue is the key without its index.) Returns the problem, or null.
   */
  private String checkJoinWithSpark(
      Path copy, int to, Map<String, Long> rowsBefore, Results.Run run) {
    Map<String, Long> rowsAfter = sparkRowsPerStore(copy);
    int highest = -1;
    try {
      for (int op : FloorCopy.operators(copy)) {
        for (String store : FloorCopy.storeNames(copy, op)) {
          Object max =
              statestore(copy, op, store)
                  .agg(org.apache.spark.sql.functions.max("partition_id"))
                  .first()
                  .get(0);
          highest = Math.max(highest, max == null ? -1 : ((Number) max).intValue());
        }
      }
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
    run.check.put("sparkRowsPerStore", rowsAfter);
    run.check.put("sparkHighestPartition", highest);
    List<String> problems = new ArrayList<>();
    if (!rowsAfter.equals(rowsBefore)) {
      problems.add("rows per store " + rowsAfter + " differ from before " + rowsBefore);
    }
    if (highest >= to) {
      problems.add("rows in partition " + highest + " of " + to);
    }
    run.check.put("ok", problems.isEmpty());
    return problems.isEmpty() ? null : String.join("; ", problems);
  }

  private static Map<String, Long> rowsPerStore(CheckpointReport report) {
    Map<String, Long> out = new TreeMap<>();
    for (CheckpointReport.OperatorReport op : report.operators()) {
      for (CheckpointReport.StoreReport store : op.stores()) {
        out.put(op.id() + "/" + store.name(), store.totalRows());
      }
    }
    return out;
  }

  private void writeResults(String failure) {
    try {
      Map<String, Object> root = new LinkedHashMap<>();
      root.put("environment", environment);
      Map<String, Object> opts = new LinkedHashMap<>();
      opts.put("keys", options.keys());
      opts.put("shapes", options.shapes().stream().map(s -> s.label).toList());
      opts.put("providers", options.providers().stream().map(p -> p.label).toList());
      opts.put("directions", options.directions().stream().map(d -> d[0] + "->" + d[1]).toList());
      opts.put("repeat", options.repeat());
      opts.put("cold", options.cold());
      opts.put("coldHeap", options.coldHeap());
      opts.put("methods", options.methods());
      root.put("options", opts);
      root.put("failure", failure);
      root.put("warnings", warnings);
      List<Object> list = new ArrayList<>();
      cases.forEach(c -> list.add(c.toJson()));
      root.put("cases", list);
      Report.writeJson(jsonFile, root);
      String md = Report.markdown(cases, environment, options.cold(), failure);
      if (!warnings.isEmpty()) {
        md +=
            "\n## Warnings\n\n"
                + String.join("\n", warnings.stream().map(w -> "- " + w).toList())
                + "\n";
      }
      Files.createDirectories(mdFile.getParent());
      Files.writeString(mdFile, md, StandardCharsets.UTF_8);
    } catch (IOException | RuntimeException e) {
      System.err.println("bench: could not write results: " + e);
    }
  }

  private void requireStateshiftScript() {
    if (!Files.isExecutable(projectDir.resolve("stateshift"))) {
      throw new IllegalStateException(
          "--cold runs ./stateshift from the project folder; run "
              + "the benchmark from the project root (bench/run does)");
    }
  }

  private final java.util.Set<String> warnedOnce = new java.util.HashSet<>();

  /** Warns once per message text up to the first '(' (so per kind, not per case). */
  private void warnOnce(String message) {
    int cut = message.indexOf('(');
    if (warnedOnce.add(cut > 0 ? message.substring(0, cut) : message)) {
      warn(message);
    }
  }

  private void warn(String message) {
    warnings.add(message);
    System.err.println("bench: WARNING " + message);
  }

  /** A wrong stateshift result: always stops the benchmark. */
  static final class CorrectnessFailure extends IllegalStateException {
    CorrectnessFailure(String message) {
      super("CORRECTNESS FAILURE: " + message);
    }
  }
}
