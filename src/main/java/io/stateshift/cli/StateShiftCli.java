package io.stateshift.cli;

import io.stateshift.CheckpointReport;
import io.stateshift.RepartitionPlan;
import io.stateshift.RepartitionResult;
import io.stateshift.StateShift;
import io.stateshift.StateShiftException;
import io.stateshift.StateShiftException.Reason;
import io.stateshift.VerificationReport;
import io.stateshift.demo.DeviceCountsDemo;
import java.io.PrintStream;
import java.util.List;
import java.util.function.Function;
import org.apache.spark.SparkConf;
import org.apache.spark.sql.SparkSession;

/**
 * The {@code ./stateshift} command line. Exit codes: 0 success, 2 bad input or refusal (the
 * checkpoint was not changed), 1 failure.
 */
public final class StateShiftCli {
  static final int OK = 0;
  static final int FAILURE = 1;
  static final int BAD_INPUT = 2;

  private static final String USAGE = """
      usage: stateshift <command> [options]

      commands:
        repartition --checkpoint <path> --partitions <n> [--dry-run] [--backup-to <path>]
                    [--assume-stopped]
            Redistribute the state of a stopped query into n partitions.
        rollback --checkpoint <path> [--assume-stopped]
            Restore the layout before the last repartition (if no batch has run since).
        --assume-stopped: the query is known to be stopped; skip the refusal of a checkpoint
            whose logs were written in the last 2 minutes (a lease held by a running query
            started with StateShiftExtensions still refuses).
        verify --checkpoint <path>
            Check key placement, row counts and state files; exit code 1 on any problem.
        inspect --checkpoint <path> [--json]
            Show batches, provider, operators, stores, rows and bytes per partition, and skew.
        doctor --checkpoint <path> [--cores <n>] [--history <path>] [--json]
            Check the checkpoint against the production checklist (read-only);
            exit code 1 when a finding is an ERROR.
        report --checkpoint <path> [--history <path>] [--cores <n>] --out <file.html>
            Write a self-contained HTML page with charts and the doctor's findings.
        demo [--events <n>]
            Run the device-count demo end to end on the embedded Spark.
        classpath [--full]
            Print the library's runtime classpath (--full: with Spark, for embedding programs).

      options for every command:
        --master <url>      Spark master (default local[2] or the spark.master system property)
        --conf <key=value>  a Spark setting, repeatable
        --jars <a.jar,...>  extra jars (a file system connector such as hadoop-aws), on the
                            driver and shipped to executors; repeatable
        --packages <g:a:v,...>  Maven artifacts with their dependencies, resolved by the
                            ./stateshift launcher into --jars (also: STATESHIFT_CLASSPATH)
      With a master that is not local, stateshift's own jar is shipped to executors too.

      Exit codes: 0 success, 2 bad input or refusal (checkpoint unchanged), 1 failure.
      """;

  private final PrintStream out;
  private final PrintStream err;

  public StateShiftCli(PrintStream out, PrintStream err) {
    this.out = out;
    this.err = err;
  }

  /** The commands that start their own Spark, where {@link StartupOverlap} helps. */
  private static final java.util.Set<String> SPARK_COMMANDS =
      java.util.Set.of("repartition", "inspect", "verify", "rollback", "doctor", "report");

  public static void main(String[] args) {
    // First thing for a command that starts Spark: until the context starts its threads, the
    // JVM's start and the CLI's classes keep one core busy and leave the other idle.
    if (args.length > 0 && SPARK_COMMANDS.contains(args[0])) {
      StartupOverlap.begin();
    }
    int code = new StateShiftCli(System.out, System.err).run(args);
    System.exit(code);
  }

  public int run(String[] argv) {
    Arguments args;
    try {
      args = Arguments.parse(argv);
    } catch (IllegalArgumentException e) {
      err.println("error: " + e.getMessage());
      err.println();
      err.print(USAGE);
      return BAD_INPUT;
    }
    if (args.command() == null || args.flag("help")) {
      (args.command() == null ? err : out).print(USAGE);
      return args.command() == null ? BAD_INPUT : OK;
    }
    try {
      return switch (args.command()) {
        case "repartition" -> withSpark(args, spark -> repartition(spark, args));
        case "inspect" -> withSpark(args, spark -> inspect(spark, args));
        case "rollback" -> withSpark(args, spark -> {
          RepartitionPlan undone = StateShift.get(spark).rollbackRepartition(
              args.required("checkpoint"), args.flag("assume-stopped"));
          out.printf("Rolled back the repartition of batch %d: %s is back to %d partitions.%n",
              undone.repartitionBatch(), undone.checkpoint(), undone.toPartitions());
          return OK;
        });
        case "verify" -> withSpark(args, spark -> {
          VerificationReport report = StateShift.get(spark).verify(args.required("checkpoint"));
          out.print(report);
          return report.ok() ? OK : FAILURE;
        });
        case "doctor" -> withSpark(args, spark -> doctor(spark, args));
        case "report" -> withSpark(args, spark -> report(spark, args));
        case "demo" -> withSpark(args, spark -> DeviceCountsDemo.run(spark,
            args.intValue("events", DeviceCountsDemo.DEFAULT_EVENTS), out));
        default -> throw new IllegalArgumentException("unknown command '" + args.command()
            + "'; commands are repartition, rollback, verify, inspect, doctor, report, demo, "
            + "classpath");
      };
    } catch (IllegalArgumentException e) {
      err.println("error: " + e.getMessage());
      return BAD_INPUT;
    } catch (StateShiftException e) {
      err.println("error: " + e.getMessage());
      return e.reason().isBadInput() ? BAD_INPUT : FAILURE;
    } catch (Exception e) { // Spark's checked exceptions (SparkException) arrive here too
      err.println("failed: " + e);
      e.printStackTrace(err);
      return FAILURE;
    }
  }

  private int repartition(SparkSession spark, Arguments args) {
    String checkpoint = args.required("checkpoint");
    int partitions = args.intValue("partitions", -1);
    if (!args.has("partitions")) {
      throw new IllegalArgumentException("--partitions <n> is required");
    }
    var action = StateShift.get(spark).repartitionState(checkpoint);
    if (partitions <= 0) {
      throw new StateShiftException(Reason.INVALID_PARTITION_COUNT,
          "--partitions must be at least 1, got " + partitions + ".");
    }
    action.toPartitions(partitions).onProgress(message -> err.println("  " + message))
        .backupTo(args.value("backup-to", null));
    if (args.flag("assume-stopped")) {
      action.assumeStopped();
    }
    if (args.flag("dry-run")) {
      RepartitionPlan plan = action.plan();
      out.print(plan);
      out.println("dry run: nothing was written.");
      return OK;
    }
    RepartitionResult result = action.execute();
    out.print(result);
    return OK;
  }

  private int inspect(SparkSession spark, Arguments args) {
    CheckpointReport report = StateShift.get(spark).inspect(args.required("checkpoint"));
    if (args.flag("json")) {
      out.println(report.toJson());
    } else {
      out.print(report);
    }
    return OK;
  }

  private io.stateshift.doctor.DoctorReport diagnose(SparkSession spark, Arguments args) {
    io.stateshift.doctor.Doctor doctor = StateShift.get(spark).doctor(args.required("checkpoint"))
        .history(args.value("history", null));
    if (args.has("cores")) {
      doctor.cores(args.intValue("cores", -1));
    }
    return doctor.run();
  }

  private int doctor(SparkSession spark, Arguments args) {
    io.stateshift.doctor.DoctorReport report = diagnose(spark, args);
    out.print(args.flag("json") ? report.toJson() + "\n" : report.toString());
    return report.exitCode() == 0 ? OK : FAILURE;
  }

  private int report(SparkSession spark, Arguments args) {
    String target = args.required("out");
    io.stateshift.doctor.DoctorReport report = diagnose(spark, args);
    io.stateshift.monitor.ProgressHistory history = args.has("history")
        ? io.stateshift.monitor.ProgressHistory.read(args.required("history"),
            io.stateshift.internal.SessionSettings.hadoopConf(spark)).ofQuery(report.queryId())
        : null;
    java.nio.file.Path file = java.nio.file.Path.of(target).toAbsolutePath();
    io.stateshift.report.HtmlReport.write(report, history, file);
    out.printf("Wrote %s: %d batches of history, %d finding(s), worst %s.%n", file,
        history == null ? 0 : history.batches().size(), report.findings().size(), report.worst());
    return OK;
  }

  private int withSpark(Arguments args, Function<SparkSession, Integer> body) {
    SparkConf conf = new SparkConf().setAppName("stateshift " + args.command())
        .set("spark.ui.enabled", "false")
        .set("spark.sql.session.timeZone", "UTC");
    if (args.command().equals("demo")) {
      conf.set("spark.sql.extensions",
              "io.stateshift.StateShiftExtensions,io.delta.sql.DeltaSparkSessionExtension")
          .set("spark.sql.catalog.spark_catalog",
              "org.apache.spark.sql.delta.catalog.DeltaCatalog")
          // the demo's tables are short-lived: skip Delta's log checkpoints (slow to start up)
          .set("spark.databricks.delta.properties.defaults.checkpointInterval", "1000")
          .set("spark.sql.shuffle.partitions", "4");
    }
    if (System.getProperty("spark.master") == null) {
      conf.setMaster(args.value("master", "local[2]"));
    }
    for (String setting : args.values("conf")) {
      int eq = setting.indexOf('=');
      if (eq <= 0) {
        throw new IllegalArgumentException("--conf takes key=value, got '" + setting + "'");
      }
      conf.set(setting.substring(0, eq), setting.substring(eq + 1));
    }
    if (args.has("packages")) {
      throw new IllegalArgumentException("--packages is resolved by the ./stateshift launcher; "
          + "run through it, or pass the jars themselves with --jars");
    }
    List<java.nio.file.Path> jars = extraJars(args);
    boolean ownSession = SparkSession.getActiveSession().isEmpty()
        && SparkSession.getDefaultSession().isEmpty();
    shipJars(conf, jars);
    ClassLoader previous = Thread.currentThread().getContextClassLoader();
    if (!jars.isEmpty()) {
      // The driver loads the jars' classes (a Hadoop FileSystem named in fs.<scheme>.impl) the
      // way spark-submit's client mode does: through the context class loader, which Hadoop's
      // Configuration and Spark's local executors take as theirs.
      Thread.currentThread().setContextClassLoader(new java.net.URLClassLoader(
          jars.stream().map(StateShiftCli::url).toArray(java.net.URL[]::new), previous));
    }
    if (ownSession) {
      StartupOverlap.begin();
    }
    // The classic builder itself: SparkSession.builder() first picks an implementation (classic
    // or Connect) with Scala's runtime reflection, 0.2-0.45 s of CPU in a fresh JVM, which no
    // command needs otherwise.
    SparkSession spark;
    try {
      spark = org.apache.spark.sql.classic.SparkSession.builder().config(conf).getOrCreate();
    } catch (RuntimeException e) {
      Thread.currentThread().setContextClassLoader(previous);
      throw e;
    }
    if (ownSession) {
      spark.sparkContext().setLogLevel(System.getProperty("stateshift.logLevel", "WARN"));
    }
    try {
      return body.apply(spark);
    } finally {
      if (ownSession) {
        spark.stop(); // a session an embedding program started stays its own
      }
      Thread.currentThread().setContextClassLoader(previous);
    }
  }

  /** The files of --jars (comma-separated, repeatable); a missing one is bad input. */
  private static List<java.nio.file.Path> extraJars(Arguments args) {
    List<java.nio.file.Path> jars = new java.util.ArrayList<>();
    for (String list : args.values("jars")) {
      for (String name : list.split(",")) {
        if (name.isBlank()) {
          continue;
        }
        java.nio.file.Path jar = java.nio.file.Path.of(name.trim()).toAbsolutePath();
        if (!java.nio.file.Files.isRegularFile(jar)) {
          throw new IllegalArgumentException("--jars: no such file " + jar + "; name the jar "
              + "files themselves, separated by commas");
        }
        jars.add(jar);
      }
    }
    return jars;
  }

  /**
   * Adds the extra jars to spark.jars, so that executors load them too, and with a master that
   * is not local stateshift's own jar: its tasks' classes must reach the executors.
   */
  private void shipJars(SparkConf conf, List<java.nio.file.Path> jars) {
    java.util.LinkedHashSet<String> ship = new java.util.LinkedHashSet<>();
    for (String jar : conf.get("spark.jars", "").split(",")) {
      if (!jar.isBlank()) {
        ship.add(jar.trim());
      }
    }
    jars.forEach(jar -> ship.add(jar.toUri().toString()));
    String master = conf.get("spark.master", System.getProperty("spark.master", "local"));
    if (!master.startsWith("local")) {
      java.nio.file.Path own = ownJar();
      if (own != null) {
        ship.add(own.toUri().toString());
      } else {
        err.println("warning: stateshift's classes are not in a jar here, so they cannot be "
            + "shipped to the executors of " + master + "; run through ./stateshift (which "
            + "builds target/stateshift.jar) or pass --jars with it.");
      }
    }
    if (!ship.isEmpty()) {
      conf.set("spark.jars", String.join(",", ship));
    }
  }

  /** The jar this class was loaded from, or null (a classes folder, as in a development run). */
  static java.nio.file.Path ownJar() {
    try {
      java.security.CodeSource source = StateShiftCli.class.getProtectionDomain().getCodeSource();
      if (source == null) {
        return null;
      }
      java.nio.file.Path path = java.nio.file.Path.of(source.getLocation().toURI());
      return java.nio.file.Files.isRegularFile(path) && path.toString().endsWith(".jar")
          ? path : null;
    } catch (Exception e) {
      return null;
    }
  }

  private static java.net.URL url(java.nio.file.Path jar) {
    try {
      return jar.toUri().toURL();
    } catch (java.net.MalformedURLException e) {
      throw new IllegalArgumentException("--jars: " + jar + " is not a valid file name", e);
    }
  }

  /** Parsed arguments: a command, --key value options (repeatable) and --flags. */
  record Arguments(String command, java.util.Map<String, List<String>> options) {
    private static final java.util.Set<String> FLAGS = java.util.Set.of("assume-stopped", "dry-run", "json",
        "help", "full");

    static Arguments parse(String[] argv) {
      String command = null;
      java.util.Map<String, List<String>> options = new java.util.LinkedHashMap<>();
      for (int i = 0; i < argv.length; i++) {
        String a = argv[i];
        if (a.equals("-h")) {
          a = "--help";
        }
        if (a.startsWith("--")) {
          String key = a.substring(2);
          String value;
          int eq = key.indexOf('=');
          if (eq > 0) {
            value = key.substring(eq + 1);
            key = key.substring(0, eq);
          } else if (FLAGS.contains(key)) {
            value = "true";
          } else if (i + 1 < argv.length) {
            value = argv[++i];
          } else {
            throw new IllegalArgumentException("--" + key + " needs a value");
          }
          options.computeIfAbsent(key, k -> new java.util.ArrayList<>()).add(value);
        } else if (command == null) {
          command = a;
        } else {
          throw new IllegalArgumentException("unexpected argument '" + a + "'");
        }
      }
      return new Arguments(command, options);
    }

    boolean has(String key) {
      return options.containsKey(key);
    }

    boolean flag(String key) {
      return has(key);
    }

    List<String> values(String key) {
      return options.getOrDefault(key, List.of());
    }

    String value(String key, String fallback) {
      List<String> v = values(key);
      return v.isEmpty() ? fallback : v.get(v.size() - 1);
    }

    String required(String key) {
      String v = value(key, null);
      if (v == null || v.isBlank()) {
        throw new IllegalArgumentException("--" + key + " is required");
      }
      return v;
    }

    int intValue(String key, int fallback) {
      String v = value(key, null);
      if (v == null) {
        return fallback;
      }
      try {
        return Integer.parseInt(v.trim());
      } catch (NumberFormatException e) {
        throw new IllegalArgumentException("--" + key + " takes a whole number, got '" + v + "'");
      }
    }
  }
}
