package io.stateshift;

import static org.assertj.core.api.Assertions.assertThat;

import io.stateshift.protocol.FailPoints;
import io.stateshift.testing.CheckpointDigest;
import io.stateshift.testing.ChildJvm;
import io.stateshift.testing.CrashTestInput;
import io.stateshift.testing.SparkTestSession;
import io.stateshift.testing.StateStores;
import io.stateshift.testing.StatefulQueries;
import io.stateshift.testing.StreamRun;
import io.stateshift.testing.TestSets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.streaming.StreamingQueryProgress;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * A repartition that starts from a prepared layout (HDFS-backed, or RocksDB with changelog
 * checkpointing), killed with SIGKILL (in a separate JVM) while a task stages a new partition,
 * after staging, after the switch moved aside the old snapshots whose version the new base takes,
 * after its first file moved in, or after all of them, leaves the old layout or the new one, never
 * a mix: the query restarted with StateShiftExtensions undoes or finishes the attempt, runs on
 * whichever layout that is and writes the uninterrupted output. On a local disk the prepared files
 * are linked, not moved, so after an undone attempt the next repartition uses them again.
 */
class PreparedCrashSafetyTest {
  static final int FROM = 4;
  static final int TO = 3;

  private final SparkSession spark = SparkTestSession.get();

  @TempDir Path tmp;

  @TempDir static Path oracleDir;

  private static List<String> oracle;

  /** Every kill point once, the stores taking turns; every store at each under -Pextended. */
  static Stream<Arguments> killPoints() {
    return TestSets.everyStep(
        List.of(StateStores.ROCKSDB_CHANGELOG, StateStores.HDFS),
        List.of("staging-task", "staged", "replaced", "publish-first-file", "published"));
  }

  static Stream<Arguments> prepareStores() {
    return TestSets.subset(
        List.of(Arguments.of(StateStores.ROCKSDB_CHANGELOG), Arguments.of(StateStores.HDFS)),
        i -> i == 0);
  }

  @ParameterizedTest(name = "{0}: SIGKILL at {1}")
  @MethodSource("killPoints")
  void killedReplayLeavesTheOldOrTheNewLayout(StateStores store, String point) throws Exception {
    Path checkpoint = tmp.resolve("checkpoint");
    Path sink = tmp.resolve("sink");
    StreamRun run = new StreamRun(spark, tmp.resolve("input"));
    run.writeEvents(0, 200, 30);
    run.runAvailable(StatefulQueries.WINDOWED_COUNT, checkpoint, sink, store.withPartitions(FROM));
    long v =
        StateShift.get(spark)
            .prepareState(checkpoint.toString())
            .toPartitions(TO)
            .execute()
            .prepared()
            .orElseThrow()
            .preparedBatch();
    run.writeEvents(1, 200, 30); // the tail the restart replays
    // with a snapshot of its version in each old partition, where the new base goes
    PreparedRepartitionTest.runWithSnapshotOfLastVersion(spark, run, checkpoint, sink, store, FROM);
    String base =
        (PreparedRepartitionTest.lastCommitted(checkpoint) + 1)
            + (store == StateStores.HDFS ? ".snapshot" : ".zip");
    assertThat(checkpoint.resolve("state/0/0/" + base)).exists();

    killRestartAndCheck(run, checkpoint, sink, v, point, store::withPartitions);
  }

  /**
   * The same under state checkpoint format v2, where each new version is named by a fresh id and
   * replaces no old file: killed while a task stages (the attempt is undone, and the next
   * repartition uses the prepared layout again), or after every file moved in (the restart finishes
   * the switch); either way the query writes the uninterrupted output.
   */
  @ParameterizedTest(name = "format v2: SIGKILL at {0}")
  @ValueSource(strings = {"staging-task", "published"})
  void killedReplayUnderFormatV2LeavesTheOldOrTheNewLayout(String point) throws Exception {
    StateStores store = StateStores.ROCKSDB_CHANGELOG;
    Path checkpoint = tmp.resolve("checkpoint");
    Path sink = tmp.resolve("sink");
    StreamRun run = new StreamRun(spark, tmp.resolve("input"));
    run.writeEvents(0, 200, 30);
    run.runAvailable(
        StatefulQueries.WINDOWED_COUNT, checkpoint, sink, CheckpointFormatV2Test.v2(store, FROM));
    long v = StateAssertions.preparedBatch(spark, checkpoint, TO);
    run.writeEvents(1, 200, 30); // the tail the restart replays
    run.runAvailable(
        StatefulQueries.WINDOWED_COUNT, checkpoint, sink, CheckpointFormatV2Test.v2(store, FROM));

    killRestartAndCheck(
        run,
        checkpoint,
        sink,
        v,
        point,
        partitions -> CheckpointFormatV2Test.v2(store, partitions));
  }

  /**
   * Kills a repartition from the layout prepared at batch {@code v} at {@code point}, restarts the
   * query (with {@code conf} for a partition count, which the checkpoint overrides) on more input,
   * checks that it ran on the old layout or the new one and that a layout undone is used again,
   * then runs the rest of the input and compares the output with the uninterrupted run's.
   */
  private void killRestartAndCheck(
      StreamRun run,
      Path checkpoint,
      Path sink,
      long v,
      String point,
      java.util.function.IntFunction<Map<String, String>> conf)
      throws Exception {
    Path log = tmp.resolve("child.log");
    int exit =
        ChildJvm.runCli(
            log,
            List.of("-D" + FailPoints.PROPERTY + "=" + point),
            "repartition",
            "--checkpoint",
            checkpoint.toString(),
            "--partitions",
            Integer.toString(TO),
            "--assume-stopped");
    String childLog = Files.readString(log);
    assertThat(exit).as("exit code; log: %s", childLog).isEqualTo(137);
    assertThat(childLog).contains("using the layout prepared at batch " + v);

    boolean finished = CrashSafetyTest.FINISHED_BY_RECOVERY.contains(point);
    run.writeEvents(2, 200, 30);
    List<StreamingQueryProgress> restarted =
        run.runAvailable(StatefulQueries.WINDOWED_COUNT, checkpoint, sink, conf.apply(7));
    assertThat(StreamRun.stateInstances(restarted)).containsOnly((long) (finished ? TO : FROM));
    assertThat(checkpoint.resolve("_stateshift/journal")).doesNotExist();
    if (finished) {
      assertThat(checkpoint.resolve("_stateshift/prepared")).doesNotExist();
    } else {
      RepartitionResult again =
          StateShift.get(spark).repartitionState(checkpoint.toString()).toPartitions(TO).execute();
      assertThat(again.path().prepared()).as("path: %s", again.path()).isTrue();
      assertThat(again.path().preparedBatch()).isEqualTo(v);
    }
    assertThat(StateShift.get(spark).verify(checkpoint.toString()).problems()).isEmpty();

    run.writeEvents(3, 200, 30);
    run.writeFlush(4);
    run.runAvailable(StatefulQueries.WINDOWED_COUNT, checkpoint, sink, conf.apply(7));
    assertThat(run.sinkRows(sink, StatefulQueries.WINDOWED_COUNT))
        .containsExactlyElementsOf(oracle());
  }

  /**
   * A prepare killed while its tasks write the new partitions leaves a folder without a manifest,
   * which is never used, and nothing else: the next prepare removes it, and the repartition then
   * starts from the finished layout.
   */
  @ParameterizedTest(name = "{0}")
  @MethodSource("prepareStores")
  void killedPrepareLeavesNothingThatIsUsed(StateStores store) throws Exception {
    Path checkpoint = tmp.resolve("checkpoint");
    Path sink = tmp.resolve("sink");
    StreamRun run = new StreamRun(spark, tmp.resolve("input"));
    run.writeEvents(0, 200, 30);
    run.writeEvents(1, 200, 30);
    run.runAvailable(StatefulQueries.WINDOWED_COUNT, checkpoint, sink, store.withPartitions(FROM));
    Map<String, String> before = CheckpointDigest.of(checkpoint);

    Path log = tmp.resolve("child.log");
    int exit =
        ChildJvm.runCli(
            log,
            List.of("-D" + FailPoints.PROPERTY + "=staging-task"),
            "prepare",
            "--checkpoint",
            checkpoint.toString(),
            "--partitions",
            Integer.toString(TO));
    assertThat(exit).as("exit code; log: %s", Files.readString(log)).isEqualTo(137);
    Map<String, String> after = CheckpointDigest.of(checkpoint);
    assertThat(after.keySet())
        .as("an unfinished prepared folder, no manifest")
        .anyMatch(p -> p.startsWith("_stateshift/prepared/"))
        .noneMatch(p -> p.endsWith("manifest.json"));
    after.keySet().removeIf(p -> p.startsWith("_stateshift"));
    before.keySet().removeIf(p -> p.startsWith("_stateshift"));
    assertThat(after).as("everything outside _stateshift/prepared").isEqualTo(before);

    PrepareResult prepared =
        StateShift.get(spark).prepareState(checkpoint.toString()).toPartitions(TO).execute();
    assertThat(prepared.removed()).as("the unfinished folder").isEqualTo(1);
    run.writeEvents(2, 200, 30);
    run.runAvailable(StatefulQueries.WINDOWED_COUNT, checkpoint, sink, store.withPartitions(FROM));
    RepartitionResult result =
        StateShift.get(spark).repartitionState(checkpoint.toString()).toPartitions(TO).execute();
    assertThat(result.path().prepared()).as("path: %s", result.path()).isTrue();
    assertThat(result.path().preparedBatch())
        .isEqualTo(prepared.prepared().orElseThrow().preparedBatch());

    run.writeEvents(3, 200, 30);
    run.writeFlush(4);
    run.runAvailable(StatefulQueries.WINDOWED_COUNT, checkpoint, sink, store.withPartitions(7));
    assertThat(run.sinkRows(sink, StatefulQueries.WINDOWED_COUNT))
        .containsExactlyElementsOf(oracle());
  }

  private synchronized List<String> oracle() {
    if (oracle == null) {
      oracle = CrashTestInput.build(spark, oracleDir.resolve("oracle")).oracle();
    }
    return oracle;
  }
}
