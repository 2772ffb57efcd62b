package io.stateshift;

import static org.assertj.core.api.Assertions.assertThat;

import io.stateshift.checkpoint.CheckpointFiles;
import io.stateshift.config.StateShiftConf;
import io.stateshift.doctor.Doctor;
import io.stateshift.doctor.DoctorReport;
import io.stateshift.protocol.FailPoints;
import io.stateshift.testing.CheckpointDigest;
import io.stateshift.testing.CheckpointTrees;
import io.stateshift.testing.ChildJvm;
import io.stateshift.testing.S3Server;
import io.stateshift.testing.SparkTestSession;
import io.stateshift.testing.StateStores;
import io.stateshift.testing.StreamRun;
import io.stateshift.testing.TestSets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.stream.Stream;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FileStatus;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.FileUtil;
import org.apache.hadoop.fs.LocatedFileStatus;
import org.apache.hadoop.fs.RemoteIterator;
import org.apache.hadoop.hdfs.MiniDFSCluster;
import org.apache.spark.sql.SparkSession;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * A repartition killed with SIGKILL (the command, in a child JVM) is run again at once with the
 * same command, without {@code --assume-stopped}, on a checkpoint whose query stopped longer ago
 * than the recent-write window: the rerun finishes (or undoes and redoes) the attempt and exits 0
 * at once. The log entries the killed attempt wrote moments before are stateshift's own, not a
 * running query's, so they must not make the rerun refuse (CHECKPOINT_IN_USE, "or wait 109 s").
 * Before the rerun, {@code verify} and the doctor describe the interrupted attempt and the command
 * that finishes it, not the attempt's own batch as a query's unfinished one.
 *
 * <p>On local disk and HDFS (MiniDFSCluster) the base checkpoint's files are backdated and the
 * default window applies; S3 cannot backdate, so there the window is {@link #S3_WINDOW_MS} and the
 * uploaded base is aged past it first. By default the kill points of issue #43 run on local disk
 * and one switching or finalizing point on HDFS and on s3a; {@code -Pextended} runs every point of
 * {@link FailPoints#ALL} on each. Where S3A has no conditional PUT (hadoop-aws before 3.4.2) the
 * command is first checked to be refused without {@code --assume-stopped}; then the killed command
 * and its rerun both carry it, as they do for the users of that S3A.
 */
class KilledRerunTest {
  enum Storage {
    LOCAL,
    HDFS,
    S3A
  }

  private static final int TO = CrashSafetyTest.TO;
  private static final StateStores STORE = StateStores.HDFS;

  /** The window where the base is backdated (local disk, HDFS): the default. */
  private static final long DEFAULT_WINDOW_MS = StateShiftConf.RECENT_WRITE_WINDOW_MS.parse(null);

  /** The window on s3a, where the uploaded base must age past it (a wait per case). */
  private static final long S3_WINDOW_MS = 60_000;

  /**
   * How young the killed attempt's own log entry must be when the rerun starts, at most: the window
   * less this, time enough for the rerun's JVM and Spark to start and reach the check.
   */
  private static final long STARTUP_ALLOWANCE_MS = 35_000;

  private static final List<String> ISSUE_POINTS =
      List.of("offsets", "published", "commit", "journal-finalizing");

  @TempDir static Path shared;
  private static CrashCases cases;
  private static MiniDFSCluster hdfs;
  private static S3Server s3;
  private static int caseCount;

  private final SparkSession spark = SparkTestSession.get();
  private Path tmp;
  private String checkpoint;
  private FileSystem fs;
  // both commands carry --assume-stopped (a store that cannot be locked)
  private boolean unlocked;

  @BeforeAll
  static void sharedCases() {
    cases = new CrashCases(SparkTestSession.get(), shared);
  }

  @AfterAll
  static void stopStores() throws Exception {
    if (s3 != null) {
      s3.closeForTestSession();
    }
    if (hdfs != null) {
      hdfs.shutdown();
    }
  }

  static Stream<Arguments> killPoints() {
    List<Arguments> out = new ArrayList<>();
    if (TestSets.extended()) {
      for (Storage storage : Storage.values()) {
        FailPoints.ALL.forEach(point -> out.add(Arguments.of(storage, point)));
      }
    } else {
      ISSUE_POINTS.forEach(point -> out.add(Arguments.of(Storage.LOCAL, point)));
      // killed inside the stage: its exchange folder stays behind, for the rerun to remove
      out.add(Arguments.of(Storage.LOCAL, "staging-task"));
      out.add(Arguments.of(Storage.HDFS, "journal-finalizing"));
      out.add(Arguments.of(Storage.S3A, "published"));
    }
    return out.stream();
  }

  @ParameterizedTest(name = "SIGKILL at {1} on {0}, the same command again at once")
  @MethodSource("killPoints")
  void killedRepartitionRunsAgainAtOnce(Storage storage, String point) throws Exception {
    StreamRun run = caseOn(storage);
    // S3A without a conditional PUT (hadoop-aws before 3.4.2) cannot be locked: the command is
    // refused there without --assume-stopped, and its users run both with it
    boolean lockless =
        storage == Storage.S3A
            && !fs.hasPathCapability(
                new org.apache.hadoop.fs.Path(checkpoint), CheckpointFiles.CONDITIONAL_CREATE);
    if (lockless) {
      assertTheCommandIsRefusedWithoutALock(storage);
    }
    unlocked = lockless;
    long window = storage == Storage.S3A ? S3_WINDOW_MS : DEFAULT_WINDOW_MS;
    long baseAge = System.currentTimeMillis() - newestLogEntry().getModificationTime();
    assertThat(baseAge).as("the stopped query's last log entry, ms ago").isGreaterThan(window);

    Set<String> before = logEntries();
    int killed = repartition(storage, List.of("-D" + FailPoints.PROPERTY + "=" + point), "killed");
    assertThat(killed).as("exit code; log: %s", log("killed")).isEqualTo(137);
    if (point.equals("staging-task")) {
      assertThat(runFolders("stateshift-exchange-"))
          .as("the killed run's exchange folder")
          .isNotEmpty();
    }
    // Spark's own local folders (the stores' local copies, the shuffle's files) stay behind too
    assertThat(runFolders("spark-")).as("the killed run's Spark folder").isNotEmpty();
    boolean switched = CrashSafetyTest.FINISHED_BY_RECOVERY.contains(point);
    FileStatus newest = newestLogEntry();
    if (switched && !point.equals("journal-switching")) {
      // the attempt's own entry: the one a recency check that counts it takes for a query's
      assertThat(before)
          .doesNotContain(
              newest.getPath().getParent().getName() + "/" + newest.getPath().getName());
      assertThat(System.currentTimeMillis() - newest.getModificationTime())
          .as("age of the killed attempt's %s, ms", newest.getPath())
          .isLessThan(window - STARTUP_ALLOWANCE_MS);
    }
    if (switched) {
      assertVerifyAndDoctorNameTheFinishingCommand();
    }

    long started = System.currentTimeMillis();
    int rerun = repartition(storage, List.of(), "rerun");
    long took = System.currentTimeMillis() - started;
    assertThat(rerun).as("exit code of the rerun; log: %s", log("rerun")).isZero();
    assertThat(log("rerun")).doesNotContain("CHECKPOINT_IN_USE");
    if (switched) {
      assertThat(log("rerun")).contains("Finishing interrupted attempt");
    }
    assertThat(took).as("the rerun's time, ms (no window waited out)").isLessThan(window);
    for (String prefix : List.of("stateshift-exchange-", "spark-", "blockmgr-")) {
      assertThat(runFolders(prefix))
          .as("the killed run's %s folders in spark.local.dir, after the rerun", prefix)
          .isEmpty();
    }

    VerificationReport verified = StateShift.get(spark).verify(checkpoint);
    assertThat(verified.problems()).isEmpty();
    assertThat(verified.partitions()).isEqualTo(TO);
    cases.restartAndCheck(run, STORE, checkpoint, fs, tmp.resolve("sink"), TO);
  }

  /**
   * Before the rerun: {@code verify} reports the interrupted attempt with the command that finishes
   * it, and not the attempt's own batch as one the query must complete; the doctor alike.
   */
  private void assertVerifyAndDoctorNameTheFinishingCommand() {
    String root =
        CheckpointFiles.at(checkpoint, spark.sparkContext().hadoopConfiguration())
            .root()
            .toString();
    String command = "./stateshift repartition --checkpoint " + root + " --partitions " + TO;
    List<String> problems = StateShift.get(spark).verify(checkpoint).problems();
    assertThat(problems).anySatisfy(p -> assertThat(p).contains("interrupted", command));
    assertThat(problems)
        .noneSatisfy(p -> assertThat(p).containsIgnoringCase("start the query once"));
    assertThat(problems).noneSatisfy(p -> assertThat(p).contains("was not committed"));
    DoctorReport doctor = new Doctor(spark, checkpoint).run();
    assertThat(doctor.has("UNFINISHED_REPARTITION")).isTrue();
    assertThat(doctor.toString()).contains(command);
    assertThat(doctor.has("PENDING_BATCH")).as("doctor: %s", doctor).isFalse();
  }

  /**
   * Where the store offers no create-if-absent (S3A before hadoop-aws 3.4.2: Spark 4.0's 3.4.1,
   * Spark 3.5's 3.3.4), the command without {@code --assume-stopped} is refused as bad input (exit
   * 2) in a message that names the way out, and the checkpoint is unchanged.
   */
  private void assertTheCommandIsRefusedWithoutALock(Storage storage) throws Exception {
    org.apache.hadoop.fs.Path root = new org.apache.hadoop.fs.Path(checkpoint);
    Map<String, String> before = CheckpointDigest.of(fs, root);
    int exit = repartition(storage, List.of(), "unlocked");
    assertThat(exit).as("exit code; log: %s", log("unlocked")).isEqualTo(2);
    assertThat(log("unlocked"))
        .contains("Cannot lock checkpoint")
        .contains("offers no create-if-absent")
        .contains("--assume-stopped");
    assertThat(CheckpointDigest.of(fs, root)).as("the checkpoint is unchanged").isEqualTo(before);
  }

  /** Runs {@code ./stateshift repartition} of the case's checkpoint in a child JVM. */
  private int repartition(Storage storage, List<String> systemProperties, String name)
      throws Exception {
    List<String> args =
        new ArrayList<>(
            List.of(
                "repartition", "--checkpoint", checkpoint, "--partitions", Integer.toString(TO)));
    if (storage == Storage.S3A) {
      args.addAll(s3.cliConf());
      args.addAll(
          List.of("--conf", StateShiftConf.RECENT_WRITE_WINDOW_MS.key() + "=" + S3_WINDOW_MS));
    }
    if (unlocked) {
      args.add("--assume-stopped");
    }
    List<String> properties = new ArrayList<>(systemProperties);
    // both runs share one local folder, as on a machine
    properties.add("-Dspark.local.dir=" + tmp.resolve("local"));
    return ChildJvm.runCli(tmp.resolve(name + ".log"), properties, args.toArray(String[]::new));
  }

  /** The folders of a prefix left in the runs' {@code spark.local.dir}. */
  private List<Path> runFolders(String prefix) throws java.io.IOException {
    Path local = tmp.resolve("local");
    if (!Files.isDirectory(local)) {
      return List.of();
    }
    try (Stream<Path> entries = Files.list(local)) {
      return entries.filter(p -> p.getFileName().toString().startsWith(prefix)).toList();
    }
  }

  private String log(String name) throws java.io.IOException {
    return Files.readString(tmp.resolve(name + ".log"));
  }

  /** The newest entry of the offset and commit logs. */
  private FileStatus newestLogEntry() throws java.io.IOException {
    return logStatuses().stream()
        .max(java.util.Comparator.comparingLong(FileStatus::getModificationTime))
        .orElseThrow();
  }

  /** The entries of the offset and commit logs, as {@code offsets/3}. */
  private Set<String> logEntries() throws java.io.IOException {
    Set<String> out = new java.util.TreeSet<>();
    for (FileStatus status : logStatuses()) {
      out.add(status.getPath().getParent().getName() + "/" + status.getPath().getName());
    }
    return out;
  }

  private List<FileStatus> logStatuses() throws java.io.IOException {
    List<FileStatus> entries = new ArrayList<>();
    for (String log : List.of("offsets", "commits")) {
      entries.addAll(
          Arrays.asList(fs.listStatus(new org.apache.hadoop.fs.Path(checkpoint + "/" + log))));
    }
    return entries.stream()
        .filter(FileStatus::isFile)
        .filter(s -> !s.getPath().getName().startsWith("."))
        .toList();
  }

  /**
   * A case's own copy of the base checkpoint on {@code storage}, older than the window there, and
   * of its sink (local); the input reset.
   */
  private StreamRun caseOn(Storage storage) throws Exception {
    Path base = cases.base(STORE);
    tmp = Files.createTempDirectory(shared, "case");
    Configuration conf = spark.sparkContext().hadoopConfiguration();
    FileSystem local = FileSystem.getLocal(conf);
    CheckpointTrees.copyWithoutChecksums(base.resolve("sink"), tmp.resolve("sink"));
    long stoppedAt = System.currentTimeMillis() - 10 * 60_000;
    String key = "case-" + (++caseCount) + "/checkpoint";
    switch (storage) {
      case LOCAL -> {
        Path copy = tmp.resolve("checkpoint");
        CheckpointTrees.copyWithoutChecksums(base.resolve("checkpoint"), copy);
        checkpoint = copy.toString();
        fs = FileSystem.getLocal(conf);
        backdate(stoppedAt);
      }
      case HDFS -> {
        checkpoint = hdfs().getURI() + "/" + key;
        fs = hdfs().getFileSystem();
        FileUtil.copy(
            local,
            new org.apache.hadoop.fs.Path(base.resolve("checkpoint").toUri()),
            fs,
            new org.apache.hadoop.fs.Path(checkpoint),
            false,
            conf);
        backdate(stoppedAt);
      }
      case S3A -> {
        checkpoint = s3().uri(key);
        s3().upload(base.resolve("checkpoint"), key, conf);
        fs = s3().fileSystem(conf);
        // objects cannot be backdated: the upload ages past the window
        long age = System.currentTimeMillis() - newestLogEntry().getModificationTime();
        Thread.sleep(Math.max(0, S3_WINDOW_MS + 2_000 - age));
      }
    }
    return cases.newRun();
  }

  private void backdate(long to) throws java.io.IOException {
    RemoteIterator<LocatedFileStatus> all =
        fs.listFiles(new org.apache.hadoop.fs.Path(checkpoint), true);
    while (all.hasNext()) {
      fs.setTimes(all.next().getPath(), to, -1);
    }
  }

  private static synchronized MiniDFSCluster hdfs() throws Exception {
    if (hdfs == null) {
      Configuration conf = new Configuration();
      conf.set(MiniDFSCluster.HDFS_MINIDFS_BASEDIR, shared.resolve("hdfs").toString());
      hdfs = new MiniDFSCluster.Builder(conf).numDataNodes(1).build();
      hdfs.waitActive();
    }
    return hdfs;
  }

  private static synchronized S3Server s3() throws Exception {
    if (s3 == null) {
      s3 = S3Server.startForTestSession(shared.resolve("s3"));
    }
    return s3;
  }
}
