package io.stateshift;

import static org.assertj.core.api.Assertions.assertThat;

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
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.streaming.StateOperatorProgress;
import org.apache.spark.sql.streaming.StreamingQueryProgress;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * The oracle for stream-stream joins in state format 3 (one RocksDB store per partition, the four
 * join stores as its column families): repartitioned 3 -> 5 and then 5 -> 2 on the same checkpoint
 * with input in between, the query writes exactly what it writes when run without interruption;
 * after each repartition every key of every column family sits in the partition Spark assigns its
 * join key, and every row read is written.
 */
@Tag("join-format-3")
class JoinStateFormat3Test {
  static final String JOIN_FORMAT = "spark.sql.streaming.join.stateFormatVersion";
  static final List<String> FAMILIES =
      List.of(
          "left-keyToNumValues",
          "left-keyWithIndexToValue",
          "right-keyToNumValues",
          "right-keyWithIndexToValue");
  static final int ROWS_PER_FILE = 60;
  static final int DEVICES = 12;
  static final int EVENT_FILES = 3;

  private final SparkSession spark = SparkTestSession.get();

  @TempDir Path tmp;

  static List<Arguments> scenarios() {
    return List.of(
        Arguments.of(OperatorQueries.JOIN_INNER, StateStores.ROCKSDB),
        Arguments.of(OperatorQueries.JOIN_LEFT_OUTER, StateStores.ROCKSDB_CHANGELOG));
  }

  @ParameterizedTest(name = "{0} on {1}: 3 -> 5 -> 2")
  @MethodSource("scenarios")
  void repartitionedTwiceTheJoinWritesExactlyTheUninterruptedOutput(
      OperatorQueries query, StateStores store) {
    OperatorRun run = new OperatorRun(spark, tmp.resolve("input"));
    Path checkpoint = tmp.resolve("checkpoint");
    Path sink = tmp.resolve("sink");
    run.writeEvents(0, ROWS_PER_FILE, DEVICES);
    assertRunsWithPartitions(run.runAvailable(query, checkpoint, sink, conf(store, 3)), 3);

    repartitionAndCheck(checkpoint, 3, 5);
    run.writeEvents(1, ROWS_PER_FILE, DEVICES);
    assertRunsWithPartitions(run.runAvailable(query, checkpoint, sink, conf(store, 3)), 5);

    repartitionAndCheck(checkpoint, 5, 2);
    run.writeEvents(2, ROWS_PER_FILE, DEVICES);
    run.writeFlush(EVENT_FILES);
    assertRunsWithPartitions(run.runAvailable(query, checkpoint, sink, conf(store, 3)), 2);

    assertThat(run.sinkRows(sink, query)).containsExactlyElementsOf(oracle(query, store));
  }

  /**
   * A join key erased from state in format 3 goes from all four column families at once: Spark's
   * own reader finds none of its entries afterwards, and rows that arrive after the erase match
   * exactly what they match in an uninterrupted run over the input without the key's earlier rows.
   */
  @Test
  void erasedJoinKeyLeavesEveryColumnFamily() {
    OperatorQueries query = OperatorQueries.JOIN_INNER;
    String erased = "device-3";
    List<Row> first = events(0);
    List<Row> second = events(1);
    OperatorRun run = new OperatorRun(spark, tmp.resolve("input"));
    Path checkpoint = tmp.resolve("checkpoint");
    Path sink = tmp.resolve("sink");
    run.writeRows(0, first);
    run.runAvailable(query, checkpoint, sink, conf(StateStores.ROCKSDB, 3));

    // read as data: one row per entry of each of the four stores, kind join, keyed by join key
    Dataset<Row> state = StateShift.get(spark).readState(checkpoint.toString()).load();
    assertThat(
            state.select("variable").distinct().collectAsList().stream()
                .map(r -> r.getString(0))
                .sorted()
                .toList())
        .containsExactlyElementsOf(FAMILIES);
    assertThat(state.where("kind != 'join'").count()).isZero();
    String predicate = "key.field0 = '" + erased + "'";
    long entries = state.where(predicate).count();
    assertThat(entries).isPositive();

    RepartitionResult edited =
        StateShift.get(spark).editState(checkpoint.toString()).deleteWhere(predicate).execute();
    assertThat(edited.stores())
        .singleElement()
        .satisfies(m -> assertThat(m.rowsRead() - m.rowsWritten()).isEqualTo(entries));
    for (String family : FAMILIES) {
      Dataset<Row> rows =
          spark
              .read()
              .format("statestore")
              .option("batchId", edited.batchId())
              .option("operatorId", 0)
              .option("storeName", family)
              .load(checkpoint.toString());
      assertThat(rows.count()).as("rows of %s", family).isPositive();
      assertThat(rows.where("key.field0 = '" + erased + "'").count())
          .as("erased key in %s", family)
          .isZero();
    }

    run.writeRows(1, second);
    run.writeFlush(2);
    run.runAvailable(query, checkpoint, sink, conf(StateStores.ROCKSDB, 3));
    Path oracleDir = tmp.resolve("oracle");
    OperatorRun oracle = new OperatorRun(spark, oracleDir.resolve("input"));
    oracle.writeRows(0, first.stream().filter(r -> !r.getString(1).equals(erased)).toList());
    oracle.writeRows(1, second);
    oracle.writeFlush(2);
    oracle.runAvailable(
        query,
        oracleDir.resolve("checkpoint"),
        oracleDir.resolve("sink"),
        conf(StateStores.ROCKSDB, 4));
    List<String> afterErase = OperatorRun.rowsOfBatchesAfter(spark, sink, edited.batchId());
    assertThat(afterErase)
        .isNotEmpty()
        .containsExactlyElementsOf(
            OperatorRun.rowsOfBatchesAfter(spark, oracleDir.resolve("sink"), 0));
    // kept keys still match their old rows; the erased key's old rows match nothing
    assertThat(afterErase).anyMatch(r -> r.contains(",e0-"));
    assertThat(afterErase).noneMatch(r -> r.startsWith("[" + erased + ",") && r.contains(",e0-"));
  }

  private List<Row> events(int index) {
    Path dir = tmp.resolve("gen-" + index);
    new StreamRun(spark, dir).writeEvents(index, ROWS_PER_FILE, DEVICES);
    return spark.read().schema(StreamRun.EVENT_SCHEMA).json(dir.toString()).collectAsList();
  }

  private void repartitionAndCheck(Path checkpoint, int from, int to) {
    RepartitionResult result = StateAssertions.repartition(spark, checkpoint, from, to);
    // one store: the four join stores are its column families
    assertThat(result.stores()).hasSize(1);
    assertEveryKeyInItsSparkPartition(checkpoint, result.batchId(), to);
  }

  private static Map<String, String> conf(StateStores store, int partitions) {
    Map<String, String> conf = new HashMap<>(store.withPartitions(partitions));
    conf.put(JOIN_FORMAT, "3");
    return conf;
  }

  /** The same query over the same files, on a fresh checkpoint, in one uninterrupted run. */
  private List<String> oracle(OperatorQueries query, StateStores store) {
    Path dir = tmp.resolve("oracle");
    OperatorRun run = new OperatorRun(spark, dir.resolve("input"));
    for (int i = 0; i < EVENT_FILES; i++) {
      run.writeEvents(i, ROWS_PER_FILE, DEVICES);
    }
    run.writeFlush(EVENT_FILES);
    run.runAvailable(query, dir.resolve("checkpoint"), dir.resolve("sink"), conf(store, 4));
    List<String> rows = run.sinkRows(dir.resolve("sink"), query);
    assertThat(rows).isNotEmpty();
    return rows;
  }

  /**
   * Reads every column family with Spark's statestore source (a join store name selects the column
   * family in format 3) and checks each key's partition against pmod(hash(join key), n), computed
   * in SQL; a keyWithIndexToValue key is the join key and an index.
   */
  private void assertEveryKeyInItsSparkPartition(Path checkpoint, long batchId, int partitions) {
    for (String family : FAMILIES) {
      Dataset<Row> state =
          spark
              .read()
              .format("statestore")
              .option("batchId", batchId)
              .option("operatorId", 0)
              .option("storeName", family)
              .load(checkpoint.toString());
      StructField[] key = ((StructType) state.schema().apply("key").dataType()).fields();
      List<String> joinKey = new ArrayList<>();
      for (int i = 0; i < key.length - (family.endsWith("keyWithIndexToValue") ? 1 : 0); i++) {
        joinKey.add("key.`" + key[i].name() + "`");
      }
      String expected = "pmod(hash(" + String.join(", ", joinKey) + "), " + partitions + ")";
      assertThat(state.count()).as("rows of %s", family).isPositive();
      assertThat(
              state
                  .filter("partition_id != " + expected + " OR partition_id >= " + partitions)
                  .count())
          .as("misplaced keys of %s", family)
          .isZero();
    }
  }

  /** Every batch ran the join with n partitions, as one store per partition. */
  private static void assertRunsWithPartitions(List<StreamingQueryProgress> progress, int n) {
    assertThat(progress).isNotEmpty();
    for (StreamingQueryProgress p : progress) {
      for (StateOperatorProgress op : p.stateOperators()) {
        assertThat(op.numShufflePartitions()).isEqualTo(n);
        assertThat(op.numStateStoreInstances()).isEqualTo((long) n);
      }
    }
  }
}
