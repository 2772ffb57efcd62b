package io.stateshift;

import static org.assertj.core.api.Assertions.assertThat;

import io.stateshift.protocol.FailPoints;
import io.stateshift.testing.ChildJvm;
import io.stateshift.testing.CrashTestInput;
import io.stateshift.testing.SparkTestSession;
import io.stateshift.testing.StatefulQueries;
import io.stateshift.testing.StreamRun;
import io.stateshift.testing.TestSets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.stream.Stream;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.streaming.StreamingQueryProgress;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * A migration of RocksDB's state checkpoint format (v1 to v2 or v2 to v1, with a partition change)
 * killed with SIGKILL (in a separate JVM) at a write step leaves the old layout in the old format
 * or the new layout in the new one, never a mix: the query restarted with StateShiftExtensions
 * undoes or finishes the attempt, runs on the count and in the format of whichever layout that is,
 * and writes the uninterrupted output. Under -Pextended every write step and the step only a format
 * change reaches (old version files retired from a kept partition folder), in both directions; else
 * a sample of them (see {@link #killPoints}): the other steps are the repartition's, which {@link
 * CrashSafetyTest} kills at every one.
 */
class MigrateFormatCrashSafetyTest {
  static final int FROM = 4;
  static final int TO = 3;

  private final SparkSession spark = SparkTestSession.get();

  @TempDir Path tmp;

  @TempDir static Path oracleDir;

  private static List<String> oracle;

  /** A format migration's direction. */
  private record Direction(int from, int to) {
    @Override
    public String toString() {
      return "v" + from + " -> v" + to;
    }
  }

  /**
   * Every write step in both directions under -Pextended; else the steps where a format migration
   * writes what a repartition does not (versions with or without unique ids, the commit naming
   * them, the old format's files moved out), the directions taking turns.
   */
  static Stream<Arguments> killPoints() {
    List<String> steps = new ArrayList<>(FailPoints.ALL);
    steps.add(FailPoints.RETIRED_FORMAT);
    return TestSets.sampledSteps(
        List.of(new Direction(1, 2), new Direction(2, 1)),
        steps,
        List.of("staging-task", "commit", "journal-finalizing", FailPoints.RETIRED_FORMAT));
  }

  @ParameterizedTest(name = "SIGKILL at {1}: format {0}")
  @MethodSource("killPoints")
  void killedFormatMigrationLeavesTheOldOrTheNewLayout(Direction direction, String point)
      throws Exception {
    Path input = tmp.resolve("input");
    Path checkpoint = tmp.resolve("checkpoint");
    Path sink = tmp.resolve("sink");
    StreamRun run = new StreamRun(spark, input);
    for (int i = 0; i < 2; i++) {
      run.writeEvents(i, 200, 30);
    }
    run.runAvailable(
        StatefulQueries.WINDOWED_COUNT,
        checkpoint,
        sink,
        MigrateFormatVersionTest.conf(direction.from(), FROM));
    long lastBefore = MigrateFormatOracleTest.lastCommitted(checkpoint);

    int exit =
        ChildJvm.runCli(
            tmp.resolve("child.log"),
            List.of("-D" + FailPoints.PROPERTY + "=" + point),
            "migrate",
            "--checkpoint",
            checkpoint.toString(),
            "--format-version",
            Integer.toString(direction.to()),
            "--partitions",
            Integer.toString(TO),
            "--assume-stopped"); // the query just ran in this JVM, which a child cannot know
    assertThat(exit)
        .as("exit code; log: %s", Files.readString(tmp.resolve("child.log")))
        .isEqualTo(137);

    // the format's own step is in FINALIZING, after the commit: finished too
    boolean finished =
        MigrateCrashSafetyTest.FINISHED_BY_RECOVERY.contains(point)
            || point.equals(FailPoints.RETIRED_FORMAT);
    int format = finished ? direction.to() : direction.from();
    int partitions = finished ? TO : FROM;

    run.writeEvents(2, 200, 30);
    run.writeEvents(3, 200, 30);
    run.writeFlush(4);
    // the session names the format of the layout recovery leaves (Spark does not record it) and
    // another count: the checkpoint's count decides
    List<StreamingQueryProgress> restarted =
        run.runAvailable(
            StatefulQueries.WINDOWED_COUNT,
            checkpoint,
            sink,
            MigrateFormatVersionTest.conf(format, 7));
    assertThat(StreamRun.stateInstances(restarted)).containsOnly((long) partitions);
    assertThat(checkpoint.resolve("_stateshift/journal")).doesNotExist();
    long last = MigrateFormatOracleTest.lastCommitted(checkpoint);
    // the batch after the old layout's last is the migration's when finished, else the query's
    assertThat(Files.readString(checkpoint.resolve("commits/" + (lastBefore + 1))))
        .startsWith("v" + format + "\n");
    assertThat(MigrateFormatVersionTest.uniqueIds(checkpoint, last) != null).isEqualTo(format == 2);
    MigrateFormatVersionTest.assertOnlyFormat(checkpoint, format, partitions);
    assertThat(StateShift.get(spark).verify(checkpoint.toString()).problems()).isEmpty();
    assertThat(run.sinkRows(sink, StatefulQueries.WINDOWED_COUNT))
        .containsExactlyElementsOf(oracle());
  }

  private synchronized List<String> oracle() {
    if (oracle != null) {
      return oracle;
    }
    oracle = CrashTestInput.build(spark, oracleDir.resolve("oracle")).oracle();
    return oracle;
  }
}
