package io.stateshift;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.stateshift.checkpoint.CheckpointFiles;
import io.stateshift.estimate.CostModel;
import io.stateshift.protocol.CheckpointLock;
import io.stateshift.testing.CheckpointDigest;
import io.stateshift.testing.Launcher;
import io.stateshift.testing.S3Server;
import io.stateshift.testing.SparkTestSession;
import io.stateshift.testing.StandaloneCluster;
import io.stateshift.testing.StateStores;
import io.stateshift.testing.StatefulQueries;
import io.stateshift.testing.StreamRun;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import org.apache.hadoop.fs.FileSystem;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.streaming.StreamingQueryProgress;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * The checkpoint on a real S3 API (s3proxy on loopback, {@link S3Server}) through Hadoop's S3A
 * connector, for each state store: a repartition up and one down, {@code verify}, a rollback that
 * restores the layout byte for byte, the on-demand path at a query's start (from a layout prepared
 * while the query ran, where the store logs its changes), and a second repartition refused while
 * the lock is held; the query's whole output equals an uninterrupted run's. Where S3A has no
 * conditional PUT (hadoop-aws before 3.4.2), the lock's refusal instead, and the same with {@code
 * assumeStopped}. And the command with a wrong secret key, refused in one line.
 */
class ObjectStoreTest {
  private static S3Server s3;
  private final SparkSession spark = SparkTestSession.get();

  @TempDir Path tmp;

  @BeforeAll
  static void startS3(@TempDir Path dir) throws Exception {
    org.junit.jupiter.api.Assumptions.assumeTrue(S3Server.connectorLoads(), S3Server.NO_CONNECTOR);
    s3 = S3Server.startForTestSession(dir);
  }

  @AfterAll
  static void stopS3() throws Exception {
    if (s3 != null) {
      s3.closeForTestSession();
    }
  }

  @ParameterizedTest(
      name = "{0} state, checkpoint on s3a: 4 -> 6 -> 3, rollback, prepare 8, on-demand 8")
  @EnumSource(
      value = StateStores.class,
      names = {"HDFS", "ROCKSDB", "ROCKSDB_CHANGELOG"})
  void repartitionRollbackVerifyAndOnDemandOnS3(StateStores store) throws Exception {
    String checkpoint = s3.uri("checkpoints/" + store.name().toLowerCase());
    StreamRun run = new StreamRun(spark, tmp.resolve("input"));
    Path sink = tmp.resolve("sink");
    Map<String, String> conf = store.withPartitions(4);
    run.writeEvents(0, 300, 30);
    run.writeEvents(1, 300, 30);
    run.runAvailable(StatefulQueries.WINDOWED_COUNT, checkpoint, sink, conf);

    // where S3A has no conditional PUT (hadoop-aws before 3.4.2: Spark 4.0's 3.4.1, Spark 3.5's
    // 3.3.4), its refusal to lock is checked, and the commands go on as users run them there, on
    // their word that the query is stopped
    boolean locks = s3aLocks(checkpoint);
    if (locks) {
      assertASecondRepartitionIsRefusedWhileTheLockIsHeld(checkpoint);
    }

    RepartitionResult up =
        stoppedUnless(locks, StateShift.get(spark).repartitionState(checkpoint).toPartitions(6))
            .execute();
    assertThat(up.plan().checkpoint()).startsWith("s3a://");
    // the cost model prices the files as this storage's
    assertThat(up.plan().estimate().orElseThrow().job().storage())
        .isEqualTo(CostModel.Storage.OBJECT_STORE);
    assertThat(up.stores()).allSatisfy(s -> assertThat(s.rowsWritten()).isEqualTo(s.rowsRead()));
    StateAssertions.assertEveryKeyInItsSparkPartition(spark, checkpoint, up.batchId(), 6);
    run.writeEvents(2, 300, 30);
    run.runAvailable(StatefulQueries.WINDOWED_COUNT, checkpoint, sink, conf);

    // down, then rolled back: the layout of 6 comes back byte for byte
    Map<String, String> beforeDown = withoutStateshiftFolder(digest(checkpoint));
    stoppedUnless(locks, StateShift.get(spark).repartitionState(checkpoint).toPartitions(3))
        .execute();
    VerificationReport verified = StateShift.get(spark).verify(checkpoint);
    assertThat(verified.problems()).isEmpty();
    assertThat(verified.partitions()).isEqualTo(3);
    StateAssertions.assertMetadataReports(spark, checkpoint, 3);
    assertThat(files(checkpoint).exists(files(checkpoint).path("state/0/5"))).isFalse();
    RepartitionPlan undone = StateShift.get(spark).rollbackRepartition(checkpoint, !locks);
    assertThat(undone.toPartitions()).isEqualTo(6);
    assertThat(withoutStateshiftFolder(digest(checkpoint))).isEqualTo(beforeDown);
    assertThat(StateShift.get(spark).verify(checkpoint).problems()).isEmpty();

    // the on-demand path: the query starts with 8 partitions set, and repartitions itself; where
    // the store keeps the logs of its changes, from a layout prepared before a tail batch (two
    // write tasks of four new partitions each on S3); Spark 3.5 refuses the prepared layout's
    // replay
    boolean prepared =
        store != StateStores.ROCKSDB && !"3.5".equals(System.getProperty("stateshift.line"));
    if (prepared) {
      StateShift.get(spark).prepareState(checkpoint).toPartitions(8).execute();
    }
    run.writeEvents(3, 300, 30);
    run.runAvailable(StatefulQueries.WINDOWED_COUNT, checkpoint, sink, conf);
    Map<String, String> onDemand = new java.util.HashMap<>(conf);
    onDemand.put(StateShiftExtensions.STATE_PARTITIONS, "8");
    run.writeEvents(4, 300, 30);
    run.writeFlush(5);
    List<StreamingQueryProgress> last =
        run.runAvailable(StatefulQueries.WINDOWED_COUNT, checkpoint, sink, onDemand);
    assertThat(StreamRun.stateInstances(last)).containsOnly(8L);
    RepartitionResult atStart =
        StateShiftExtensions.lastRepartition(last.get(0).id()).orElseThrow();
    assertThat(atStart.path().prepared()).isEqualTo(prepared);
    if (prepared) {
      assertThat(atStart.path().rowsReplayed()).isPositive();
    }
    assertThat(StateShift.get(spark).verify(checkpoint).problems()).isEmpty();
    assertThat(files(checkpoint).exists(files(checkpoint).path("_stateshift/journal"))).isFalse();
    assertThat(files(checkpoint).exists(files(checkpoint).path("_stateshift/lock"))).isFalse();

    StreamRun oracle = new StreamRun(spark, tmp.resolve("input"));
    Path oracleSink = tmp.resolve("oracle-sink");
    oracle.runAvailable(
        StatefulQueries.WINDOWED_COUNT,
        tmp.resolve("oracle-checkpoint"),
        oracleSink,
        StateStores.HDFS.withPartitions(2));
    assertThat(run.sinkRows(sink, StatefulQueries.WINDOWED_COUNT))
        .isNotEmpty()
        .containsExactlyElementsOf(oracle.sinkRows(oracleSink, StatefulQueries.WINDOWED_COUNT));
  }

  /**
   * The command, run as users run it ({@code ./stateshift} with the connector's jars), with a wrong
   * secret key: S3 answers its first request with 403. It is refused as bad input (exit 2), in one
   * line that names the setting to fix, and nothing in the bucket changed.
   */
  @Test
  void aWrongSecretKeyIsRefusedInOneLineNamingTheSetting() throws Exception {
    String checkpoint = s3.uri("checkpoints/wrong-secret");
    StreamRun run = new StreamRun(spark, tmp.resolve("input"));
    run.writeEvents(0, 100, 10);
    run.runAvailable(
        StatefulQueries.WINDOWED_COUNT,
        checkpoint,
        tmp.resolve("sink"),
        StateStores.HDFS.withPartitions(2));
    Map<String, String> before = digest(s3.uri(""));

    List<String> args =
        new java.util.ArrayList<>(
            List.of("repartition", "--checkpoint", checkpoint, "--partitions", "3"));
    args.addAll(s3.cliConf());
    args.addAll(
        List.of(
            "--conf", "spark.hadoop.fs.s3a.bucket." + s3.bucket() + ".secret.key=not-the-secret"));
    Path log = tmp.resolve("wrong-secret.log");
    String connector =
        StandaloneCluster.s3ConnectorJars().stream()
            .map(Path::toString)
            .collect(java.util.stream.Collectors.joining(":"));
    int exit =
        Launcher.run(log, Map.of("STATESHIFT_CLASSPATH", connector), args.toArray(String[]::new));

    String text = Files.readString(log);
    assertThat(exit).as("exit code; log: %s", text).isEqualTo(2);
    // without the launcher's progress lines, and the three "SLF4J:" lines the AWS SDK bundle's
    // own (shaded) SLF4J prints wherever S3A starts, in any program
    List<String> lines =
        text.lines()
            .filter(line -> !line.isBlank() && !line.startsWith("stateshift: "))
            .filter(line -> !line.startsWith("SLF4J: "))
            .toList();
    assertThat(lines).as("log: %s", text).hasSize(1);
    assertThat(lines.get(0))
        .startsWith("error: ")
        .contains(checkpoint)
        .contains("--conf spark.hadoop.fs.s3a.access.key")
        .contains("fs.s3a.secret.key");
    assertThat(digest(s3.uri(""))).as("the bucket is untouched").isEqualTo(before);
  }

  /**
   * Whether this S3A can take the lock (a conditional PUT, hadoop-aws 3.4.2 and later); where it
   * cannot, a repartition is refused in one message that names the way out, and nothing changed.
   */
  private boolean s3aLocks(String checkpoint) throws Exception {
    try (CheckpointLock held = CheckpointLock.acquire(files(checkpoint), "probe", 600_000)) {
      return true;
    } catch (StateShiftException e) {
      assertThat(e.getMessage()).contains("offers no create-if-absent");
      Map<String, String> before = digest(checkpoint);
      assertThatThrownBy(
              () -> StateShift.get(spark).repartitionState(checkpoint).toPartitions(6).execute())
          .isInstanceOf(StateShiftException.class)
          .hasMessageContaining("Cannot lock checkpoint")
          .hasMessageContaining("--assume-stopped");
      assertThat(digest(checkpoint)).isEqualTo(before);
      return false;
    }
  }

  /** The change, with {@code assumeStopped} where the store cannot be locked. */
  private static <S extends StateChange<S>> S stoppedUnless(boolean locks, S change) {
    return locks ? change : change.assumeStopped();
  }

  /** The lock is a conditional PUT on S3A: a second attempt stops and changes nothing. */
  private void assertASecondRepartitionIsRefusedWhileTheLockIsHeld(String checkpoint)
      throws Exception {
    try (CheckpointLock held =
        CheckpointLock.acquire(files(checkpoint), "repartition to 8", 600_000)) {
      Map<String, String> before = digest(checkpoint);
      assertThatThrownBy(
              () -> StateShift.get(spark).repartitionState(checkpoint).toPartitions(6).execute())
          .isInstanceOf(StateShiftException.class)
          .hasMessageContaining("is locked by")
          .hasMessageContaining("(repartition to 8)");
      assertThat(digest(checkpoint)).isEqualTo(before);
    }
  }

  private CheckpointFiles files(String checkpoint) {
    return CheckpointFiles.at(checkpoint, spark.sparkContext().hadoopConfiguration());
  }

  private Map<String, String> digest(String checkpoint) throws Exception {
    FileSystem fs = s3.fileSystem(spark.sparkContext().hadoopConfiguration());
    return CheckpointDigest.of(fs, new org.apache.hadoop.fs.Path(checkpoint));
  }

  private static Map<String, String> withoutStateshiftFolder(Map<String, String> digest) {
    Map<String, String> out = new TreeMap<>(digest);
    out.keySet().removeIf(k -> k.startsWith("_stateshift"));
    return out;
  }
}
