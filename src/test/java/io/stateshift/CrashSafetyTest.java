package io.stateshift;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.stateshift.internal.FailPoints;
import io.stateshift.testing.ChildJvm;
import io.stateshift.testing.SparkTestSession;
import io.stateshift.testing.StateStores;
import io.stateshift.testing.StatefulQueries;
import io.stateshift.testing.StreamRun;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.stream.Stream;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.streaming.StreamingQueryProgress;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * Crash safety: a repartition killed with SIGKILL (in a separate JVM) or failed by an I/O error at
 * each of its write steps leaves a checkpoint that starts exactly as before or exactly as after;
 * the restarted query's output equals the uninterrupted oracle, and a second repartition to
 * completion is correct as well.
 */
class CrashSafetyTest {
  static final int FROM = 5;
  static final int TO = 3;
  static final int AGAIN = 6;
  /** Points after which the attempt is finished by recovery; before them it is undone. */
  static final Set<String> FINISHED_BY_RECOVERY = Set.of("journal-switching", "offsets",
      "publish-first-file", "published", "commit", "journal-finalizing", "metadata-v1",
      "retired", "history");
  private static List<String> oracle;

  private final SparkSession spark = SparkTestSession.get();

  @TempDir Path tmp;

  static Stream<Arguments> killPoints() {
    List<Arguments> out = new ArrayList<>();
    for (String point : FailPoints.ALL) {
      out.add(Arguments.of(StateStores.ROCKSDB_CHANGELOG, point));
    }
    for (String point : List.of("staging-task", "offsets", "publish-first-file", "commit")) {
      out.add(Arguments.of(StateStores.HDFS, point));
    }
    return out.stream();
  }

  static Stream<Arguments> ioErrorPoints() {
    List<Arguments> out = new ArrayList<>();
    for (String point : FailPoints.ALL) {
      out.add(Arguments.of(StateStores.HDFS, point));
    }
    return out.stream();
  }

  @ParameterizedTest(name = "SIGKILL at {1} on {0}")
  @MethodSource("killPoints")
  void killedAtAnyWriteStep(StateStores store, String point) throws Exception {
    StreamRun run = firstPart(store);
    Path checkpoint = tmp.resolve("checkpoint");
    int exit = ChildJvm.runCli(tmp.resolve("child.log"),
        List.of("-D" + FailPoints.PROPERTY + "=" + point, "-Dstateshift.lockLeaseMs=1500"),
        "repartition", "--checkpoint", checkpoint.toString(), "--partitions",
        Integer.toString(TO));
    assertThat(exit).as("exit code; log: %s", Files.readString(tmp.resolve("child.log")))
        .isEqualTo(137);
    Thread.sleep(1600); // the dead holder's lease expires
    restartAndCheck(run, store, point);
  }

  @ParameterizedTest(name = "I/O error at {1} on {0}")
  @MethodSource("ioErrorPoints")
  void failedByAnIoErrorAtAnyWriteStep(StateStores store, String point) throws Exception {
    StreamRun run = firstPart(store);
    Path checkpoint = tmp.resolve("checkpoint");
    System.setProperty(FailPoints.PROPERTY, point);
    System.setProperty(FailPoints.MODE_PROPERTY, "io");
    try {
      assertThatThrownBy(() -> StateShift.get(spark).repartitionState(checkpoint.toString())
          .toPartitions(TO).execute()).hasStackTraceContaining("injected I/O error at " + point);
    } finally {
      System.clearProperty(FailPoints.PROPERTY);
      System.clearProperty(FailPoints.MODE_PROPERTY);
    }
    restartAndCheck(run, store, point);
  }

  private StreamRun firstPart(StateStores store) {
    StreamRun run = new StreamRun(spark, tmp.resolve("input"));
    run.writeEvents(0, 200, 30);
    run.writeEvents(1, 200, 30);
    run.runAvailable(StatefulQueries.WINDOWED_COUNT, tmp.resolve("checkpoint"), tmp.resolve("sink"),
        store.withPartitions(FROM));
    return run;
  }

  /**
   * Restarts the query (with StateShiftExtensions, as in production; no partition setting), which
   * finishes or undoes the interrupted attempt; then repartitions again to completion; then checks
   * the whole output against the uninterrupted oracle.
   */
  private void restartAndCheck(StreamRun run, StateStores store, String point) {
    Path checkpoint = tmp.resolve("checkpoint");
    Path sink = tmp.resolve("sink");
    run.writeEvents(2, 200, 30);
    List<StreamingQueryProgress> restarted =
        run.runAvailable(StatefulQueries.WINDOWED_COUNT, checkpoint, sink, store.withPartitions(7));
    int expected = FINISHED_BY_RECOVERY.contains(point) ? TO : FROM;
    assertThat(StreamRun.stateInstances(restarted))
        .as("state partitions after a crash at %s", point)
        .containsOnly((long) expected);
    assertThat(tmp.resolve("checkpoint/_stateshift/journal")).doesNotExist();

    int next = expected == TO ? AGAIN : TO;
    RepartitionResult again = StateShift.get(spark).repartitionState(checkpoint.toString())
        .toPartitions(next).execute();
    assertThat(again.toPartitions()).isEqualTo(next);
    assertThat(StateShift.get(spark).verify(checkpoint.toString()).problems()).isEmpty();
    run.writeEvents(3, 200, 30);
    run.writeFlush(4);
    List<StreamingQueryProgress> last =
        run.runAvailable(StatefulQueries.WINDOWED_COUNT, checkpoint, sink, store.withPartitions(7));
    assertThat(StreamRun.stateInstances(last)).containsOnly((long) next);
    assertThat(run.sinkRows(sink, StatefulQueries.WINDOWED_COUNT))
        .containsExactlyElementsOf(oracle());
  }

  private List<String> oracle() {
    synchronized (CrashSafetyTest.class) {
      if (oracle == null) {
        Path dir = tmp.resolve("oracle");
        StreamRun run = new StreamRun(spark, dir.resolve("input"));
        for (int i = 0; i < 4; i++) {
          run.writeEvents(i, 200, 30);
        }
        run.writeFlush(4);
        run.runAvailable(StatefulQueries.WINDOWED_COUNT, dir.resolve("checkpoint"),
            dir.resolve("sink"), StateStores.HDFS.withPartitions(2));
        oracle = run.sinkRows(dir.resolve("sink"), StatefulQueries.WINDOWED_COUNT);
        assertThat(oracle).isNotEmpty();
      }
      return oracle;
    }
  }
}
