package io.stateshift.config;

import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Locale;
import java.util.function.Function;
import org.apache.spark.SparkConf;
import org.apache.spark.SparkEnv;
import org.apache.spark.sql.SparkSession;

/**
 * Every setting stateshift reads, in one place: its key, type, default and a one-line description.
 * {@code docs/configuration.md} is generated from here ({@link #markdown}).
 *
 * <p>Settings are Spark conf entries, so that they reach every process of an application: a task
 * reads them from the application's conf ({@link Setting#inTask}), which Spark ships to every
 * executor, never from a JVM system property (a driver's {@code -D} never reaches an executor). The
 * driver reads them from the session's conf ({@link Setting#onDriver}), so {@code --conf}, {@code
 * spark-defaults.conf}, {@code spark.conf().set(...)} and, as for any {@code spark.*} key, a
 * driver's {@code -Dspark.stateshift...} all work. Besides, one Hadoop configuration key and the
 * launcher script's environment variables are listed here for the reference.
 */
public final class StateShiftConf {
  private StateShiftConf() {}

  /** The value type of a setting, as the reference names it. */
  public enum Type {
    BOOLEAN("boolean"),
    INT("int"),
    LONG("long"),
    DOUBLE("double"),
    STRING("string"),
    LIST("comma-separated list");

    private final String label;

    Type(String label) {
      this.label = label;
    }

    public String label() {
      return label;
    }
  }

  /** Where a setting is read from, and which section of the reference lists it. */
  public enum Section {
    ON_DEMAND(
        "On-demand repartition and migration",
        "Spark conf of the application whose queries start."),
    JOB(
        "Repartition job",
        "Spark conf; read by the driver when the job starts, or by its tasks from the"
            + " application's conf (`--conf`, `spark-defaults.conf`) where marked *task*."),
    LOCK("Lock, leases and the running-query check", "Spark conf, read by the driver."),
    DOCTOR("Doctor thresholds", "Spark conf or `Doctor.setting(name, value)`."),
    INVENTORY(
        "Inventory (fleet view) thresholds", "Spark conf or `Inventory.setting(name, value)`."),
    MONITOR("Monitor", "Spark conf of the application the monitor runs in."),
    CLI("Command line", "Spark conf (`--conf`) or `-D` in `STATESHIFT_JAVA_OPTS`."),
    HADOOP(
        "Hadoop configuration",
        "The checkpoint file system's Hadoop configuration (`--conf spark.hadoop.<key>`)."),
    LAUNCHER("Launcher environment", "Environment variables of the `./stateshift` script."),
    TEST(
        "Test only",
        "Switches for stateshift's own tests and measurements; never needed in production.");

    private final String title;
    private final String source;

    Section(String title, String source) {
      this.title = title;
      this.source = source;
    }

    public String title() {
      return title;
    }

    public String source() {
      return source;
    }
  }

  /** One setting: key, type, default, doc; {@code taskSide} when tasks read it. */
  public static final class Setting<T> {
    private final String key;
    private final Type type;
    private final String defaultText;
    private final String doc;
    private final Section section;
    private final boolean taskSide;
    private final Function<String, T> parse;

    private Setting(
        String key,
        Type type,
        String defaultText,
        String doc,
        Section section,
        boolean taskSide,
        Function<String, T> parse) {
      this.key = key;
      this.type = type;
      this.defaultText = defaultText;
      this.doc = doc;
      this.section = section;
      this.taskSide = taskSide;
      this.parse = parse;
    }

    public String key() {
      return key;
    }

    public Type type() {
      return type;
    }

    /** The default as text (empty: none). */
    public String defaultText() {
      return defaultText;
    }

    public String doc() {
      return doc;
    }

    public Section section() {
      return section;
    }

    /** Whether tasks read it (from the application's conf). */
    public boolean taskSide() {
      return taskSide;
    }

    /** {@code raw} parsed, or the default when it is null or blank. */
    public T parse(String raw) {
      String text = raw == null || raw.isBlank() ? defaultText : raw.trim();
      try {
        return parse.apply(text);
      } catch (RuntimeException e) {
        throw new IllegalArgumentException(
            key
                + " = '"
                + raw
                + "' is not a valid "
                + type.label()
                + " (default "
                + defaultText
                + ")",
            e);
      }
    }

    /** The value {@code lookup} (by full key) gives, else the default. */
    public T from(Function<String, String> lookup) {
      return parse(lookup.apply(key));
    }

    /** From {@code conf}, else the default. */
    public T from(SparkConf conf) {
      return parse(conf.get(key, null));
    }

    /** From the session's conf, else the default. */
    public T from(SparkSession spark) {
      return parse(spark.conf().get(key, null));
    }

    /**
     * As a task reads it: from the application's conf (the same on the driver and every executor),
     * else the default.
     */
    public T inTask() {
      SparkEnv env = SparkEnv.get();
      return parse(env == null ? null : env.conf().get(key, null));
    }

    /**
     * As the driver reads it: from the active (or default) session's conf, else the application's
     * conf, else (no Spark running yet) the JVM's {@code -D<key>}, as a new {@code SparkConf} would
     * take it, else the default.
     */
    public T onDriver() {
      scala.Option<SparkSession> session = SparkSession.getActiveSession();
      if (session.isEmpty()) {
        session = SparkSession.getDefaultSession();
      }
      if (session.isDefined()) {
        return from(session.get());
      }
      SparkEnv env = SparkEnv.get();
      if (env != null) {
        return from(env.conf());
      }
      return parse(System.getProperty(key));
    }
  }

  private static final List<Setting<?>> ALL = new ArrayList<>();

  private static <T> Setting<T> add(Setting<T> setting) {
    ALL.add(setting);
    return setting;
  }

  private static Setting<Boolean> bool(
      Section section, String key, boolean fallback, boolean taskSide, String doc) {
    return add(
        new Setting<>(
            key,
            Type.BOOLEAN,
            Boolean.toString(fallback),
            doc,
            section,
            taskSide,
            text -> {
              String lower = text.toLowerCase(Locale.ROOT);
              if (!lower.equals("true") && !lower.equals("false")) {
                throw new IllegalArgumentException("not true or false");
              }
              return lower.equals("true");
            }));
  }

  private static Setting<Long> longValue(Section section, String key, long fallback, String doc) {
    return add(
        new Setting<>(
            key, Type.LONG, Long.toString(fallback), doc, section, false, Long::parseLong));
  }

  private static Setting<Integer> intValue(Section section, String key, int fallback, String doc) {
    return add(
        new Setting<>(
            key, Type.INT, Integer.toString(fallback), doc, section, false, Integer::parseInt));
  }

  private static Setting<Double> doubleValue(
      Section section, String key, String fallback, String doc) {
    return add(new Setting<>(key, Type.DOUBLE, fallback, doc, section, false, Double::parseDouble));
  }

  private static Setting<String> string(
      Section section, String key, String fallback, boolean taskSide, String doc) {
    return add(new Setting<>(key, Type.STRING, fallback, doc, section, taskSide, text -> text));
  }

  private static Setting<List<String>> list(Section section, String key, String doc) {
    return add(
        new Setting<>(
            key,
            Type.LIST,
            "",
            doc,
            section,
            false,
            text -> text.isEmpty() ? List.of() : List.of(text.split("\\s*,\\s*"))));
  }

  // ---- On-demand repartition ----

  public static final Setting<String> STATE_PARTITIONS =
      string(
          Section.ON_DEMAND,
          "spark.sql.streaming.stateStore.partitions",
          "",
          false,
          "With `StateShiftExtensions`: the state partition count a starting query's checkpoint is"
              + " repartitioned to first, when it has another count; empty: never.");

  public static final Setting<Boolean> MIGRATE_ENABLED =
      bool(
          Section.ON_DEMAND,
          "spark.stateshift.migrate.enabled",
          false,
          false,
          "With `StateShiftExtensions`: a starting query whose session sets"
              + " `spark.sql.streaming.stateStore.providerClass` to another provider than its"
              + " checkpoint's has its state migrated to that provider first (with the partition"
              + " change, if any, in the same pass), and one that sets"
              + " `spark.sql.streaming.stateStore.checkpointFormatVersion` to another format than"
              + " its RocksDB checkpoint's has its state converted; `false`: a provider mismatch is"
              + " logged as a warning and the query keeps the checkpoint's provider, as Spark does,"
              + " and a format mismatch refuses the start with the fix (Spark would fail its first"
              + " batch).");

  // ---- Repartition job ----

  public static final Setting<String> ROCKSDB_EXCHANGE =
      string(
          Section.JOB,
          "spark.stateshift.rocksdb.exchange",
          "files",
          false,
          "RocksDB state: `files` moves SST files between partitions where it applies, `shuffle`"
              + " always re-encodes records through one shuffle.");

  public static final Setting<Double> LOCAL_EXCHANGE_HEAP_SHARE =
      doubleValue(
          Section.JOB,
          "spark.stateshift.exchange.localHeapShare",
          "0.25",
          "In local mode, the share of the driver's maximum heap that the file exchanges may"
              + " hold their staged data in (direct memory) between their read and write stages,"
              + " instead of writing it to staged files and reading it back; what does not fit"
              + " goes to files as on a cluster. `0` always writes files.");

  public static final Setting<String> HDFS_EXCHANGE =
      string(
          Section.JOB,
          "spark.stateshift.hdfs.exchange",
          "files",
          false,
          "HDFS-backed state: `files` splits the version files directly, `shuffle` reads through"
              + " Spark's provider and one shuffle.");

  public static final Setting<String> EDIT_EXCHANGE =
      string(
          Section.JOB,
          "spark.stateshift.edit.exchange",
          "in-place",
          false,
          "An edit or evolution that keeps the partition count and adds no entries, on a store no"
              + " file exchange takes: `in-place` rewrites each partition where it is, `shuffle`"
              + " goes through Spark's shuffle.");

  public static final Setting<String> EXCHANGE_DIR =
      string(
          Section.JOB,
          "spark.stateshift.exchange.dir",
          "",
          false,
          "Where the file exchanges stage the files that read tasks hand to write tasks (deleted"
              + " when the job ends; on a local disk, a killed run's folder, and a killed"
              + " command's Spark folders, are deleted by the next run there). Empty: Spark's `spark.local.dir` with a local master, else"
              + " the attempt's folder on the checkpoint's file system; on a cluster with the"
              + " checkpoint on an object store, a cluster file system (`hdfs://...`) saves"
              + " requests.");

  public static final Setting<Integer> DRIVER_IO_THREADS =
      intValue(
          Section.JOB,
          "spark.stateshift.driver.ioThreads",
          16,
          "Driver threads for independent file requests: the validation's listing of each"
              + " partition folder, the switch's moves of staged files into place, the retiring of"
              + " partition folders. On an object store each is one or several round trips. `1`"
              + " makes them one after another.");

  public static final Setting<Integer> TASK_IO_THREADS =
      intValue(
          Section.JOB,
          "spark.stateshift.task.ioThreads",
          4,
          "Stores each task of the job (a repartition's, or a restart's from a prepared layout)"
              + " works on at once when the checkpoint is not on a local disk (an object store,"
              + " HDFS): there a store's time is mostly waiting on its"
              + " downloads and uploads, which a task overlaps with other stores' reading and"
              + " merging. Each store being read holds up to 32 MB of entries on the heap. `1`"
              + " keeps a task to `spark.task.cpus` stores at once, as on a local disk.");

  public static final Setting<Long> PREPARED_DRIVER_TAIL_BYTES =
      longValue(
          Section.JOB,
          "spark.stateshift.prepared.driverTailBytes",
          64L << 20,
          "At a restart from a prepared layout, the size of a tail (the changes since the"
              + " prepared batch, in bytes of keys and values) up to which the driver reads it and"
              + " hands each write task its share, in one Spark job (in local mode, on the"
              + " driver's threads, without a job); a larger tail is read by tasks and shuffled"
              + " (two stages). `0` always shuffles.");

  public static final Setting<Double> PREPARE_CPU_SHARE =
      doubleValue(
          Section.JOB,
          "spark.stateshift.prepare.cpuShare",
          "1.0",
          "Share of the time each task of `prepare` keeps its core: a task that worked t then"
              + " waits t (1 - share) / share before it ends, leaving the core to a query running"
              + " beside it. `1` (the API's default) never waits; `./stateshift prepare` sets"
              + " `STATESHIFT_PREPARE_CPU_SHARE` (default 0.25). Only `prepare` reads it; a"
              + " repartition never waits.");

  public static final Setting<Boolean> ROCKSDB_DIRECT_COMMIT =
      bool(
          Section.JOB,
          "spark.stateshift.rocksdb.directCommit",
          true,
          true,
          "Writes a new RocksDB version as a fresh instance uploaded by Spark's file manager;"
              + " `false` commits through Spark's provider.");

  public static final Setting<Boolean> ROCKSDB_SPLIT_IN_PLACE =
      bool(
          Section.JOB,
          "spark.stateshift.rocksdb.splitInPlace",
          true,
          false,
          "When the new partition count is a multiple of the old one (8 -> 16, 200 -> 400), each"
              + " read task writes the new RocksDB partitions its old one splits into, in one"
              + " stage; `false` stages sorted runs for a write stage as for any other count.");

  public static final Setting<Boolean> ROCKSDB_READ_ONLY_SNAPSHOTS =
      bool(
          Section.JOB,
          "spark.stateshift.rocksdb.readOnlySnapshots",
          true,
          true,
          "Reads a RocksDB version that has its own snapshot read-only in place; `false` loads"
              + " every version with Spark's provider.");

  public static final Setting<Boolean> IN_PROCESS_DELETES =
      bool(
          Section.JOB,
          "spark.stateshift.inProcessDeletes",
          true,
          false,
          "While stateshift's tasks run, Spark deletes its RocksDB folders in-process instead of"
              + " one `rm -rf` process per folder.");

  public static final Setting<Long> TASK_DRAIN_MS =
      longValue(
          Section.JOB,
          "spark.stateshift.taskDrainMs",
          600_000L,
          "How long the undo of a failed job waits for the job's remaining tasks to end.");

  // ---- Lock and leases ----

  public static final Setting<Long> LOCK_LEASE_MS =
      longValue(
          Section.LOCK,
          "spark.stateshift.lock.leaseMs",
          60_000L,
          "The checkpoint lock's lease: a holder that has not renewed it for this long is taken"
              + " over.");

  public static final Setting<Long> LOCK_MAX_WAIT_MS =
      longValue(
          Section.LOCK,
          "spark.stateshift.lock.maxWaitMs",
          60_000L,
          "The longest wait for a holder that seems to have stopped renewing its lock.");

  public static final Setting<Long> QUERY_LEASE_MS =
      longValue(
          Section.LOCK,
          "spark.stateshift.query.leaseMs",
          60_000L,
          "With `StateShiftExtensions`: the running query's lease on its checkpoint expires this"
              + " long after its last renewal.");

  public static final Setting<Long> RECENT_WRITE_WINDOW_MS =
      longValue(
          Section.LOCK,
          "spark.stateshift.recentWriteWindowMs",
          120_000L,
          "A checkpoint whose offset or commit log was written less than this ago is taken for a"
              + " running query and refused (entries stateshift wrote itself, an interrupted"
              + " attempt's included, do not count).");

  // ---- Doctor ----

  public static final String DOCTOR_PREFIX = "spark.stateshift.doctor.";

  static {
    longValue(
        Section.DOCTOR,
        DOCTOR_PREFIX + "largeStateBytes",
        512L << 20,
        "Above this much state, an HDFS-backed store is advised to move to RocksDB.");
    longValue(
        Section.DOCTOR,
        DOCTOR_PREFIX + "targetPartitionBytes",
        256L << 20,
        "State per partition to aim for when recommending a partition count.");
    doubleValue(
        Section.DOCTOR,
        DOCTOR_PREFIX + "skewRatio",
        "2.0",
        "Largest partition / mean partition, by rows, above which partitions are skewed.");
    longValue(
        Section.DOCTOR,
        DOCTOR_PREFIX + "skewMinRows",
        10_000L,
        "Below this many rows in the largest partition, skew does not matter.");
    intValue(
        Section.DOCTOR,
        DOCTOR_PREFIX + "growthMinPoints",
        4,
        "State versions needed to judge growth.");
    doubleValue(
        Section.DOCTOR,
        DOCTOR_PREFIX + "levelOffRatio",
        "0.5",
        "Growth in the newer half / the older half below which state counts as levelling off.");
    intValue(
        Section.DOCTOR,
        DOCTOR_PREFIX + "growthMaxVersions",
        8,
        "State versions counted when no progress history is given.");
    doubleValue(
        Section.DOCTOR,
        DOCTOR_PREFIX + "batchSizeRatio",
        "10",
        "A batch this many times the median batch is a burst.");
    intValue(
        Section.DOCTOR,
        DOCTOR_PREFIX + "minRetainedBatches",
        10,
        "Fewer retained batches than this are too few to recover from.");
  }

  // ---- Inventory ----

  public static final String INVENTORY_PREFIX = "spark.stateshift.inventory.";

  public static final Setting<Double> INVENTORY_IDLE_SHARE =
      doubleValue(
          Section.INVENTORY,
          INVENTORY_PREFIX + "idleShare",
          "0.9",
          "A stream idle this share of the time between its first and last retained batch is"
              + " advised to run as a scheduled availableNow job.");
  public static final Setting<Long> INVENTORY_LIGHT_STATE_BYTES =
      longValue(
          Section.INVENTORY,
          INVENTORY_PREFIX + "lightStateBytes",
          64L << 20,
          "A stream with at most this much state (and busy at most lightBusyShare) is light:"
              + " light streams are advised to share one application.");
  public static final Setting<Double> INVENTORY_LIGHT_BUSY_SHARE =
      doubleValue(
          Section.INVENTORY,
          INVENTORY_PREFIX + "lightBusyShare",
          "0.25",
          "The share of the time a light stream runs batches at most.");
  public static final Setting<Long> INVENTORY_HEAVY_STATE_BYTES =
      longValue(
          Section.INVENTORY,
          INVENTORY_PREFIX + "heavyStateBytes",
          4L << 30,
          "A stream with at least this much state (or busy at least heavyBusyShare) is heavy:"
              + " heavy streams are advised to run in an application of their own.");
  public static final Setting<Double> INVENTORY_HEAVY_BUSY_SHARE =
      doubleValue(
          Section.INVENTORY,
          INVENTORY_PREFIX + "heavyBusyShare",
          "0.5",
          "The share of the time a heavy stream runs batches at least.");

  // ---- Monitor ----

  public static final String MONITOR_PREFIX = "spark.stateshift.monitor.";

  static {
    intValue(
        Section.MONITOR,
        MONITOR_PREFIX + "consecutiveBatches",
        3,
        "Batches in a row a condition must hold before an alert.");
    doubleValue(
        Section.MONITOR,
        MONITOR_PREFIX + "levelOffRatio",
        "0.5",
        "State growth slowing below this share counts as levelling off.");
    longValue(
        Section.MONITOR,
        MONITOR_PREFIX + "idleTimeoutMs",
        600_000L,
        "No input for this long raises QUERY_IDLE; 0 turns it off.");
    string(
        Section.MONITOR,
        MONITOR_PREFIX + "triggerIntervalMs",
        "",
        false,
        "The trigger interval to judge lag by; empty: the query's own ProcessingTime interval.");
    string(
        Section.MONITOR,
        MONITOR_PREFIX + "history",
        "",
        false,
        "Folder for the JSON-lines progress history; empty: none.");
    list(
        Section.MONITOR,
        MONITOR_PREFIX + "alertCallbacks",
        "`AlertCallback` class names (public no-argument constructor) called on each alert.");
    bool(
        Section.MONITOR,
        MONITOR_PREFIX + "fileBacklog",
        false,
        false,
        "Measures a file source's backlog by listing its input folder.");
    bool(
        Section.MONITOR,
        MONITOR_PREFIX + "metrics",
        true,
        false,
        "Publishes the monitor's gauges through Spark's metrics system.");
  }

  // ---- Command line ----

  public static final Setting<String> LOG_LEVEL =
      string(
          Section.CLI,
          "spark.stateshift.logLevel",
          "WARN",
          false,
          "Spark's log level in the session the command line starts.");

  // ---- Hadoop configuration ----

  public static final Setting<List<String>> EXCLUSIVE_CREATE_SCHEMES =
      list(
          Section.HADOOP,
          "stateshift.lock.exclusiveCreateSchemes",
          "File system schemes, besides the known ones, whose create-if-absent is atomic, so the"
              + " lock can rely on it.");

  public static final Setting<Boolean> S3_DIRECT_MOVES =
      bool(
          Section.HADOOP,
          "stateshift.s3.directMoves",
          true,
          false,
          "On s3a: moves state files with S3's own copy (one request a file) and multi-object"
              + " delete (a request per 250 sources), the files in place known from one listing;"
              + " false uses S3A's rename (about ten"
              + " requests a file). Also off where S3A would add settings to a copy (encryption,"
              + " a canned ACL, requester pays, a storage class).");

  // ---- Launcher environment ----

  static {
    string(
        Section.LAUNCHER,
        "STATESHIFT_SPARK_LINE",
        "",
        false,
        "The Spark line every command runs on (`3.5`, `4.0`, `4.1`, `4.2`; `--spark-line` as the"
            + " first option wins). Unset: the line of `SPARK_HOME`'s Spark, on its own jars, else"
            + " 4.2.");
    string(
        Section.LAUNCHER,
        "STATESHIFT_SCALA_VERSION",
        "",
        false,
        "The Scala of the 3.5 line: `2.12` or `2.13` (the 4.x lines run on 2.13 only). Unset: the"
            + " Scala of `SPARK_HOME`'s jars, else 2.12.");
    string(
        Section.LAUNCHER,
        "STATESHIFT_CLASSPATH",
        "",
        false,
        "Colon-separated jars (file system connectors) added to the classpath and `spark.jars`.");
    string(
        Section.LAUNCHER,
        "STATESHIFT_JAVA_OPTS",
        "-Xmx2g",
        false,
        "JVM options of the command line's JVM (heap, `-Dspark...` settings, JIT).");
    string(
        Section.LAUNCHER,
        "STATESHIFT_CLASS_ARCHIVE",
        "on",
        false,
        "`off` starts without the class data archive the launcher builds and reuses.");
    string(
        Section.LAUNCHER,
        "STATESHIFT_PROFILE",
        "",
        false,
        "Set (to anything): the launcher and `bench/run` add `-Dspark.stateshift.profile=true`.");
  }

  // ---- Test only ----

  public static final Setting<Boolean> PROFILE =
      bool(
          Section.TEST,
          "spark.stateshift.profile",
          false,
          true,
          "Prints each task's step times (`stateshift-profile` lines) to the task's stderr.");

  public static final Setting<Boolean> PLACEMENT_CHECK =
      bool(
          Section.TEST,
          "spark.stateshift.placementCheck",
          true,
          false,
          "`false` skips the check that every key sits in the partition Spark places it in; only"
              + " to measure what the check costs.");

  public static final Setting<String> FAILPOINT =
      string(
          Section.TEST,
          "spark.stateshift.test.failpoint",
          "",
          true,
          "Kills the process (SIGKILL) at the named step of a repartition (`FailPoints.ALL`), as"
              + " crash tests do.");

  /** Every setting, in the reference's order. */
  public static List<Setting<?>> all() {
    return Collections.unmodifiableList(ALL);
  }

  /** The setting with {@code key}. */
  public static Setting<?> byKey(String key) {
    for (Setting<?> setting : ALL) {
      if (setting.key().equals(key)) {
        return setting;
      }
    }
    throw new IllegalArgumentException("No stateshift setting " + key);
  }

  /** The reference, {@code docs/configuration.md}. */
  public static String markdown() {
    StringBuilder md = new StringBuilder();
    md.append("# Configuration reference\n\n")
        .append(
            "<!-- Generated from io.stateshift.config.StateShiftConf; do not edit. Regenerate:\n")
        .append(
            "     mvn test -Dtest=ConfigurationReferenceTest -Dsurefire.failIfNoSpecifiedTests=false \\\n"
                + "       -Dstateshift.writeReference=true -->\n\n")
        .append(
            "Every setting stateshift reads. Settings are Spark conf entries (`--conf key=value`,")
        .append(" `spark-defaults.conf`,\n`spark.conf().set(...)`, or `-Dkey=value` on the")
        .append(" driver's JVM), so that they reach executors: settings marked\n*task* are read")
        .append(" by the repartition's tasks from the application's conf, never from a JVM system")
        .append("\nproperty.\n");
    for (Section section : Section.values()) {
      md.append("\n## ").append(section.title()).append("\n\n").append(section.source());
      md.append("\n\n| Key | Type | Default | Description |\n|---|---|---|---|\n");
      for (Setting<?> s : ALL) {
        if (s.section() != section) {
          continue;
        }
        md.append("| `")
            .append(s.key())
            .append("` | ")
            .append(s.type().label())
            .append(" | ")
            .append(s.defaultText().isEmpty() ? "(none)" : "`" + s.defaultText() + "`")
            .append(" | ")
            .append(s.taskSide() ? "*task* " : "")
            .append(s.doc().replace("|", "\\|"))
            .append(" |\n");
      }
    }
    return md.toString();
  }
}
