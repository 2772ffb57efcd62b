package io.stateshift;

import static org.apache.spark.sql.functions.col;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.stateshift.spark.line.StateCalls;
import io.stateshift.testing.CheckpointDigest;
import io.stateshift.testing.OperatorQueries;
import io.stateshift.testing.OperatorRun;
import io.stateshift.testing.SparkTestSession;
import io.stateshift.testing.StateStores;
import io.stateshift.testing.StatefulQueries;
import io.stateshift.testing.StreamRun;
import java.nio.file.Path;
import java.sql.Timestamp;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.stream.Collectors;
import java.util.stream.Stream;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.RowFactory;
import org.apache.spark.sql.SparkSession;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.EnumSource;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * The oracle of an erase: a query stopped, its state edited to delete keys K, and restarted over
 * more input writes, from then on, exactly what the same query writes uninterrupted over the input
 * without K's events before the erase. Read back the way users read it: the sink's batches through
 * {@code spark.read}.
 */
class StateEditOracleTest {
  private static final int ROWS = 400;
  private static final int DEVICES = 12;
  private static final String ERASED = "device-3";
  private static final String KEPT = "device-4";

  private final SparkSession spark = SparkTestSession.get();

  @TempDir Path tmp;

  /** A grouped count erased by key: the final table counts the erased key from the erase on. */
  @Tag("cover")
  @ParameterizedTest(name = "grouped count on {0}")
  @EnumSource(
      value = StateStores.class,
      names = {"HDFS", "ROCKSDB"})
  void erasedAggregationKeyCountsOnlyEventsAfterTheErase(StateStores store) {
    StatefulQueries query = StatefulQueries.GROUPED_COUNT;
    StreamRun run = new StreamRun(spark, tmp.resolve("input"));
    Path checkpoint = tmp.resolve("checkpoint");
    Path sink = tmp.resolve("sink");
    List<List<Row>> before = List.of(events(0), events(1));
    List<List<Row>> after = List.of(events(2), resent(before.get(1), "b"));
    for (int i = 0; i < before.size(); i++) {
      run.writeRows(i, before.get(i));
    }
    run.runAvailable(query, checkpoint, sink, store.withPartitions(4));

    // the state, read as data, holds what a batch count over the same input gives
    Map<String, Long> stateCounts =
        StateShift.get(spark)
            .readState(checkpoint.toString())
            .load()
            .select(col("key.device"), col("value.count"))
            .collectAsList()
            .stream()
            .collect(Collectors.toMap(r -> r.getString(0), r -> r.getLong(1)));
    assertThat(stateCounts).containsEntry(ERASED, count(before, ERASED));
    assertThat(stateCounts).hasSize(DEVICES);

    EditPreview preview =
        StateShift.get(spark)
            .editState(checkpoint.toString())
            .deleteWhere("key.device = '" + ERASED + "'")
            .preview();
    assertThat(preview.rows()).isEqualTo(1);
    RepartitionResult edited =
        StateShift.get(spark)
            .editState(checkpoint.toString())
            .deleteWhere("key.device = '" + ERASED + "'")
            .execute();
    assertThat(edited.stores())
        .singleElement()
        .satisfies(
            m -> {
              assertThat(m.rowsRead()).isEqualTo(DEVICES);
              assertThat(m.rowsWritten()).isEqualTo(DEVICES - 1);
            });
    assertThat(StateShift.get(spark).verify(checkpoint.toString()).ok()).isTrue();
    StateAssertions.assertSparkChecksumsMatch(checkpoint);
    assertThat(StateShift.get(spark).history(checkpoint.toString()))
        .filteredOn(h -> h.kind() == HistoryEntry.Kind.EDIT)
        .singleElement()
        .satisfies(
            h -> {
              assertThat(h.change()).hasValueSatisfying(c -> assertThat(c).contains(ERASED));
              assertThat(h.change().get()).contains(DEVICES + " -> " + (DEVICES - 1) + " entries");
              assertThat(h.path()).contains("no shuffle").startsWith(fileExchange(store));
            });

    for (int i = 0; i < after.size(); i++) {
      run.writeRows(before.size() + i, after.get(i));
    }
    run.runAvailable(query, checkpoint, sink, store.withPartitions(4));

    List<String> oracle = oracle(query, without(before, ERASED), after);
    assertThat(run.sinkRows(sink, query)).containsExactlyElementsOf(oracle);
    assertThat(oracle).anyMatch(r -> r.contains(ERASED)).anyMatch(r -> r.contains(KEPT));
  }

  /** The file exchange an erase goes through on {@code store}, where the line has it. */
  private static String fileExchange(StateStores store) {
    if (store == StateStores.HDFS) {
      return "hdfs-file-exchange";
    }
    // without the line's RocksDB fast paths an erase that keeps the count rewrites in place
    return StateCalls.ROCKSDB_FAST_PATHS_UNAVAILABLE == null
        ? "rocksdb-sst-exchange"
        : "in-place rewrite";
  }

  static Stream<Arguments> rocksDbErases() {
    return Stream.of(
        Arguments.of(StateStores.ROCKSDB, 8),
        Arguments.of(StateStores.ROCKSDB, 3),
        Arguments.of(StateStores.ROCKSDB_CHANGELOG, 6));
  }

  /**
   * On RocksDB an erase leaves the entries out as the SST file exchange splits them: at a multiple
   * of the old count (each old partition written straight into its new ones), at another count
   * (sorted runs merged per new partition), and from changelogs (no snapshot of the version read:
   * {@code RocksDbChangelogSplit}). The erased key is counted once, every key sits in its Spark
   * partition, and the restarted query writes what the oracle writes.
   */
  @ParameterizedTest(name = "{0}: erase at 4 -> {1} partitions")
  @MethodSource("rocksDbErases")
  void rocksDbEraseLeavesEntriesOutInTheFileExchange(StateStores store, int partitions) {
    StatefulQueries query = StatefulQueries.GROUPED_COUNT;
    StreamRun run = new StreamRun(spark, tmp.resolve("input"));
    Path checkpoint = tmp.resolve("checkpoint");
    Path sink = tmp.resolve("sink");
    List<List<Row>> before = List.of(events(0), events(1));
    List<List<Row>> after = List.of(events(2), resent(before.get(1), "b"));
    for (int i = 0; i < before.size(); i++) {
      run.writeRows(i, before.get(i));
    }
    run.runAvailable(query, checkpoint, sink, store.withPartitions(4));

    List<String> progress = new CopyOnWriteArrayList<>();
    RepartitionResult edited =
        StateShift.get(spark)
            .editState(checkpoint.toString())
            .deleteWhere("key.device = '" + ERASED + "'")
            .toPartitions(partitions)
            .onProgress(progress::add)
            .execute();
    assertThat(edited.stores())
        .singleElement()
        .satisfies(
            m -> {
              assertThat(m.rowsRead()).isEqualTo(DEVICES);
              assertThat(m.rowsWritten()).isEqualTo(DEVICES - 1);
            });
    if (StateCalls.ROCKSDB_FAST_PATHS_UNAVAILABLE == null) {
      List<HistoryEntry> history = StateShift.get(spark).history(checkpoint.toString());
      assertThat(history.get(history.size() - 1).path()).startsWith("rocksdb-sst-exchange");
      assertThat(progress)
          .anyMatch(
              line ->
                  line.startsWith(
                      store == StateStores.ROCKSDB && partitions % 4 == 0
                          ? "splitting state partitions"
                          : "writing state partitions"));
    }
    assertThat(StateShift.get(spark).verify(checkpoint.toString()).problems()).isEmpty();
    StateAssertions.assertEveryKeyInItsSparkPartition(
        spark, checkpoint, edited.batchId(), partitions);

    for (int i = 0; i < after.size(); i++) {
      run.writeRows(before.size() + i, after.get(i));
    }
    run.runAvailable(query, checkpoint, sink, store.withPartitions(partitions));
    assertThat(run.sinkRows(sink, query))
        .containsExactlyElementsOf(oracle(query, without(before, ERASED), after));
  }

  /**
   * Deduplication without a watermark keeps every id forever: purging the ids of the first file
   * lets them through again, while ids still in the state stay deduplicated.
   */
  @Test
  void purgedDedupIdsPassAgainWhileOthersStayDeduplicated() {
    StatefulQueries query = StatefulQueries.DEDUP;
    StreamRun run = new StreamRun(spark, tmp.resolve("input"));
    Path checkpoint = tmp.resolve("checkpoint");
    Path sink = tmp.resolve("sink");
    List<List<Row>> before = List.of(events(0), events(1));
    // the same ids again: those of file 0 are purged, those of file 1 are not
    List<List<Row>> after = List.of(before.get(0), before.get(1), events(2));
    for (int i = 0; i < before.size(); i++) {
      run.writeRows(i, before.get(i));
    }
    run.runAvailable(query, checkpoint, sink, StateStores.HDFS.withPartitions(3));
    RepartitionResult edited =
        StateShift.get(spark)
            .editState(checkpoint.toString())
            .deleteWhere("key.eventId LIKE 'e0-%'")
            .execute();
    for (int i = 0; i < after.size(); i++) {
      run.writeRows(before.size() + i, after.get(i));
    }
    run.runAvailable(query, checkpoint, sink, StateStores.HDFS.withPartitions(3));

    List<String> afterErase = OperatorRun.rowsOfBatchesAfter(spark, sink, edited.batchId());
    List<String> oracle = oracleAfter(query, List.of(before.get(1)), after);
    assertThat(afterErase).containsExactlyElementsOf(oracle);
    // file 0's ids came through a second time, file 1's did not
    assertThat(afterErase).anyMatch(r -> r.startsWith("[e0-")).noneMatch(r -> r.startsWith("[e1-"));
  }

  /**
   * A join erased by key: rows that arrive after the erase never match the erased key's old rows,
   * and still match the old rows of every other key.
   */
  @Tag("cover")
  @Test
  void erasedJoinKeyNeverMatchesItsOldRows() {
    OperatorQueries query = OperatorQueries.JOIN_INNER;
    OperatorRun run = new OperatorRun(spark, tmp.resolve("input"));
    Path checkpoint = tmp.resolve("checkpoint");
    Path sink = tmp.resolve("sink");
    List<List<Row>> before = List.of(events(0), events(1));
    List<List<Row>> after = List.of(resent(before.get(1), "b"), events(2));
    for (int i = 0; i < before.size(); i++) {
      run.writeRows(i, before.get(i));
    }
    run.runAvailable(query, checkpoint, sink, StateStores.ROCKSDB.withPartitions(4));

    var digest = CheckpointDigest.of(checkpoint);
    assertThatThrownBy(
            () ->
                StateShift.get(spark)
                    .editState(checkpoint.toString())
                    .deleteWhere("value.lid = 'x'")
                    .execute())
        .isInstanceOf(StateShiftException.class)
        .hasMessageContaining("key only");
    assertThat(CheckpointDigest.of(checkpoint)).isEqualTo(digest);

    RepartitionResult edited =
        StateShift.get(spark)
            .editState(checkpoint.toString())
            .deleteWhere("key.field0 = '" + ERASED + "'")
            .execute();
    assertThat(edited.stores()).hasSize(4);
    assertThat(edited.stores())
        .allSatisfy(m -> assertThat(m.rowsWritten()).isLessThan(m.rowsRead()));
    for (int i = 0; i < after.size(); i++) {
      run.writeRows(before.size() + i, after.get(i));
    }
    run.runAvailable(query, checkpoint, sink, StateStores.ROCKSDB.withPartitions(4));

    List<String> afterErase = OperatorRun.rowsOfBatchesAfter(spark, sink, edited.batchId());
    List<String> oracle = joinOracleAfter(query, without(before, ERASED), after);
    assertThat(afterErase).containsExactlyElementsOf(oracle);
    // the erased key matched only rows that arrived after the erase; the kept key matched old rows
    assertThat(afterErase)
        .filteredOn(r -> r.contains(ERASED + ","))
        .noneMatch(r -> r.contains(",e1-"));
    assertThat(afterErase)
        .filteredOn(r -> r.contains(KEPT + ","))
        .anyMatch(r -> r.contains(",e1-"));
  }

  /**
   * Seeding: a grouped count started once on a warm-up event, seeded with a batch count over the
   * first half of the input, then run over the second half, writes what the whole stream gives.
   */
  @Tag("cover")
  @ParameterizedTest(name = "grouped count on {0}")
  @EnumSource(
      value = StateStores.class,
      names = {"HDFS", "ROCKSDB"})
  void seededAggregationEqualsTheWholeStream(StateStores store) {
    StatefulQueries query = StatefulQueries.GROUPED_COUNT;
    List<Row> warmUp =
        List.of(RowFactory.create("w-0", "warm-up", new Timestamp(StreamRun.START_SECONDS * 1000)));
    List<List<Row>> firstHalf = List.of(events(0), events(1));
    List<List<Row>> secondHalf = List.of(events(2), events(3));
    StreamRun run = new StreamRun(spark, tmp.resolve("input"));
    Path checkpoint = tmp.resolve("checkpoint");
    Path sink = tmp.resolve("sink");
    run.writeRows(0, warmUp);
    run.runAvailable(query, checkpoint, sink, store.withPartitions(4));

    Dataset<Row> counts =
        spark
            .createDataFrame(
                firstHalf.stream().flatMap(List::stream).toList(), StreamRun.EVENT_SCHEMA)
            .groupBy("device")
            .count()
            .selectExpr(
                "named_struct('device', device) AS key", "named_struct('count', count) AS value");
    var digest = CheckpointDigest.of(checkpoint);
    Dataset<Row> wrongType =
        counts.selectExpr("key", "named_struct('count', cast(value.count AS string)) AS value");
    assertThatThrownBy(
            () ->
                StateShift.get(spark)
                    .editState(checkpoint.toString())
                    .upsertFrom(wrongType)
                    .execute())
        .isInstanceOf(StateShiftException.class)
        .hasMessageContaining("value.count is string")
        .hasMessageContaining("The checkpoint was not changed");
    Dataset<Row> wrongKey = counts.selectExpr("named_struct('dev', key.device) AS key", "value");
    assertThatThrownBy(
            () ->
                StateShift.get(spark)
                    .editState(checkpoint.toString())
                    .upsertFrom(wrongKey)
                    .execute())
        .hasMessageContaining("no field key.device");
    assertThat(CheckpointDigest.of(checkpoint)).isEqualTo(digest);

    Path seed = tmp.resolve("seed");
    counts.write().parquet(seed.toString());
    RepartitionResult seeded =
        StateShift.get(spark)
            .editState(checkpoint.toString())
            .upsertFrom(seed.toString())
            .execute();
    assertThat(seeded.stores())
        .singleElement()
        .satisfies(m -> assertThat(m.rowsWritten()).isEqualTo(m.rowsRead() + DEVICES));
    for (int i = 0; i < secondHalf.size(); i++) {
      run.writeRows(1 + i, secondHalf.get(i));
    }
    run.runAvailable(query, checkpoint, sink, store.withPartitions(4));

    List<List<Row>> whole = new ArrayList<>();
    whole.add(warmUp);
    whole.addAll(firstHalf);
    List<String> oracle = oracle(query, whole, secondHalf);
    assertThat(run.sinkRows(sink, query)).containsExactlyElementsOf(oracle);
    assertThat(oracle).hasSize(DEVICES + 1);
  }

  @Test
  void predicatesThatDoNotApplyAreRefusedAndChangeNothing() {
    StreamRun run = new StreamRun(spark, tmp.resolve("input"));
    Path checkpoint = tmp.resolve("checkpoint");
    run.writeRows(0, events(0));
    run.runAvailable(
        StatefulQueries.GROUPED_COUNT,
        checkpoint,
        tmp.resolve("sink"),
        StateStores.HDFS.withPartitions(2));
    var digest = CheckpointDigest.of(checkpoint);
    for (String predicate :
        List.of("key.nosuch = 1", "value.count", "key.device = ", "partition_id + 1")) {
      assertThatThrownBy(
              () ->
                  StateShift.get(spark)
                      .editState(checkpoint.toString())
                      .deleteWhere(predicate)
                      .execute())
          .isInstanceOf(StateShiftException.class)
          .satisfies(e -> assertThat(((StateShiftException) e).reason().isBadInput()).isTrue())
          .hasMessageContaining("key.device string")
          .hasMessageContaining("The checkpoint was not changed");
    }
    assertThatThrownBy(
            () ->
                StateShift.get(spark)
                    .editState(checkpoint.toString())
                    .operator(7)
                    .deleteWhere("true")
                    .execute())
        .hasMessageContaining("no stateful operator 7");
    assertThat(CheckpointDigest.of(checkpoint)).isEqualTo(digest);
  }

  // ---- input ----

  /** File {@code index}'s events, as {@link StreamRun#writeEvents} makes them. */
  private List<Row> events(int index) {
    Path dir = tmp.resolve("gen-" + index);
    new StreamRun(spark, dir).writeEvents(index, ROWS, DEVICES);
    return spark.read().schema(StreamRun.EVENT_SCHEMA).json(dir.toString()).collectAsList();
  }

  /** The erased and the kept device's events again, 5 seconds later, with new ids. */
  private static List<Row> resent(List<Row> events, String prefix) {
    List<Row> out = new ArrayList<>();
    for (Row e : events) {
      String device = e.getString(1);
      if (device.equals(ERASED) || device.equals(KEPT)) {
        out.add(
            RowFactory.create(
                prefix + "-" + e.getString(0),
                device,
                new Timestamp(e.getTimestamp(2).getTime() + 5_000)));
      }
    }
    return out;
  }

  private static List<List<Row>> without(List<List<Row>> files, String device) {
    return files.stream()
        .map(f -> f.stream().filter(r -> !r.getString(1).equals(device)).toList())
        .toList();
  }

  private static long count(List<List<Row>> files, String device) {
    return files.stream().flatMap(List::stream).filter(r -> r.getString(1).equals(device)).count();
  }

  // ---- oracles: the same query, uninterrupted, on a fresh checkpoint ----

  private List<String> oracle(
      StatefulQueries query, List<List<Row>> before, List<List<Row>> after) {
    Path dir = tmp.resolve("oracle");
    return oracleRun(query, before, after, dir).sinkRows(dir.resolve("sink"), query);
  }

  /** The oracle's rows written by the batches over {@code after}'s files (one batch a file). */
  private List<String> oracleAfter(
      StatefulQueries query, List<List<Row>> before, List<List<Row>> after) {
    Path dir = tmp.resolve("oracle");
    oracleRun(query, before, after, dir);
    return OperatorRun.rowsOfBatchesAfter(spark, dir.resolve("sink"), before.size() - 1);
  }

  /** Runs the query once over all the files, in {@code dir} (input, checkpoint, sink). */
  private StreamRun oracleRun(
      StatefulQueries query, List<List<Row>> before, List<List<Row>> after, Path dir) {
    StreamRun run = new StreamRun(spark, dir.resolve("input"));
    writeAll(run::writeRows, before, after);
    run.runAvailable(
        query, dir.resolve("checkpoint"), dir.resolve("sink"), StateStores.HDFS.withPartitions(5));
    return run;
  }

  private List<String> joinOracleAfter(
      OperatorQueries query, List<List<Row>> before, List<List<Row>> after) {
    Path dir = tmp.resolve("oracle");
    OperatorRun run = new OperatorRun(spark, dir.resolve("input"));
    writeAll(run::writeRows, before, after);
    run.runAvailable(
        query, dir.resolve("checkpoint"), dir.resolve("sink"), StateStores.HDFS.withPartitions(5));
    return OperatorRun.rowsOfBatchesAfter(spark, dir.resolve("sink"), before.size() - 1);
  }

  private interface FileWriter {
    void write(int index, List<Row> rows);
  }

  private static void writeAll(FileWriter writer, List<List<Row>> before, List<List<Row>> after) {
    int index = 0;
    for (List<List<Row>> part : List.of(before, after)) {
      for (List<Row> file : part) {
        writer.write(index++, file);
      }
    }
  }
}
