package io.stateshift;

import static org.assertj.core.api.Assertions.assertThat;

import io.stateshift.protocol.FailPoints;
import io.stateshift.testing.CheckpointTrees;
import io.stateshift.testing.ChildJvm;
import io.stateshift.testing.FaultyFileSystem;
import io.stateshift.testing.RunningQueryMain;
import io.stateshift.testing.SparkFeatures;
import io.stateshift.testing.SparkTestSession;
import io.stateshift.testing.StateStores;
import io.stateshift.testing.StatefulQueries;
import io.stateshift.testing.StreamRun;
import io.stateshift.testing.TestSets;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.stream.Stream;
import org.apache.hadoop.fs.FileSystem;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.streaming.StreamingQueryProgress;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.DynamicTest;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.TestFactory;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * Crash safety: a repartition killed with SIGKILL (in a separate JVM) at each of its write steps,
 * or failed by an I/O error of the file system at each step, leaves a checkpoint that starts
 * exactly as before or exactly as after; the restarted query's output equals the uninterrupted
 * oracle, and a second repartition to completion is correct as well.
 *
 * <p>Set-up is shared to keep the class fast: the input files, the oracle and one checkpoint per
 * state store (two batches, {@link #FROM} partitions) are built once and copied for each case.
 */
class CrashSafetyTest {
  static final int FROM = 5;
  static final int TO = 3;
  static final int AGAIN = 6;

  /** Points after which the attempt is finished by recovery; before them it is undone. */
  static final Set<String> FINISHED_BY_RECOVERY =
      Set.of(
          "journal-switching",
          "offsets",
          "replaced",
          "publish-first-file",
          "published",
          "commit",
          "journal-finalizing",
          "metadata-v1",
          "retired",
          "history");

  @TempDir static Path shared;
  private static CrashCases cases;

  private final SparkSession spark = SparkTestSession.get();

  /** The current case's folder (dynamic tests share one instance, so not a @TempDir). */
  private Path tmp;

  private long caseStarted;

  @BeforeAll
  static void sharedCases() {
    cases = new CrashCases(SparkTestSession.get(), shared);
  }

  /** Every write step; on both stores under -Pextended, else the stores take turns. */
  static Stream<Arguments> killPoints() {
    return TestSets.orCover(
        TestSets.everyStep(
            List.of(StateStores.ROCKSDB_CHANGELOG, StateStores.HDFS), FailPoints.ALL),
        // a line's cover: one step before the switch (undone) and one after (finished)
        c -> c[1].equals("staging-task") || c[1].equals("published"));
  }

  @Tag("cover")
  @ParameterizedTest(name = "SIGKILL at {1} on {0}")
  @MethodSource("killPoints")
  void killedAtAnyWriteStep(StateStores store, String point) throws Exception {
    StreamRun run = caseFrom(store);
    repartitionKilledAt(point, TO);
    // No wait: the lock of a holder proven dead is taken over at once (its lease is the default
    // 60 s, so a restart that waited it out or was refused would fail the case).
    restartAndCheck(run, store, FINISHED_BY_RECOVERY.contains(point) ? TO : FROM);
    passed("SIGKILL at " + point + " on " + store);
  }

  /**
   * A split in place ({@code FROM -> 2 x FROM} on RocksDB without changelog checkpointing), whose
   * one stage both reads the old partitions and commits the new ones: killed while a task commits
   * its new partitions, or after the stage, the attempt is undone; killed after the switch has
   * published the new layout, the restart finishes it. Either way the output is the oracle's.
   */
  @ParameterizedTest(name = "SIGKILL at {0}, split in place")
  @ValueSource(strings = {"staging-task", "staged", "published"})
  void killedWhileSplittingInPlace(String point) throws Exception {
    StreamRun run = caseFrom(StateStores.ROCKSDB);
    String log = repartitionKilledAt(point, 2 * FROM);
    if (!point.equals("staging-task")) {
      assertThat(log)
          .contains(
              SparkFeatures.rocksDbFileExchanges(spark)
                  ? "splitting state partitions: " + FROM + "/" + FROM
                  : "moving state: rocksdb-sst-ingest");
    }
    restartAndCheck(
        run, StateStores.ROCKSDB, FINISHED_BY_RECOVERY.contains(point) ? 2 * FROM : FROM);
    passed("SIGKILL at " + point + ", split in place");
  }

  /**
   * The on-demand path: a query starting with {@code spark.sql.streaming.stateStore.partitions} set
   * is killed while it repartitions; started again with the same setting, it ends up with the new
   * count and the oracle's output.
   */
  @ParameterizedTest(name = "SIGKILL at {1} on {0}, on-demand at query start")
  @MethodSource("onDemandKillPoints")
  void killedWhileRepartitioningAtQueryStart(StateStores store, String point) throws Exception {
    StreamRun run = caseFrom(store);
    addInput(2);
    Process child =
        ChildJvm.start(
            tmp.resolve("child.log"),
            killedAt(point),
            RunningQueryMain.class.getName(),
            input().toString(),
            checkpoint().toString(),
            tmp.resolve("sink").toString(),
            store.name(),
            "7",
            "true",
            "availableNow",
            Integer.toString(TO),
            tmp.resolve("marker").toString(),
            "0");
    assertThat(child.waitFor(5, java.util.concurrent.TimeUnit.MINUTES)).isTrue();
    assertThat(child.exitValue())
        .as("exit code; log: %s", Files.readString(tmp.resolve("child.log")))
        .isEqualTo(137);

    Map<String, String> conf = new LinkedHashMap<>(store.withPartitions(7));
    conf.put(StateShiftExtensions.STATE_PARTITIONS, Integer.toString(TO));
    List<StreamingQueryProgress> restarted =
        run.runAvailable(StatefulQueries.WINDOWED_COUNT, checkpoint(), tmp.resolve("sink"), conf);
    assertThat(StreamRun.stateInstances(restarted)).containsOnly((long) TO);
    assertThat(StateShift.get(spark).verify(checkpoint().toString()).problems()).isEmpty();
    addInput(3);
    addInput(4);
    addInput(5);
    run.runAvailable(StatefulQueries.WINDOWED_COUNT, checkpoint(), tmp.resolve("sink"), conf);
    assertThat(run.sinkRows(tmp.resolve("sink"), StatefulQueries.WINDOWED_COUNT))
        .containsExactlyElementsOf(oracle());
    passed("SIGKILL at " + point + " on " + store + ", on-demand at query start");
  }

  static Stream<Arguments> onDemandKillPoints() {
    return Stream.of(
        Arguments.of(StateStores.HDFS, "staging-task"),
        Arguments.of(StateStores.ROCKSDB_CHANGELOG, "published"));
  }

  /**
   * I/O errors from the file system: one run through {@link FaultyFileSystem} records every
   * mutating file operation, grouped into the protocol's steps by its fail point names; then, for
   * each step, a fresh copy is repartitioned with its first operation failing (under -Pextended its
   * last one too, for the single-threaded steps), and every rename of the journal's save after the
   * commit. On RocksDB only the staging steps are failed: they are where its provider writes; the
   * steps after staging run the same code for both stores.
   */
  @TestFactory
  Stream<DynamicTest> failedByAnIoErrorAtAnyWriteStep() throws Exception {
    FaultyFileSystem.register(spark.sparkContext().hadoopConfiguration());
    List<DynamicTest> tests = new ArrayList<>();
    for (StateStores store : List.of(StateStores.HDFS, StateStores.ROCKSDB_CHANGELOG)) {
      Map<String, List<FaultyFileSystem.Operation>> steps = recordSteps(store);
      steps.forEach(
          (step, operations) -> {
            // Staging tasks run in parallel, so only a step's first operation is the same every
            // run.
            boolean staging = step.equals("journal-staging") || step.equals("staging-task");
            List<Integer> indexes = new ArrayList<>();
            if (store == StateStores.HDFS || staging) {
              indexes.add(0);
            }
            if (TestSets.extended()
                && store == StateStores.HDFS
                && !staging
                && operations.size() > 1) {
              indexes.add(operations.size() - 1);
            }
            if (store == StateStores.HDFS && step.equals("commit")) {
              // The journal's save as FINALIZING, right after the commit: every rename in it, since
              // an overwriting rename that failed half-way once lost the journal here.
              for (int i = 1; i < operations.size() - 1; i++) {
                if (operations.get(i).kind().equals("rename")) {
                  indexes.add(i);
                }
              }
            }
            for (int index : indexes) {
              FaultyFileSystem.Operation op = operations.get(index);
              tests.add(
                  DynamicTest.dynamicTest(
                      "I/O error on "
                          + store
                          + " in step "
                          + step
                          + ": "
                          + op.kind()
                          + " "
                          + relative(op.path()),
                      () -> failOnce(store, step, index)));
            }
          });
    }
    return tests.stream();
  }

  /** Runs one repartition through the faulty file system and groups its operations by step. */
  private Map<String, List<FaultyFileSystem.Operation>> recordSteps(StateStores store)
      throws IOException {
    caseFrom(store);
    FaultyFileSystem.reset(true);
    FailPoints.observe(FaultyFileSystem::step);
    try {
      StateShift.get(spark)
          .repartitionState(FaultyFileSystem.uriOf(checkpoint()))
          .toPartitions(TO)
          .assumeStopped()
          .execute();
    } finally {
      FailPoints.observe(null);
    }
    Map<String, List<FaultyFileSystem.Operation>> steps = new LinkedHashMap<>();
    for (FaultyFileSystem.Operation op : FaultyFileSystem.recorded()) {
      steps.computeIfAbsent(op.step(), s -> new ArrayList<>()).add(op);
    }
    assertThat(steps.keySet())
        .as("steps with file operations")
        .contains("start", "locked", "journal-staging", "staged", "journal-switching");
    if (io.stateshift.spark.state.StateSources.OPERATOR_METADATA) {
      // the operator metadata file's rewrite; a Spark without it (3.5) writes nothing there
      assertThat(steps.keySet()).as("steps with file operations").contains("journal-finalizing");
    }
    return steps;
  }

  private void failOnce(StateStores store, String step, int index) throws Exception {
    StreamRun run = caseFrom(store);
    FaultyFileSystem.reset(false);
    FaultyFileSystem.failAt(step, index);
    FailPoints.observe(FaultyFileSystem::step);
    RuntimeException error = null;
    try {
      StateShift.get(spark)
          .repartitionState(FaultyFileSystem.uriOf(checkpoint()))
          .toPartitions(TO)
          .assumeStopped()
          .execute();
    } catch (RuntimeException e) {
      error = e;
    } finally {
      FailPoints.observe(null);
    }
    FaultyFileSystem.Operation failed = FaultyFileSystem.failed();
    assertThat(failed).as("the chosen operation ran and failed").isNotNull();
    boolean switched = FINISHED_BY_RECOVERY.contains(step);
    if (error == null) {
      // Only a best-effort clean-up (the previous journal, the lock at the very end) may fail
      // silently.
      assertThat(failed.kind()).isEqualTo("delete");
      switched = true;
    } else {
      assertThat(error)
          .isInstanceOf(StateShiftException.class)
          .hasMessageContaining(checkpoint().getFileName().toString())
          .hasStackTraceContaining("injected I/O error");
    }
    // a lock this process released but could not delete is taken over at once, no lease waited
    restartAndCheck(run, store, switched ? TO : FROM);
    passed("I/O error on " + store + " at " + failed + (error == null ? " (swallowed)" : ""));
  }

  /** One line per passed case in the test output: the class runs long, this shows how far. */
  private void passed(String testCase) {
    System.err.printf(
        "CrashSafetyTest passed (%s s): %s%n",
        (System.currentTimeMillis() - caseStarted) / 1000, testCase);
  }

  /**
   * Runs {@code ./stateshift repartition} of the case's checkpoint to {@code partitions} in a child
   * JVM killed at {@code point}; returns its log.
   */
  private String repartitionKilledAt(String point, int partitions) throws Exception {
    int exit =
        ChildJvm.runCli(
            tmp.resolve("child.log"),
            killedAt(point),
            "repartition",
            "--checkpoint",
            checkpoint().toString(),
            "--partitions",
            Integer.toString(partitions),
            "--assume-stopped");
    String log = Files.readString(tmp.resolve("child.log"));
    assertThat(exit).as("exit code; log: %s", log).isEqualTo(137);
    return log;
  }

  private static List<String> killedAt(String point) {
    return List.of("-D" + FailPoints.PROPERTY + "=" + point);
  }

  private Path checkpoint() {
    return tmp.resolve("checkpoint");
  }

  /** A case's own copy of the store's base checkpoint and sink, the input reset (CrashCases). */
  private StreamRun caseFrom(StateStores store) throws IOException {
    Path base = cases.base(store);
    caseStarted = System.currentTimeMillis();
    tmp = Files.createTempDirectory(shared, "case");
    CheckpointTrees.copyWithoutChecksums(base.resolve("checkpoint"), checkpoint());
    CheckpointTrees.copyWithoutChecksums(base.resolve("sink"), tmp.resolve("sink"));
    return cases.newRun();
  }

  private static Path input() {
    return cases.input();
  }

  private static void addInput(int index) throws IOException {
    cases.addInput(index);
  }

  /** {@link CrashCases#restartAndCheck} on the case's checkpoint. */
  private void restartAndCheck(StreamRun run, StateStores store, int expected) throws IOException {
    cases.restartAndCheck(
        run,
        store,
        checkpoint().toString(),
        FileSystem.getLocal(spark.sparkContext().hadoopConfiguration()),
        tmp.resolve("sink"),
        expected);
  }

  private List<String> oracle() {
    return cases.oracle();
  }

  private String relative(String path) {
    int at = path.indexOf("/checkpoint/");
    return at < 0 ? path : path.substring(at + "/checkpoint/".length());
  }
}
