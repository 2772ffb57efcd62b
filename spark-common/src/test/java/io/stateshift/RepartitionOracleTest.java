package io.stateshift;

import static org.assertj.core.api.Assertions.assertThat;

import io.stateshift.testing.SparkTestSession;
import io.stateshift.testing.StateStores;
import io.stateshift.testing.StatefulQueries;
import io.stateshift.testing.StreamRun;
import io.stateshift.testing.TestSets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.stream.Stream;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.streaming.StateOperatorProgress;
import org.apache.spark.sql.streaming.StreamingQueryProgress;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * The core oracle: a query stopped, repartitioned and restarted on the same checkpoint must write
 * exactly what the same query writes when run without interruption over the same input.
 */
class RepartitionOracleTest {
  static final int EVENT_FILES_PER_PART = 2;
  static final int ALL_EVENT_FILES = 3 * EVENT_FILES_PER_PART;
  static final int ROWS_PER_FILE = 400;
  static final int DEVICES = 60;

  private static final Map<StatefulQueries, List<String>> ORACLES = new ConcurrentHashMap<>();
  private final SparkSession spark = SparkTestSession.get();

  @TempDir Path tmp;

  /**
   * Every query on every store under -Pextended; by default every query once, the stores taking
   * turns. Each case first increases, then decreases the count.
   */
  static Stream<Arguments> matrix() {
    List<Arguments> out = new ArrayList<>();
    for (StatefulQueries query : StatefulQueries.values()) {
      for (StateStores store : StateStores.values()) {
        out.add(Arguments.of(query, store, 4, 8, 3));
      }
    }
    if (TestSets.cover()) {
      // a line's cover: aggregation and deduplication, each on both stores
      return out.stream()
          .filter(
              c ->
                  (c.get()[0] == StatefulQueries.WINDOWED_COUNT
                          || c.get()[0] == StatefulQueries.DEDUP)
                      && c.get()[1] != StateStores.ROCKSDB_CHANGELOG);
    }
    int stores = StateStores.values().length;
    // case i is query i / stores on store i % stores: the diagonal, wrapping round the stores
    return TestSets.subset(out, i -> i % stores == (i / stores) % stores);
  }

  /**
   * One checkpoint goes {@code first -> up -> down}, with input between the steps, so each case
   * proves an increase and a decrease (and a second repartition of a repartitioned checkpoint).
   */
  @Tag("cover")
  @ParameterizedTest(name = "{0} on {1}: {2} -> {3} -> {4} partitions")
  @MethodSource("matrix")
  void repartitionedQueryWritesExactlyTheUninterruptedOutput(
      StatefulQueries query, StateStores store, int first, int up, int down) {
    StreamRun run = new StreamRun(spark, tmp.resolve("input"));
    Path checkpoint = tmp.resolve("checkpoint");
    Path sink = tmp.resolve("sink");
    for (int i = 0; i < EVENT_FILES_PER_PART; i++) {
      run.writeEvents(i, ROWS_PER_FILE, DEVICES);
    }
    run.runAvailable(query, checkpoint, sink, store.withPartitions(first));

    repartitionAndCheck(checkpoint, first, up);
    for (int i = EVENT_FILES_PER_PART; i < 2 * EVENT_FILES_PER_PART; i++) {
      run.writeEvents(i, ROWS_PER_FILE, DEVICES);
    }
    // The session still asks for the first count: the checkpoint's count must win.
    assertRunsWith(run.runAvailable(query, checkpoint, sink, store.withPartitions(first)), up);

    repartitionAndCheck(checkpoint, up, down);
    for (int i = 2 * EVENT_FILES_PER_PART; i < ALL_EVENT_FILES; i++) {
      run.writeEvents(i, ROWS_PER_FILE, DEVICES);
    }
    run.writeFlush(ALL_EVENT_FILES);
    assertRunsWith(run.runAvailable(query, checkpoint, sink, store.withPartitions(first)), down);

    assertThat(run.sinkRows(sink, query)).containsExactlyElementsOf(oracle(query));
  }

  private void repartitionAndCheck(Path checkpoint, int from, int to) {
    RepartitionResult result = StateAssertions.repartition(spark, checkpoint, from, to);
    StateAssertions.assertEveryKeyInItsSparkPartition(spark, checkpoint, result.batchId(), to);
    StateAssertions.assertMetadataReports(spark, checkpoint, to);
    StateAssertions.assertSparkChecksumsMatch(checkpoint);
  }

  private static void assertRunsWith(List<StreamingQueryProgress> progress, int partitions) {
    assertThat(progress).isNotEmpty();
    for (StreamingQueryProgress p : progress) {
      for (StateOperatorProgress op : p.stateOperators()) {
        assertThat(op.numShufflePartitions()).isEqualTo(partitions);
        assertThat(op.numStateStoreInstances()).isEqualTo(partitions);
      }
    }
  }

  /** The same query over the same files, on a fresh checkpoint, in one uninterrupted run. */
  private List<String> oracle(StatefulQueries query) {
    return ORACLES.computeIfAbsent(
        query,
        q -> {
          Path dir = tmp.resolve("oracle-" + q.name());
          StreamRun run = new StreamRun(spark, dir.resolve("input"));
          for (int i = 0; i < ALL_EVENT_FILES; i++) {
            run.writeEvents(i, ROWS_PER_FILE, DEVICES);
          }
          run.writeFlush(ALL_EVENT_FILES);
          run.runAvailable(
              q,
              dir.resolve("checkpoint"),
              dir.resolve("sink"),
              StateStores.HDFS.withPartitions(5));
          List<String> rows = run.sinkRows(dir.resolve("sink"), q);
          assertThat(rows).isNotEmpty();
          assertMatchesBatchComputation(q, dir.resolve("input"), rows);
          return rows;
        });
  }

  /** Where a batch query computes the same answer, the streaming oracle must agree with it. */
  private void assertMatchesBatchComputation(StatefulQueries query, Path input, List<String> rows) {
    var events = spark.read().schema(StreamRun.EVENT_SCHEMA).json(input.toString());
    switch (query) {
      case WINDOWED_COUNT, GROUPED_COUNT -> {
        List<String> batch =
            query.apply(events).collectAsList().stream()
                .map(Row::toString)
                .filter(r -> !r.contains("flush"))
                .sorted()
                .toList();
        assertThat(rows.stream().filter(r -> !r.contains("flush")).toList())
            .containsExactlyElementsOf(batch);
      }
      case DEDUP, DEDUP_WITHIN_WATERMARK ->
          assertThat(rows).hasSize((int) events.select("eventId").distinct().count());
      case DEDUP_THEN_WINDOWED_COUNT -> {
        long distinct = events.filter("device != 'flush'").dropDuplicates("eventId", "ts").count();
        long counted =
            rows.stream()
                .filter(r -> !r.contains("flush"))
                .mapToLong(r -> Long.parseLong(r.substring(r.lastIndexOf(',') + 1, r.length() - 1)))
                .sum();
        assertThat(counted).isEqualTo(distinct);
      }
    }
  }
}
