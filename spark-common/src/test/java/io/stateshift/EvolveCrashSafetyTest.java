package io.stateshift;

import static org.apache.spark.sql.functions.col;
import static org.assertj.core.api.Assertions.assertThat;

import io.stateshift.protocol.FailPoints;
import io.stateshift.testing.ChildJvm;
import io.stateshift.testing.OperatorRun;
import io.stateshift.testing.SparkTestSession;
import io.stateshift.testing.StateStores;
import io.stateshift.testing.TestSets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.stream.Collectors;
import java.util.stream.Stream;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.SparkSession;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * An evolution killed with SIGKILL (in a separate JVM) at a write step, then run again at once with
 * the same command line: the second run finishes or undoes the interrupted one and then evolves, so
 * the state holds the new value schema (and Spark's schema file says so) exactly once. The changed
 * query then restarts on the checkpoint and writes what {@link StateEvolveOracleTest}'s oracle
 * gives: a fresh run over the later input plus the carried counts. Every write step (and the
 * replacement of the schema file) under -Pextended, the stores taking turns; a sample by default.
 */
class EvolveCrashSafetyTest {
  private final SparkSession spark = SparkTestSession.get();

  @TempDir Path tmp;

  static Stream<Arguments> killPoints() {
    List<String> steps = new ArrayList<>(FailPoints.ALL);
    steps.remove(EditCrashSafetyTest.KEPT_COUNT_SKIPS); // the count is kept too
    steps.add(steps.indexOf("offsets") + 1, FailPoints.REPLACED);
    return TestSets.orCover(
        TestSets.sampledSteps(
            List.of(StateStores.HDFS, StateStores.ROCKSDB),
            steps,
            List.of("staging-task", FailPoints.REPLACED, "published", "commit")),
        c -> c[1].equals(FailPoints.REPLACED));
  }

  @Tag("cover")
  @ParameterizedTest(name = "SIGKILL at {1} on {0}, then the same command again")
  @MethodSource("killPoints")
  void killedEvolutionRunAgainEvolvesOnce(StateStores store, String point) throws Exception {
    OperatorRun input = new OperatorRun(spark, tmp.resolve("input"));
    Path checkpoint = tmp.resolve("checkpoint");
    input.writeEvents(0, StateEvolveOracleTest.ROWS, StateEvolveOracleTest.DEVICES);
    input.writeEvents(1, StateEvolveOracleTest.ROWS, StateEvolveOracleTest.DEVICES);
    StateEvolveOracleTest.run(
        spark,
        StateEvolveOracleTest.oldQuery(input.stream()),
        checkpoint,
        tmp.resolve("sink"),
        store);
    Map<String, Long> carried =
        StateShift.get(spark)
            .readState(checkpoint.toString())
            .load()
            .select(col("key.device"), col("value.count"))
            .collectAsList()
            .stream()
            .collect(Collectors.toMap(r -> r.getString(0), r -> r.getLong(1)));

    String[] command = {
      "evolve",
      "--checkpoint",
      checkpoint.toString(),
      "--value-schema",
      "count BIGINT, sum BIGINT",
      "--fill",
      "sum=0",
      "--assume-stopped"
    };
    ChildJvm.killAtThenRunAgain(tmp, point, command);
    assertThat(checkpoint.resolve("_stateshift/journal")).doesNotExist();
    assertThat(StateShift.get(spark).verify(checkpoint.toString()).problems()).isEmpty();
    List<Row> state = StateShift.get(spark).readState(checkpoint.toString()).load().collectAsList();
    assertThat(state).hasSize(StateEvolveOracleTest.DEVICES);
    assertThat(state.get(0).schema().simpleString())
        .contains("value:struct<count:bigint,sum:bigint>");
    assertThat(
            StateShift.get(spark).history(checkpoint.toString()).stream()
                .filter(h -> h.kind() == HistoryEntry.Kind.EDIT)
                .count())
        .isEqualTo(1);

    input.writeEvents(2, StateEvolveOracleTest.ROWS, StateEvolveOracleTest.DEVICES);
    input.writeEvents(3, StateEvolveOracleTest.ROWS, StateEvolveOracleTest.DEVICES);
    Path newSink = tmp.resolve("new-sink");
    StateEvolveOracleTest.run(
        spark, StateEvolveOracleTest.newQuery(input.stream()), checkpoint, newSink, store);
    List<String> written =
        StateEvolveOracleTest.lastBatchRows(spark, newSink).stream()
            .map(Row::toString)
            .sorted()
            .toList();
    assertThat(written)
        .hasSize(StateEvolveOracleTest.DEVICES)
        .containsExactlyElementsOf(
            StateEvolveOracleTest.oracle(spark, tmp.resolve("oracle"), carried));
  }
}
