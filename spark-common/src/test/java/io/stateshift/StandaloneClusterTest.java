package io.stateshift;

import static org.assertj.core.api.Assertions.assertThat;

import io.stateshift.protocol.FailPoints;
import io.stateshift.testing.AppJar;
import io.stateshift.testing.Launcher;
import io.stateshift.testing.S3Server;
import io.stateshift.testing.SessionConf;
import io.stateshift.testing.SparkEventLog;
import io.stateshift.testing.SparkTestSession;
import io.stateshift.testing.StandaloneCluster;
import io.stateshift.testing.StateStores;
import io.stateshift.testing.StatefulQueries;
import io.stateshift.testing.StreamRun;
import io.stateshift.testing.SubmitApp;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.hdfs.MiniDFSCluster;
import org.apache.spark.sql.SparkSession;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * stateshift on a real Spark standalone cluster (a Master and two Workers of 1 core each, as JVMs
 * of their own, see {@link StandaloneCluster}) with the checkpoint on HDFS (a MiniDFSCluster in
 * this JVM), installed as users install it: the Workers' class path has Spark but not stateshift.
 *
 * <ul>
 *   <li>The command line, {@code repartition --master spark://...}, from its jar: it ships its jar
 *       to the executors itself, and the work runs as tasks on both executors.
 *   <li>The on-demand path in an application submitted to the cluster with {@code --jars} and
 *       {@code spark.sql.streaming.stateStore.partitions}.
 *   <li>An executor killed with SIGKILL in a write task ({@code spark.stateshift.test.failpoint},
 *       which reaches executors through Spark's conf): the task runs again on another executor.
 *   <li>The checkpoint on S3 (s3proxy on loopback, {@link S3Server}), which neither the command
 *       line's class path nor the Workers' can reach, and an executor killed mid-task: for {@code
 *       ./stateshift} itself, the S3A connector given only as {@code --packages} (the launcher
 *       resolves it, the driver loads it and ships it to the executors), and for the on-demand path
 *       (the connector next to the runtime jar in {@code spark-submit --jars}, the S3 settings and
 *       the fail point as {@code --conf}).
 * </ul>
 *
 * Each time, the query's output after the change equals its uninterrupted run's, read back as users
 * read it; the event log (as the history server reads it) tells where the tasks ran.
 */
class StandaloneClusterTest {
  /** The connector of the Hadoop the line's Spark runs on. */
  private static final String HADOOP_AWS =
      "org.apache.hadoop:hadoop-aws:" + System.getProperty("stateshift.hadoop");

  /** Whether this Spark has procedure catalogs ({@code CALL}; 4.0 and later): 3.5 has none. */
  private static final boolean SQL_PROCEDURES = hasProcedureCatalogs();

  private static boolean hasProcedureCatalogs() {
    try {
      Class.forName(
          "org.apache.spark.sql.connector.catalog.ProcedureCatalog",
          false,
          StandaloneClusterTest.class.getClassLoader());
      return true;
    } catch (ClassNotFoundException e) {
      return false;
    }
  }

  private static MiniDFSCluster hdfs;
  private static StandaloneCluster cluster;
  private static S3Server s3;

  /**
   * The command-line tests' shared start: three input files, a checkpoint of the grouped count
   * after the first two (RocksDB, 4 partitions; each test repartitions a copy of it) and the
   * uninterrupted run's output over all three.
   */
  private static StreamRun input;

  private static String startingCheckpoint;
  private static List<String> oracleRows;

  private final SparkSession spark = SparkTestSession.get();
  @TempDir Path tmp;

  @BeforeAll
  static void startClusters(@TempDir Path base) throws Exception {
    Configuration conf = new Configuration();
    conf.set(MiniDFSCluster.HDFS_MINIDFS_BASEDIR, base.resolve("hdfs").toString());
    hdfs = new MiniDFSCluster.Builder(conf).numDataNodes(1).build();
    hdfs.waitActive();
    SparkSession spark = SparkTestSession.get();
    input = new StreamRun(spark, base.resolve("input"));
    input.writeEvents(0, 40_000, 50_000);
    input.writeEvents(1, 40_000, 50_000);
    startingCheckpoint = hdfs.getURI() + "/checkpoints/start";
    input.runAvailable(
        StatefulQueries.GROUPED_COUNT,
        startingCheckpoint,
        base.resolve("start-sink"),
        StateStores.ROCKSDB.withPartitions(4));
    input.writeEvents(2, 40_000, 50_000);
    StreamRun oracle = new StreamRun(spark, base.resolve("input"));
    oracle.runAvailable(
        StatefulQueries.GROUPED_COUNT,
        base.resolve("oracle-checkpoint"),
        base.resolve("oracle-sink"),
        StateStores.HDFS.withPartitions(2));
    oracleRows = oracle.sinkRows(base.resolve("oracle-sink"), StatefulQueries.GROUPED_COUNT);
    s3 = S3Server.start(base.resolve("s3"));
    cluster =
        StandaloneCluster.start(
            base.resolve("spark"),
            AppJar.testClasses().resolveSibling("standalone-cluster"),
            freePortRange(),
            2);
  }

  /**
   * The first of 30 free ports on loopback (the cluster's range, see {@link StandaloneCluster}),
   * from a random start: other builds on this machine may run the same suite.
   */
  private static int freePortRange() {
    java.util.Random random = new java.util.Random();
    for (int attempt = 0; attempt < 50; attempt++) {
      int first = 20_000 + 40 * random.nextInt(500);
      boolean free = true;
      for (int port = first; port < first + 30 && free; port++) {
        try (java.net.ServerSocket probe =
            new java.net.ServerSocket(port, 1, java.net.InetAddress.getLoopbackAddress())) {
          probe.getLocalPort();
        } catch (java.io.IOException taken) {
          free = false;
        }
      }
      if (free) {
        return first;
      }
    }
    throw new IllegalStateException("no 30 free ports in a row on loopback");
  }

  @AfterAll
  static void stopClusters() throws Exception {
    try {
      if (cluster != null) {
        cluster.close();
      }
      if (s3 != null) {
        s3.close();
      }
    } finally {
      if (hdfs != null) {
        hdfs.shutdown();
      }
    }
  }

  @Test
  void commandLineShipsItsJarAndRepartitionsOnBothExecutors() throws Exception {
    String checkpoint = copyOfStartingCheckpoint("cli");

    Path events = tmp.resolve("events");
    int exit =
        cli(
            "cli",
            events,
            Map.of(),
            "repartition",
            "--checkpoint",
            checkpoint,
            "--partitions",
            "6",
            "--assume-stopped");
    assertThat(exit).as("exit code; see %s", cluster.logDir()).isZero();

    SparkEventLog log = SparkEventLog.read(events);
    assertThat(log.sparkProperties().get("spark.jars"))
        .as("the command line shipped its own jar")
        .contains(Path.of(System.getProperty("stateshift.libraryJar")).toUri().toString());
    assertThat(log.stateshiftTasks()).allMatch(SparkEventLog.TaskRun::succeeded);
    assertThat(log.executorsThatRanStateshiftTasks()).as("executors that ran tasks").hasSize(2);

    Path sink = tmp.resolve("sink");
    input.runAvailable(
        StatefulQueries.GROUPED_COUNT, checkpoint, sink, StateStores.ROCKSDB.withPartitions(4));
    assertThat(StateShift.get(spark).inspect(checkpoint).partitions()).isEqualTo(6);
    assertThat(input.sinkRows(sink, StatefulQueries.GROUPED_COUNT))
        .hasSizeGreaterThan(40_000)
        .containsExactlyElementsOf(oracleRows);
  }

  /** Under -Pextended: the S3 case below kills an executor in a write task of the command too. */
  @Test
  @Tag("extended")
  void anExecutorKilledInAWriteTaskIsReplacedAndTheResultStaysCorrect() throws Exception {
    String checkpoint = copyOfStartingCheckpoint("killed");

    Path events = tmp.resolve("events");
    int exit =
        cli(
            "killed",
            events,
            Map.of(FailPoints.PROPERTY, "staging-task"),
            "repartition",
            "--checkpoint",
            checkpoint,
            "--partitions",
            "3",
            "--assume-stopped");
    assertThat(exit).as("exit code; see %s", cluster.logDir()).isZero();

    assertLostTasksRanAgainElsewhere(SparkEventLog.read(events));

    assertThat(StateShift.get(spark).verify(checkpoint).problems()).isEmpty();
    Path sink = tmp.resolve("sink");
    input.runAvailable(
        StatefulQueries.GROUPED_COUNT, checkpoint, sink, StateStores.ROCKSDB.withPartitions(4));
    assertThat(StateShift.get(spark).inspect(checkpoint).partitions()).isEqualTo(3);
    assertThat(input.sinkRows(sink, StatefulQueries.GROUPED_COUNT))
        .hasSizeGreaterThan(40_000)
        .containsExactlyElementsOf(oracleRows);
  }

  /**
   * The checkpoint on S3, repartitioned by {@code ./stateshift} (the launcher users run, whose
   * class path has no S3A connector) on the cluster, whose Workers have none either: the connector
   * comes only from {@code --packages}, which the launcher resolves with Maven and passes on as
   * {@code --jars}; the driver loads it and ships it to the executors, one of which is killed in a
   * write task.
   */
  @Test
  void aCheckpointOnS3IsRepartitionedWithTheConnectorFromPackagesWhileAnExecutorIsKilled()
      throws Exception {
    org.junit.jupiter.api.Assumptions.assumeTrue(S3Server.connectorLoads(), S3Server.NO_CONNECTOR);
    assertThat(workerJars())
        .as("the Workers have no S3A connector")
        .isNotEmpty()
        .noneMatch(
            name ->
                name.startsWith("hadoop-aws-")
                    || name.startsWith("bundle-")
                    || name.startsWith("aws-java-sdk-bundle-"));
    Configuration session = spark.sparkContext().hadoopConfiguration();
    org.apache.hadoop.fs.FileSystem hdfsFs = hdfs.getFileSystem();
    org.apache.hadoop.fs.FileSystem s3Fs = s3.fileSystem(session);
    String checkpoint = s3.uri("checkpoints/cluster");
    assertThat(
            org.apache.hadoop.fs.FileUtil.copy(
                hdfsFs,
                new org.apache.hadoop.fs.Path(startingCheckpoint),
                s3Fs,
                new org.apache.hadoop.fs.Path(checkpoint),
                false,
                session))
        .isTrue();

    Path events = tmp.resolve("events");
    Map<String, String> conf = new LinkedHashMap<>(cluster.appConf(events));
    conf.remove("spark.master");
    conf.putAll(s3.sparkSettings());
    conf.put(FailPoints.PROPERTY, "staging-task");
    List<String> args =
        new ArrayList<>(
            List.of(
                "repartition",
                "--checkpoint",
                checkpoint,
                "--partitions",
                "3",
                "--assume-stopped",
                "--master",
                cluster.masterUrl(),
                "--packages",
                HADOOP_AWS));
    args.addAll(cluster.confArgs(conf));
    // resolved afresh, so that the resolution's own output is seen too
    StandaloneCluster.deleteTree(packagesFolder(HADOOP_AWS));
    Path cliLog = cluster.logDir().resolve("s3-packages-cli.log");
    int exit =
        Launcher.run(
            cliLog,
            Map.of("STATESHIFT_JAVA_OPTS", "-Xmx1g", "SPARK_LOCAL_IP", "127.0.0.1"),
            args.toArray(String[]::new));
    String output = Files.readString(cliLog);
    assertThat(exit).as("exit code; see %s:%n%s", cluster.logDir(), output).isZero();
    assertThat(output)
        .as("Maven's resolution prints nothing but the launcher's line")
        .contains("stateshift: resolving --packages " + HADOOP_AWS)
        .doesNotContain("\u001b")
        .doesNotContain("No SLF4J providers");
    assertProgressNeverPastItsTotal(output);

    SparkEventLog log = SparkEventLog.read(events);
    List<String> shipped = List.of(log.sparkProperties().get("spark.jars").split(","));
    assertThat(shipped)
        .as("the connector from --packages was shipped to the executors, with stateshift's jar")
        .anyMatch(
            jar -> jar.endsWith("/hadoop-aws-" + System.getProperty("stateshift.hadoop") + ".jar"))
        // the AWS SDK it declares: v2's bundle from hadoop-aws 3.4, v1's before (Spark 3.5's 3.3.4)
        .anyMatch(jar -> jar.contains("/awssdk/bundle/") || jar.contains("/aws-java-sdk-bundle/"))
        .anyMatch(jar -> jar.endsWith("/stateshift.jar"));
    assertThat(log.stateshiftTasks()).anyMatch(t -> !t.succeeded());
    assertThat(log.executorsThatRanStateshiftTasks()).as("executors that ran tasks").hasSize(2);

    s3.applyTo(session);
    try {
      assertThat(StateShift.get(spark).verify(checkpoint).problems()).isEmpty();
      Path sink = tmp.resolve("sink");
      input.runAvailable(
          StatefulQueries.GROUPED_COUNT, checkpoint, sink, StateStores.ROCKSDB.withPartitions(4));
      assertThat(StateShift.get(spark).inspect(checkpoint).partitions()).isEqualTo(3);
      assertThat(input.sinkRows(sink, StatefulQueries.GROUPED_COUNT))
          .hasSizeGreaterThan(40_000)
          .containsExactlyElementsOf(oracleRows);
    } finally {
      s3.hadoopSettings().keySet().forEach(session::unset);
    }
  }

  /** The names of the jars in the Workers' SPARK_HOME/jars. */
  private static List<String> workerJars() throws Exception {
    try (var jars = Files.list(cluster.sparkHome().resolve("jars"))) {
      return jars.map(jar -> jar.getFileName().toString()).toList();
    }
  }

  /** Where the launcher keeps what it resolved for {@code --packages coordinates}. */
  private static Path packagesFolder(String coordinates) throws Exception {
    byte[] sha1 =
        java.security.MessageDigest.getInstance("SHA-1")
            .digest(coordinates.getBytes(java.nio.charset.StandardCharsets.UTF_8));
    String key = java.util.HexFormat.of().formatHex(sha1).substring(0, 16);
    // the launcher's folder for the line it runs: <line module>/target/packages
    return AppJar.testClasses().resolveSibling("packages").resolve(key);
  }

  /**
   * A task run again after its executor was lost counts once: no progress line reads more than its
   * stage's tasks.
   */
  private static void assertProgressNeverPastItsTotal(String output) {
    java.util.regex.Pattern line = java.util.regex.Pattern.compile(": (\\d+)/(\\d+)$");
    List<String> progress =
        output.lines().filter(l -> l.startsWith("  ") && line.matcher(l).find()).toList();
    assertThat(progress).as("progress lines in:%n%s", output).isNotEmpty();
    for (String l : progress) {
      var m = line.matcher(l);
      assertThat(m.find()).isTrue();
      assertThat(Integer.parseInt(m.group(1)))
          .as("progress line '%s'", l)
          .isLessThanOrEqualTo(Integer.parseInt(m.group(2)));
    }
  }

  @Test
  void anApplicationOnTheClusterRepartitionsAtRestartWithJarsAndOneSetting() throws Exception {
    SparkEventLog log =
        restartOnTheCluster(
            "on-demand", hdfs.getURI() + "/checkpoints/on-demand", Map.of(), List.of());
    assertThat(log.stateshiftTasks()).isNotEmpty().allMatch(SparkEventLog.TaskRun::succeeded);
    assertThat(log.executorsThatRanStateshiftTasks()).as("executors that ran tasks").hasSize(2);
  }

  /**
   * Under -Pextended: the on-demand path on the cluster (HDFS) and an executor killed on S3 (the
   * command) are in the default run; this is the two together.
   */
  @Test
  @Tag("extended")
  void anApplicationWithItsCheckpointOnS3RepartitionsAtRestartWhileAnExecutorIsKilled()
      throws Exception {
    org.junit.jupiter.api.Assumptions.assumeTrue(S3Server.connectorLoads(), S3Server.NO_CONNECTOR);
    Configuration session = spark.sparkContext().hadoopConfiguration();
    Map<String, String> extra = new LinkedHashMap<>(s3.sparkSettings());
    extra.put(FailPoints.PROPERTY, "staging-task");
    List<Path> connector = StandaloneCluster.s3ConnectorJars();
    // hadoop-aws and the AWS SDK bundle; from hadoop-aws 3.4.2 also the analytics accelerator
    assertThat(connector.stream().map(jar -> jar.getFileName().toString()))
        .anyMatch(name -> name.startsWith("hadoop-aws-"))
        .anyMatch(name -> name.startsWith("bundle-"));
    s3.applyTo(session);
    SparkEventLog log;
    try {
      log = restartOnTheCluster("on-demand-s3", s3.uri("checkpoints/on-demand"), extra, connector);
    } finally {
      s3.hadoopSettings().keySet().forEach(session::unset);
    }
    assertThat(log.sparkProperties().get("spark.jars"))
        .as("the connector was shipped to the executors")
        .contains(connector.stream().map(jar -> jar.toUri().toString()).toList());
    assertLostTasksRanAgainElsewhere(log);
    assertThat(log.executorsThatRanStateshiftTasks())
        .as("executors that ran tasks")
        .hasSizeGreaterThanOrEqualTo(2);
  }

  /**
   * The on-demand path in an application submitted to the cluster: the query (two state stores, 3
   * partitions) runs over two input files in this JVM with its checkpoint at {@code checkpoint},
   * then {@link SubmitApp} restarts it with {@code spark-submit --jars <runtime jar>[,jars]},
   * {@code spark.sql.streaming.stateStore.partitions=6} and {@code extra} as {@code --conf} over a
   * third file. Asserts the restart's repartition and that the output equals an uninterrupted
   * run's; returns the application's event log.
   */
  private SparkEventLog restartOnTheCluster(
      String name, String checkpoint, Map<String, String> extra, List<Path> jars) throws Exception {
    Path input = tmp.resolve("input");
    StreamRun run = new StreamRun(spark, input);
    Path sink = tmp.resolve("sink");
    run.writeEvents(0, 40_000, 5_000);
    run.writeEvents(1, 40_000, 5_000);
    Runnable restoreSettings = SessionConf.set(spark, Map.of("spark.sql.shuffle.partitions", "3"));
    try {
      SubmitApp.runAvailable(spark, input.toString(), checkpoint, sink.toString());
    } finally {
      restoreSettings.run();
    }
    StreamRun.awaitQueryEvents(spark);

    run.writeEvents(2, 40_000, 5_000);
    Path events = tmp.resolve("events");
    Path result = tmp.resolve("result.txt");
    Map<String, String> conf = new LinkedHashMap<>(cluster.appConf(events));
    conf.remove("spark.master");
    conf.put("spark.sql.extensions", "io.stateshift.StateShiftExtensions");
    if (SQL_PROCEDURES) {
      conf.put("spark.sql.catalog.stateshift", "io.stateshift.sql.StateShiftCatalog");
    }
    conf.put("spark.sql.streaming.stateStore.partitions", "6");
    conf.put("spark.sql.shuffle.partitions", "3");
    conf.putAll(extra);
    List<String> shipped = new ArrayList<>(List.of(System.getProperty("stateshift.runtimeJar")));
    jars.forEach(jar -> shipped.add(jar.toString()));
    List<String> args = new ArrayList<>(List.of("--master", cluster.masterUrl()));
    args.addAll(List.of("--class", SubmitApp.class.getName()));
    args.addAll(List.of("--jars", String.join(",", shipped)));
    args.addAll(cluster.confArgs(conf));
    args.add(AppJar.of(tmp.resolve("app.jar"), SubmitApp.class).toString());
    args.addAll(List.of(input.toString(), checkpoint, sink.toString(), result.toString()));
    Path driverLog = cluster.logDir().resolve(name + "-driver.log");
    int exit = cluster.runDriver(driverLog, List.of(), "org.apache.spark.deploy.SparkSubmit", args);
    assertThat(exit).as("spark-submit exit code; see %s", driverLog).isZero();

    Map<String, String> out = new LinkedHashMap<>();
    for (String line : Files.readAllLines(result)) {
      int eq = line.indexOf('=');
      out.put(line.substring(0, eq), line.substring(eq + 1));
    }
    assertThat(out.get("stateInstances")).startsWith("[6, 6");
    assertThat(out.get("repartitionMs")).isNotEqualTo("null");
    if (SQL_PROCEDURES) {
      assertThat(out.get("inspectPartitions")).isEqualTo("[6]");
    } else {
      assertThat(StateShift.get(spark).inspect(checkpoint).partitions()).isEqualTo(6);
    }

    StreamRun oracle = new StreamRun(spark, input);
    Path oracleSink = tmp.resolve("oracle-sink");
    Runnable restoreOracleSettings =
        SessionConf.set(spark, Map.of("spark.sql.shuffle.partitions", "5"));
    try {
      SubmitApp.runAvailable(
          spark, input.toString(), tmp.resolve("oracle-cp").toString(), oracleSink.toString());
    } finally {
      restoreOracleSettings.run();
    }
    StreamRun.awaitQueryEvents(spark);
    assertThat(run.sinkRows(sink, StatefulQueries.GROUPED_COUNT))
        .hasSize(5_000)
        .containsExactlyElementsOf(oracle.sinkRows(oracleSink, StatefulQueries.GROUPED_COUNT));
    return SparkEventLog.read(events);
  }

  /**
   * Some of stateshift's tasks were lost with an executor the driver then removed, and each ran
   * again, to success, on another executor.
   */
  private static void assertLostTasksRanAgainElsewhere(SparkEventLog log) {
    List<SparkEventLog.TaskRun> lost =
        log.stateshiftTasks().stream().filter(t -> !t.succeeded()).toList();
    assertThat(lost).as("tasks lost with their executor").isNotEmpty();
    assertThat(lost).allMatch(t -> t.endReason().equals("ExecutorLostFailure"));
    assertThat(log.removedExecutors()).isNotEmpty();
    for (SparkEventLog.TaskRun failed : lost) {
      assertThat(log.stateshiftTasks())
          .as("the task of %s ran again on another executor", failed)
          .anyMatch(
              t ->
                  t.succeeded()
                      && t.stage() >= failed.stage()
                      && t.index() == failed.index()
                      && !t.executor().equals(failed.executor()));
    }
  }

  /**
   * Runs the command line from its jar (as {@code ./stateshift} does) with {@code --master} the
   * cluster and this cluster's settings; stateshift's jar is not among them.
   */
  private int cli(String name, Path events, Map<String, String> extra, String... command)
      throws Exception {
    Map<String, String> conf = new LinkedHashMap<>(cluster.appConf(events));
    conf.remove("spark.master");
    conf.putAll(extra);
    List<String> args = new ArrayList<>(List.of(command));
    args.addAll(List.of("--master", cluster.masterUrl()));
    args.addAll(cluster.confArgs(conf));
    Path jar = Path.of(System.getProperty("stateshift.libraryJar"));
    assertThat(jar).as("run through Maven: mvn test builds the jar first").isRegularFile();
    return cluster.runDriver(
        cluster.logDir().resolve(name + "-cli.log"),
        List.of(jar),
        "io.stateshift.cli.StateShiftCli",
        args);
  }

  /** A copy of the starting checkpoint, on HDFS, for one test. */
  private static String copyOfStartingCheckpoint(String name) throws Exception {
    org.apache.hadoop.fs.FileSystem fs = hdfs.getFileSystem();
    org.apache.hadoop.fs.Path copy = new org.apache.hadoop.fs.Path("/checkpoints/" + name);
    assertThat(
            org.apache.hadoop.fs.FileUtil.copy(
                fs,
                new org.apache.hadoop.fs.Path(startingCheckpoint),
                fs,
                copy,
                false,
                fs.getConf()))
        .isTrue();
    return hdfs.getURI() + "/checkpoints/" + name;
  }
}
