package io.stateshift;

import static org.assertj.core.api.Assertions.assertThat;

import io.stateshift.protocol.FailPoints;
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
import java.util.Set;
import java.util.stream.Stream;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.streaming.StreamingQueryProgress;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * A migration killed with SIGKILL (in a separate JVM) at a write step leaves the old layout on the
 * old provider or the new layout on the new one, never a mix: the query restarted with
 * StateShiftExtensions (its session still naming the old provider) undoes or finishes the attempt,
 * runs on the provider and count of whichever layout that is, and writes the uninterrupted output.
 * Under -Pextended every write step in both directions, else a sample (see {@link #killPoints}):
 * the other steps are the repartition's, which {@link CrashSafetyTest} kills at every one.
 */
class MigrateCrashSafetyTest {
  static final int FROM = 4;
  static final int TO = 3;

  /** Points after which the attempt is finished by recovery; before them it is undone. */
  static final Set<String> FINISHED_BY_RECOVERY = CrashSafetyTest.FINISHED_BY_RECOVERY;

  private final SparkSession spark = SparkTestSession.get();

  @TempDir Path tmp;

  @TempDir static Path oracleDir;

  private static List<String> oracle;

  /** A migration's direction: the store the checkpoint starts on, the provider it moves to. */
  private record Direction(StateStores from, String to) {}

  /**
   * Every write step in both directions under -Pextended; else the steps where a migration writes
   * what a repartition does not (the other provider's files, the provider class in the offset log,
   * both providers' files side by side), the directions taking turns.
   */
  static Stream<Arguments> killPoints() {
    return TestSets.sampledSteps(
            List.of(
                new Direction(StateStores.HDFS, "rocksdb"),
                new Direction(StateStores.ROCKSDB_CHANGELOG, "hdfs")),
            FailPoints.ALL,
            List.of("staging-task", "offsets", "published", "retired"))
        .map(
            a -> {
              Direction d = (Direction) a.get()[0];
              return Arguments.of(d.from(), d.to(), a.get()[1]);
            });
  }

  @ParameterizedTest(name = "SIGKILL at {2}: {0} -> {1}")
  @MethodSource("killPoints")
  void killedMigrationLeavesTheOldOrTheNewLayout(StateStores from, String to, String point)
      throws Exception {
    Path input = tmp.resolve("input");
    Path checkpoint = tmp.resolve("checkpoint");
    Path sink = tmp.resolve("sink");
    StreamRun run = new StreamRun(spark, input);
    for (int i = 0; i < 2; i++) {
      run.writeEvents(i, 200, 30);
    }
    run.runAvailable(StatefulQueries.WINDOWED_COUNT, checkpoint, sink, from.withPartitions(FROM));
    long lastBefore = lastCommitted(checkpoint);

    int exit =
        ChildJvm.runCli(
            tmp.resolve("child.log"),
            List.of("-D" + FailPoints.PROPERTY + "=" + point),
            "migrate",
            "--checkpoint",
            checkpoint.toString(),
            "--provider",
            to,
            "--partitions",
            Integer.toString(TO),
            "--assume-stopped");
    assertThat(exit)
        .as("exit code; log: %s", Files.readString(tmp.resolve("child.log")))
        .isEqualTo(137);

    boolean finished = FINISHED_BY_RECOVERY.contains(point);
    String expectedProvider =
        finished
            ? (to.equals("rocksdb") ? MigrateOracleTest.ROCKSDB : MigrateOracleTest.HDFS)
            : from.conf().get("spark.sql.streaming.stateStore.providerClass");
    int expectedPartitions = finished ? TO : FROM;

    run.writeEvents(2, 200, 30);
    run.writeEvents(3, 200, 30);
    run.writeFlush(4);
    // the session names the old provider and another count: the checkpoint's layout decides
    List<StreamingQueryProgress> restarted =
        run.runAvailable(StatefulQueries.WINDOWED_COUNT, checkpoint, sink, from.withPartitions(7));
    assertThat(StreamRun.stateInstances(restarted)).containsOnly((long) expectedPartitions);
    assertThat(checkpoint.resolve("_stateshift/journal")).doesNotExist();
    assertThat(Files.readString(checkpoint.resolve("offsets/" + lastCommitted(checkpoint))))
        .contains("\"spark.sql.streaming.stateStore.providerClass\":\"" + expectedProvider + "\"");
    MigrateOracleTest.assertNewVersionsWrittenBy(
        checkpoint, lastBefore + (finished ? 2 : 1), expectedProvider);
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

  private static long lastCommitted(Path checkpoint) throws java.io.IOException {
    try (Stream<Path> commits = Files.list(checkpoint.resolve("commits"))) {
      return commits
          .map(p -> p.getFileName().toString())
          .filter(n -> n.matches("\\d+"))
          .mapToLong(Long::parseLong)
          .max()
          .orElseThrow();
    }
  }
}
