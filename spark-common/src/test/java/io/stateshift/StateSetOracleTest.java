package io.stateshift;

import static org.apache.spark.sql.functions.col;
import static org.apache.spark.sql.functions.count;
import static org.apache.spark.sql.functions.lit;
import static org.apache.spark.sql.functions.max;
import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import io.stateshift.cli.StateShiftCliTest;
import io.stateshift.cli.StateShiftCliTest.Run;
import io.stateshift.testing.CheckpointDigest;
import io.stateshift.testing.OperatorRun;
import io.stateshift.testing.SparkTestSession;
import io.stateshift.testing.StateStores;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.stream.Collectors;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.RowFactory;
import org.apache.spark.sql.SparkSession;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * The oracle of {@code edit --set}: an aggregation stops, the counts of the devices a predicate
 * selects are doubled in place, and the query restarts over more input; its output equals an
 * uninterrupted run's with each selected device's count at the stop added once more, every other
 * value as it was. And the sets refused before the lock, the checkpoint byte for byte unchanged.
 */
class StateSetOracleTest {
  private static final int ROWS = 300;
  private static final int DEVICES = 10;
  private static final String SELECTED = "key.device < 'device-5'";

  private final SparkSession spark = SparkTestSession.get(); // the CLI uses the program's session

  @TempDir Path tmp;

  private static Run cli(String... args) {
    return StateShiftCliTest.cli(args);
  }

  private static Dataset<Row> query(Dataset<Row> events) {
    return events.groupBy("device").agg(count(lit(1)).as("n"), max("ts").as("last"));
  }

  @Tag("cover")
  @ParameterizedTest(name = "grouped aggregation on {0}")
  @EnumSource(
      value = StateStores.class,
      names = {"HDFS", "ROCKSDB"})
  void setValuesContinueAsAnUninterruptedRunPlusTheChange(StateStores store) throws Exception {
    OperatorRun input = new OperatorRun(spark, tmp.resolve("input"));
    Path checkpoint = tmp.resolve("checkpoint");
    String cp = checkpoint.toString();
    input.writeEvents(0, ROWS, DEVICES);
    input.writeEvents(1, ROWS, DEVICES);
    run(query(input.stream()), checkpoint, tmp.resolve("sink"), store);
    Map<String, Row> before = values(cp);
    assertThat(before).hasSize(DEVICES);
    Set<String> selected =
        StateShift.get(spark)
            .readState(cp)
            .where(SELECTED)
            .load()
            .select(col("key.device"))
            .collectAsList()
            .stream()
            .map(r -> r.getString(0))
            .collect(Collectors.toSet());
    assertThat(selected).isNotEmpty().hasSizeLessThan(DEVICES);

    Map<String, String> digest = CheckpointDigest.of(checkpoint);
    Run dry =
        cli(
            "edit",
            "--checkpoint",
            cp,
            "--set",
            "count = value.count * 2",
            "--where",
            SELECTED,
            "--dry-run",
            "--json");
    assertThat(dry.exit()).as(dry.err()).isZero();
    assertThat(dry.json().get("rewriting").asLong()).isEqualTo(selected.size());
    assertThat(dry.json().get("changed").asBoolean()).isFalse();
    assertThat(CheckpointDigest.of(checkpoint)).isEqualTo(digest);

    Run edited =
        cli(
            "edit",
            "--checkpoint",
            cp,
            "--set",
            "count = value.count * 2",
            "--where",
            SELECTED,
            "--json");
    assertThat(edited.exit()).as(edited.err()).isZero();
    assertThat(edited.json().get("entriesBefore").asLong()).isEqualTo(DEVICES);
    assertThat(edited.json().get("entriesAfter").asLong()).isEqualTo(DEVICES);
    assertThat(StateShift.get(spark).verify(cp).problems()).isEmpty();

    // every selected count doubled, everything else as it was
    Map<String, Row> after = values(cp);
    assertThat(after.keySet()).isEqualTo(before.keySet());
    before.forEach(
        (device, was) -> {
          Row now = after.get(device);
          long factor = selected.contains(device) ? 2 : 1;
          assertThat(now.getLong(0)).as(device).isEqualTo(factor * was.getLong(0));
          assertThat(now.get(1)).as(device).isEqualTo(was.get(1));
        });

    // the history: an edit, its expressions and the count, never a value
    Run history = cli("history", "--checkpoint", cp, "--json");
    JsonNode last = history.json().get("entries").get(history.json().get("entries").size() - 1);
    assertThat(last.get("kind").asText()).isEqualTo("edit");
    assertThat(last.get("change").asText())
        .contains(
            "set count = value.count * 2 where " + SELECTED,
            "(" + selected.size() + " entries rewritten)");
    for (Row was : before.values()) {
      assertThat(last.get("change").asText()).doesNotContain(" " + was.getLong(0) * 2 + " ");
    }

    input.writeEvents(2, ROWS, DEVICES);
    input.writeEvents(3, ROWS, DEVICES);
    Path sink = tmp.resolve("sink");
    run(query(input.stream()), checkpoint, sink, store);
    List<String> written = lastBatch(sink);

    // the oracle: an uninterrupted run over the same input, each selected count plus its count at
    // the stop (doubled once there)
    OperatorRun whole = new OperatorRun(spark, tmp.resolve("oracle-input"));
    for (int i = 0; i < 4; i++) {
      whole.writeEvents(i, ROWS, DEVICES);
    }
    Path oracleSink = tmp.resolve("oracle-sink");
    run(query(whole.stream()), tmp.resolve("oracle-checkpoint"), oracleSink, StateStores.HDFS);
    List<String> oracle =
        lastBatchRows(oracleSink).stream()
            .map(
                r -> {
                  String device = r.getString(0);
                  long extra = selected.contains(device) ? before.get(device).getLong(0) : 0;
                  return RowFactory.create(device, r.getLong(1) + extra, r.get(2)).toString();
                })
            .sorted()
            .toList();
    assertThat(written).hasSize(DEVICES).containsExactlyElementsOf(oracle);
  }

  @Tag("cover")
  @Test
  void setsThatDoNotFitAreRefusedBeforeTheLock() throws Exception {
    OperatorRun input = new OperatorRun(spark, tmp.resolve("input"));
    Path checkpoint = tmp.resolve("checkpoint");
    String cp = checkpoint.toString();
    input.writeEvents(0, ROWS, DEVICES);
    run(query(input.stream()), checkpoint, tmp.resolve("sink"), StateStores.HDFS);
    Map<String, String> digest = CheckpointDigest.of(checkpoint);
    Dataset<Row> before = StateShift.get(spark).readState(cp).load();

    // a field the value has not
    Run unknown = cli("edit", "--checkpoint", cp, "--set", "total = value.count * 2");
    assertThat(unknown.exit()).as(unknown.err()).isEqualTo(2);
    assertThat(unknown.err())
        .contains("--set names total", "value.count bigint")
        .doesNotContain("\tat ");
    // a narrowing: a decimal, a string or a double into a bigint, a string into a timestamp
    Run decimal = cli("edit", "--checkpoint", cp, "--set", "count = value.count * 1.5");
    assertThat(decimal.exit()).as(decimal.err()).isEqualTo(2);
    assertThat(decimal.err()).contains("does not fit value.count (bigint) without loss");
    Run text = cli("edit", "--checkpoint", cp, "--set", "count = 'many'");
    assertThat(text.exit()).as(text.err()).isEqualTo(2);
    assertThat(text.err()).contains("is string, which does not fit value.count");
    Run real = cli("edit", "--checkpoint", cp, "--set", "count = value.count / 2");
    assertThat(real.exit()).as(real.err()).isEqualTo(2);
    assertThat(real.err()).contains("is double, which does not fit value.count");
    Run time = cli("edit", "--checkpoint", cp, "--set", "max = 'noon'");
    assertThat(time.exit()).as(time.err()).isEqualTo(2);
    assertThat(time.err()).contains("does not fit value.max (timestamp)");
    // an expression Spark cannot analyze, a --where that is no predicate, a --where alone
    Run bad = cli("edit", "--checkpoint", cp, "--set", "count = value.cuont + 1");
    assertThat(bad.exit()).as(bad.err()).isEqualTo(2);
    assertThat(bad.err()).contains("cannot be set");
    Run notPredicate =
        cli("edit", "--checkpoint", cp, "--set", "count = 0", "--where", "value.count");
    assertThat(notPredicate.exit()).as(notPredicate.err()).isEqualTo(2);
    assertThat(notPredicate.err()).contains("not a predicate");
    Run whereAlone = cli("edit", "--checkpoint", cp, "--where", "value.count > 3");
    assertThat(whereAlone.exit()).as(whereAlone.err()).isEqualTo(2);
    assertThat(CheckpointDigest.of(checkpoint)).isEqualTo(digest);

    // a widening is cast to the recorded type: an int expression into the bigint count
    StateShift.get(spark).editState(cp).set("count", "CAST(1 AS INT)").execute();
    assertThat(values(cp).values()).allSatisfy(v -> assertThat(v.getLong(0)).isEqualTo(1));
    assertThat(StateShift.get(spark).readState(cp).load().schema().apply("value").dataType())
        .isEqualTo(before.schema().apply("value").dataType());
  }

  /** The values of the state by device: count, then the last timestamp. */
  private Map<String, Row> values(String checkpoint) {
    return StateShift.get(spark)
        .readState(checkpoint)
        .load()
        .select(col("key.device"), col("value.count"), col("value.max"))
        .collectAsList()
        .stream()
        .collect(
            Collectors.toMap(r -> r.getString(0), r -> RowFactory.create(r.getLong(1), r.get(2))));
  }

  private void run(Dataset<Row> query, Path checkpoint, Path sink, StateStores store) {
    StateEvolveOracleTest.run(spark, query, checkpoint, sink, store);
  }

  private List<Row> lastBatchRows(Path sink) {
    return StateEvolveOracleTest.lastBatchRows(spark, sink);
  }

  private List<String> lastBatch(Path sink) {
    return lastBatchRows(sink).stream().map(Row::toString).sorted().toList();
  }
}
