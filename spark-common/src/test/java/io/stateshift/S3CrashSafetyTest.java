package io.stateshift;

import static org.assertj.core.api.Assertions.assertThat;

import io.stateshift.protocol.FailPoints;
import io.stateshift.testing.ChildJvm;
import io.stateshift.testing.S3KillSwitch;
import io.stateshift.testing.S3Server;
import io.stateshift.testing.SparkTestSession;
import io.stateshift.testing.StateStores;
import io.stateshift.testing.StreamRun;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.stream.Stream;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.FileUtil;
import org.apache.spark.sql.SparkSession;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * {@link CrashSafetyTest} with the checkpoint on S3 (s3proxy through S3A): the command killed with
 * SIGKILL in a child JVM, at stateshift's fail points and inside S3A's own operations, where a
 * rename is a copy and then a delete ({@link S3KillSwitch}): a state file published (copied) whose
 * staged source is not yet deleted, a dropped partition's folder half copied to {@code retired/},
 * the same folder copied with half its sources deleted, and the journal just replaced (one PUT).
 * After each, with no manual step, the query restarted with StateShiftExtensions (or the command
 * run again, then {@code rollback}) leaves exactly the old or the new count, and the whole output
 * equals the uninterrupted oracle's.
 *
 * <p>By default every S3 point and the fail points {@link #DEFAULT_FAIL_POINTS} run on both stores;
 * {@code -Dstateshift.s3.allFailPoints=true} adds every other fail point of {@link FailPoints#ALL}.
 */
@Tag("extended") // about 15 minutes: mvn -B test -Pextended
class S3CrashSafetyTest {
  static final int FROM = CrashSafetyTest.FROM;
  static final int TO = CrashSafetyTest.TO;
  static final int AGAIN = CrashSafetyTest.AGAIN;

  static final Set<String> DEFAULT_FAIL_POINTS = Set.of("staging-task", "published", "retired");

  /** How the interrupted attempt is dealt with. */
  enum Recovery {
    /** The query restarted with StateShiftExtensions, no partition setting. */
    RESTART,
    /** The same repartition run again (it finishes the attempt), then rolled back. */
    RERUN_THEN_ROLLBACK
  }

  /** A kill inside S3A: after the n-th request of a kind on a key matching the pattern. */
  record S3Point(String name, String kind, String keyRegex, int nth, Recovery recovery) {
    @Override
    public String toString() {
      return name;
    }
  }

  static final List<S3Point> S3_POINTS =
      List.of(
          // the first state file published: copied into state/, its staged source not deleted
          new S3Point(
              "publish: copied, source kept",
              "copy",
              "checkpoint/state/0/[0-9]+/",
              1,
              Recovery.RESTART),
          new S3Point(
              "publish: copied, source kept, then rerun",
              "copy",
              "checkpoint/state/0/[0-9]+/",
              2,
              Recovery.RERUN_THEN_ROLLBACK),
          // a decrease moves partitions 3 and 4 to retired/: killed with one file copied
          new S3Point(
              "retire: folder half copied",
              "copy",
              "/retired/state/0/[0-9]+/",
              1,
              Recovery.RESTART),
          // ... and with every file of the folder copied and one source deleted
          new S3Point(
              "retire: folder copied, half deleted, then rerun",
              "delete",
              "checkpoint/state/0/[34]/.",
              1,
              Recovery.RERUN_THEN_ROLLBACK),
          // the journal's save as FINALIZING (its third): one PUT over the record, then killed
          new S3Point(
              "journal save: replaced, then killed",
              "put",
              "_stateshift/journal$",
              3,
              Recovery.RESTART));

  @TempDir static Path shared;
  private static S3Server s3;
  private static CrashCases cases;
  private static int caseCount;

  private final SparkSession spark = SparkTestSession.get();
  private Path tmp;
  private String checkpoint;

  @BeforeAll
  static void startS3() throws Exception {
    s3 = S3Server.startForTestSession(shared.resolve("s3"));
    cases = new CrashCases(SparkTestSession.get(), shared);
  }

  @AfterAll
  static void stopS3() throws Exception {
    if (s3 != null) {
      s3.closeForTestSession();
    }
  }

  static Stream<Arguments> failPoints() {
    boolean all = Boolean.getBoolean("stateshift.s3.allFailPoints");
    List<Arguments> out = new ArrayList<>();
    for (StateStores store : List.of(StateStores.ROCKSDB_CHANGELOG, StateStores.HDFS)) {
      for (String point : FailPoints.ALL) {
        if (all || DEFAULT_FAIL_POINTS.contains(point)) {
          out.add(Arguments.of(store, point));
        }
      }
    }
    return out.stream();
  }

  static Stream<Arguments> s3Points() {
    List<Arguments> out = new ArrayList<>();
    for (StateStores store : List.of(StateStores.ROCKSDB_CHANGELOG, StateStores.HDFS)) {
      for (S3Point point : S3_POINTS) {
        out.add(Arguments.of(store, point));
      }
    }
    return out.stream();
  }

  @ParameterizedTest(name = "SIGKILL at {1} on {0}, checkpoint on s3a")
  @MethodSource("failPoints")
  void killedAtAWriteStep(StateStores store, String point) throws Exception {
    StreamRun run = caseFrom(store);
    killedRepartition(List.of("-D" + FailPoints.PROPERTY + "=" + point), List.of());
    restartAndCheck(run, store, CrashSafetyTest.FINISHED_BY_RECOVERY.contains(point) ? TO : FROM);
  }

  @ParameterizedTest(name = "SIGKILL inside S3A, {1}, on {0}")
  @MethodSource("s3Points")
  void killedInsideAnS3Operation(StateStores store, S3Point point) throws Exception {
    StreamRun run = caseFrom(store);
    List<String> conf = new ArrayList<>();
    if (point.kind().equals("delete")) {
      // a page of one key a multi-object delete, so that a kill can leave some sources deleted
      conf.addAll(List.of("--conf", "spark.hadoop.fs.s3a.bulk.delete.page.size=1"));
    }
    String log =
        killedRepartition(
            List.of(S3KillSwitch.armed(point.kind(), point.keyRegex(), point.nth())), conf);
    assertThat(log).contains("killing the process after " + point.kind());
    if (point.recovery() == Recovery.RERUN_THEN_ROLLBACK) {
      // as the user who saw the crash would: the killed run wrote the logs moments ago
      RepartitionResult rerun =
          StateShift.get(spark)
              .repartitionState(checkpoint)
              .toPartitions(TO)
              .assumeStopped()
              .execute();
      assertThat(rerun.toPartitions()).isEqualTo(TO);
      assertThat(StateShift.get(spark).verify(checkpoint).problems()).isEmpty();
      StateShift.get(spark).rollbackRepartition(checkpoint, true);
      assertThat(StateShift.get(spark).verify(checkpoint).problems()).isEmpty();
      restartAndCheck(run, store, FROM);
    } else {
      restartAndCheck(run, store, TO);
    }
  }

  /** Runs the repartition command in a child JVM that gets killed; returns its log. */
  private String killedRepartition(List<String> systemProperties, List<String> conf)
      throws Exception {
    List<String> props = new ArrayList<>(systemProperties);
    List<String> args = new ArrayList<>();
    args.addAll(
        List.of(
            "repartition",
            "--checkpoint",
            checkpoint,
            "--partitions",
            Integer.toString(TO),
            "--assume-stopped"));
    args.addAll(s3.cliConf());
    args.addAll(S3KillSwitch.cliConf());
    args.addAll(conf);
    Path log = tmp.resolve("child.log");
    int exit = ChildJvm.runCli(log, props, args.toArray(String[]::new));
    String text = Files.readString(log);
    assertThat(exit).as("exit code; log: %s", text).isEqualTo(137);
    // the dead holder's lock is taken over at once: no lease to wait out
    return text;
  }

  /** {@link CrashCases#restartAndCheck} on the case's checkpoint on S3. */
  private void restartAndCheck(StreamRun run, StateStores store, int expected) throws Exception {
    cases.restartAndCheck(
        run,
        store,
        checkpoint,
        s3.fileSystem(spark.sparkContext().hadoopConfiguration()),
        tmp.resolve("sink"),
        expected);
  }

  /**
   * A case's own copy of the store's base checkpoint, uploaded to S3, and of its sink (local). The
   * input folder is shared, reset to the first two files (the file source's log names its files by
   * absolute path).
   */
  private StreamRun caseFrom(StateStores store) throws Exception {
    Path base = cases.base(store);
    tmp = Files.createTempDirectory(shared, "case");
    String key = "case-" + (++caseCount) + "/checkpoint";
    checkpoint = s3.uri(key);
    Configuration conf = spark.sparkContext().hadoopConfiguration();
    FileSystem local = FileSystem.getLocal(conf);
    s3.upload(base.resolve("checkpoint"), key, conf);
    FileUtil.copy(
        local,
        new org.apache.hadoop.fs.Path(base.resolve("sink").toUri()),
        local,
        new org.apache.hadoop.fs.Path(tmp.resolve("sink").toUri()),
        false,
        conf);
    return cases.newRun();
  }
}
