package io.stateshift;

import static org.apache.spark.sql.functions.col;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.stateshift.testing.CheckpointDigest;
import io.stateshift.testing.OperatorQueries;
import io.stateshift.testing.OperatorRun;
import io.stateshift.testing.SparkTestSession;
import io.stateshift.testing.StateStores;
import io.stateshift.testing.StreamRun;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.stream.Collectors;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.SparkSession;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * transformWithState state as data: read with each entry's variable, column family and kind, and
 * erased by grouping key. An erased device loses its value, list and map state and its timer
 * together: its timer never fires, and the query, restarted over more input, writes exactly what it
 * writes uninterrupted over the input without the device's events before the erase.
 */
@Tag("transform-with-state") // the lines whose stateshift reads and writes its state (4.2)
class TransformWithStateEditTest {
  private static final int ROWS = 40;

  /** In files 0 and 1 only ({@link OperatorRun#writeRotatingEvents}): its timer is pending. */
  private static final String ERASED = "r-5";

  /** Seen in the same files: its timer fires after the erase. */
  private static final String KEPT = "r-4";

  private final SparkSession spark = SparkTestSession.get();

  @TempDir Path tmp;

  @Test
  void erasedDeviceLosesItsStateAndItsTimerNeverFires() {
    OperatorQueries query = OperatorQueries.TWS_EVENT_TIME;
    Map<String, String> conf = new HashMap<>(StateStores.ROCKSDB.withPartitions(3));
    // one batch per file: a no-data batch would fire timers at run boundaries
    conf.put(TransformWithStateOracleTest.NO_DATA_BATCHES, "false");
    List<List<Row>> before = List.of(rotating(0), rotating(1));
    List<List<Row>> after = List.of(rotating(2), rotating(3));
    assertThat(devices(before)).contains(ERASED, KEPT);
    assertThat(devices(after)).doesNotContain(ERASED, KEPT);

    OperatorRun run = new OperatorRun(spark, tmp.resolve("input"));
    Path checkpoint = tmp.resolve("checkpoint");
    Path sink = tmp.resolve("sink");
    for (int i = 0; i < before.size(); i++) {
      run.writeRows(i, before.get(i));
    }
    run.runAvailable(query, checkpoint, sink, conf);

    // every family shows its variable and kind; the grouping key is the device
    Dataset<Row> state = StateShift.get(spark).readState(checkpoint.toString()).load();
    assertThat(state.schema().fieldNames())
        .containsExactly(
            "partition_id", "variable", "column_family", "kind", "key", "entry_key", "value");
    Map<String, Set<String>> kindsOfErased =
        state.where("key.value = '" + ERASED + "'").collectAsList().stream()
            .collect(
                Collectors.groupingBy(
                    r -> r.getString(r.fieldIndex("kind")),
                    Collectors.mapping(r -> r.getString(r.fieldIndex("variable")), toSet())));
    assertThat(kindsOfErased).containsKeys("value", "list", "map", "timer");
    assertThat(kindsOfErased.get("value")).contains("count");
    long erasedEvents =
        before.stream().flatMap(List::stream).filter(r -> r.getString(1).equals(ERASED)).count();
    // one column family alone reads typed: the count state holds the device's events so far
    Row count =
        StateShift.get(spark)
            .readState(checkpoint.toString())
            .columnFamily("count")
            .where("key.value = '" + ERASED + "'")
            .load()
            .select(col("value.value"))
            .first();
    assertThat(count.getLong(0)).isEqualTo(erasedEvents);
    long erasedEntries = state.where("key.value = '" + ERASED + "'").count();
    // SQL: each entry's variable, family, kind and keys in the key column, its value as JSON
    SparkSession sql = spark.newSession();
    sql.conf().set("spark.sql.catalog.stateshift", "io.stateshift.sql.StateShiftCatalog");
    List<Row> timers =
        sql.sql(
                "CALL stateshift.system.read_state(checkpoint => '"
                    + checkpoint
                    + "', where => \"key.value = '"
                    + ERASED
                    + "' AND kind = 'timer'\")")
            .collectAsList();
    assertThat(timers)
        .isNotEmpty()
        .allSatisfy(
            r ->
                assertThat(r.getString(1))
                    .contains("\"kind\":\"timer\"", "\"value\":\"" + ERASED + "\""));

    // a predicate over anything but the grouping key is refused: a key's state goes together
    var digest = CheckpointDigest.of(checkpoint);
    for (String predicate : List.of("kind = 'timer'", "value IS NULL", "key.nosuch = 1")) {
      assertThatThrownBy(
              () ->
                  StateShift.get(spark)
                      .editState(checkpoint.toString())
                      .deleteWhere(predicate)
                      .execute())
          .isInstanceOf(StateShiftException.class)
          .hasMessageContaining("key.value string")
          .hasMessageContaining("The checkpoint was not changed");
    }
    assertThatThrownBy(
            () ->
                StateShift.get(spark)
                    .editState(checkpoint.toString())
                    .set("value", "value + 1")
                    .execute())
        .isInstanceOf(StateShiftException.class)
        .hasMessageContaining("but not set")
        .hasMessageContaining("The checkpoint was not changed");
    assertThat(CheckpointDigest.of(checkpoint)).isEqualTo(digest);

    String predicate = "key.value = '" + ERASED + "'";
    EditPreview preview =
        StateShift.get(spark).editState(checkpoint.toString()).deleteWhere(predicate).preview();
    assertThat(preview.rows()).isEqualTo(erasedEntries);
    RepartitionResult edited =
        StateShift.get(spark).editState(checkpoint.toString()).deleteWhere(predicate).execute();
    assertThat(edited.stores())
        .singleElement()
        .satisfies(m -> assertThat(m.rowsRead() - m.rowsWritten()).isEqualTo(erasedEntries));
    assertThat(StateShift.get(spark).verify(checkpoint.toString()).ok()).isTrue();
    assertThat(
            StateShift.get(spark).readState(checkpoint.toString()).load().where(predicate).count())
        .isZero();
    long erasedAt = lastCommitted(checkpoint);

    for (int i = 0; i < after.size(); i++) {
      run.writeRows(before.size() + i, after.get(i));
    }
    run.writeFlush(before.size() + after.size());
    run.runAvailable(query, checkpoint, sink, conf);

    List<String> written = OperatorRun.rowsOfBatchesAfter(spark, sink, erasedAt);
    List<String> oracle = oracleAfter(query, conf, without(before, ERASED), after);
    assertThat(written).containsExactlyElementsOf(oracle);
    assertThat(written).noneMatch(l -> l.contains("|" + ERASED + "|"));
    assertThat(written).anyMatch(l -> l.startsWith("[timer|" + KEPT + "|"));
  }

  // ---- input and oracle ----

  private List<Row> rotating(int index) {
    Path dir = tmp.resolve("gen-" + index);
    new OperatorRun(spark, dir).writeRotatingEvents(index, ROWS);
    return spark.read().schema(StreamRun.EVENT_SCHEMA).json(dir.toString()).collectAsList();
  }

  private static Set<String> devices(List<List<Row>> files) {
    return files.stream()
        .flatMap(List::stream)
        .map(r -> r.getString(1))
        .collect(Collectors.toCollection(TreeSet::new));
  }

  private static List<List<Row>> without(List<List<Row>> files, String device) {
    return files.stream()
        .map(f -> f.stream().filter(r -> !r.getString(1).equals(device)).toList())
        .toList();
  }

  private static <T> java.util.stream.Collector<T, ?, Set<T>> toSet() {
    return Collectors.toCollection(TreeSet::new);
  }

  /** The oracle's rows of the batches over {@code after} and the flush, uninterrupted. */
  private List<String> oracleAfter(
      OperatorQueries query,
      Map<String, String> conf,
      List<List<Row>> before,
      List<List<Row>> after) {
    Path dir = tmp.resolve("oracle");
    OperatorRun oracle = new OperatorRun(spark, dir.resolve("input"));
    List<List<Row>> files = new ArrayList<>(before);
    files.addAll(after);
    for (int i = 0; i < files.size(); i++) {
      oracle.writeRows(i, files.get(i));
    }
    oracle.writeFlush(files.size());
    oracle.runAvailable(query, dir.resolve("checkpoint"), dir.resolve("sink"), conf);
    return OperatorRun.rowsOfBatchesAfter(spark, dir.resolve("sink"), before.size() - 1);
  }

  private long lastCommitted(Path checkpoint) {
    return StateShift.get(spark).inspect(checkpoint.toString()).lastCommittedBatch();
  }
}
