package io.stateshift;

import static org.assertj.core.api.Assertions.assertThat;

import io.stateshift.protocol.FailPoints;
import io.stateshift.testing.ChildJvm;
import io.stateshift.testing.SparkTestSession;
import io.stateshift.testing.StateStores;
import io.stateshift.testing.StatefulQueries;
import io.stateshift.testing.StreamRun;
import io.stateshift.testing.TestSets;
import java.nio.file.Path;
import java.util.List;
import java.util.stream.Stream;
import org.apache.spark.sql.SparkSession;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * An edit killed with SIGKILL (in a separate JVM) at a write step, then run again at once with the
 * same command line, as a user does: the second run undoes or finishes the interrupted edit and
 * leaves the erased key gone exactly once, so the restarted query writes what an uninterrupted run
 * writes over the input without the key's events before the erase. Every write step under
 * -Pextended, the stores taking turns by default; in a line's cover one undone and one finished.
 */
class EditCrashSafetyTest {
  private static final String ERASED = "device-3";
  private static final String PREDICATE = "key.device = '" + ERASED + "'";

  private final SparkSession spark = SparkTestSession.get();

  @TempDir Path tmp;

  /** The step an edit never reaches: it keeps the partition count, so no folder is retired. */
  static final String KEPT_COUNT_SKIPS = "retired";

  static Stream<Arguments> killPoints() {
    return TestSets.orCover(
        TestSets.sampledSteps(
            List.of(StateStores.HDFS, StateStores.ROCKSDB),
            FailPoints.ALL.stream().filter(step -> !step.equals(KEPT_COUNT_SKIPS)).toList(),
            List.of("staging-task", "journal-switching", "published", "commit", "history")),
        c -> c[1].equals("staging-task") || c[1].equals("published"));
  }

  @Tag("cover")
  @ParameterizedTest(name = "SIGKILL at {1} on {0}, then the same command again")
  @MethodSource("killPoints")
  void killedEditRunAgainDeletesTheKeyExactlyOnce(StateStores store, String point)
      throws Exception {
    StreamRun run = new StreamRun(spark, tmp.resolve("input"));
    Path checkpoint = tmp.resolve("checkpoint");
    Path sink = tmp.resolve("sink");
    run.writeEvents(0, 200, 12);
    run.writeEvents(1, 200, 12);
    run.runAvailable(StatefulQueries.GROUPED_COUNT, checkpoint, sink, store.withPartitions(3));

    String[] command = {
      "edit", "--checkpoint", checkpoint.toString(), "--delete-where", PREDICATE, "--assume-stopped"
    };
    ChildJvm.killAtThenRunAgain(tmp, point, command);
    assertThat(checkpoint.resolve("_stateshift/journal")).doesNotExist();
    assertThat(StateShift.get(spark).verify(checkpoint.toString()).problems()).isEmpty();
    assertThat(
            StateShift.get(spark)
                .readState(checkpoint.toString())
                .where("key.device = '" + ERASED + "'")
                .load()
                .count())
        .isZero();

    run.writeEvents(2, 200, 12);
    run.runAvailable(StatefulQueries.GROUPED_COUNT, checkpoint, sink, store.withPartitions(3));
    assertThat(run.sinkRows(sink, StatefulQueries.GROUPED_COUNT))
        .containsExactlyElementsOf(oracle());
  }

  /** The same query, uninterrupted, over the input without the key's events before the erase. */
  private List<String> oracle() {
    Path dir = tmp.resolve("oracle");
    StreamRun generated = new StreamRun(spark, dir.resolve("generated"));
    StreamRun run = new StreamRun(spark, dir.resolve("input"));
    for (int i = 0; i < 3; i++) {
      generated.writeEvents(i, 200, 12);
    }
    var events =
        spark.read().schema(StreamRun.EVENT_SCHEMA).json(dir.resolve("generated").toString());
    for (int i = 0; i < 3; i++) {
      int index = i;
      String file = String.format("events-%04d.json", i);
      var rows =
          events.where("input_file_name() LIKE '%" + file + "'").collectAsList().stream()
              .filter(r -> index == 2 || !r.getString(1).equals(ERASED))
              .toList();
      run.writeRows(i, rows);
    }
    run.runAvailable(
        StatefulQueries.GROUPED_COUNT,
        dir.resolve("checkpoint"),
        dir.resolve("sink"),
        StateStores.HDFS.withPartitions(5));
    return run.sinkRows(dir.resolve("sink"), StatefulQueries.GROUPED_COUNT);
  }
}
