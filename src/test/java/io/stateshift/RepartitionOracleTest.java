package io.stateshift;

import static org.assertj.core.api.Assertions.assertThat;

import io.stateshift.testing.SparkTestSession;
import io.stateshift.testing.StateStores;
import io.stateshift.testing.StatefulQueries;
import io.stateshift.testing.StreamRun;
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
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * The core oracle: a query stopped, repartitioned and restarted on the same checkpoint must write
 * exactly what the same query writes when run without interruption over the same input.
 */
class RepartitionOracleTest {
  static final int FIRST_PART_FILES = 3;
  static final int ALL_EVENT_FILES = 6;
  static final int ROWS_PER_FILE = 400;
  static final int DEVICES = 60;

  private static final Map<StatefulQueries, List<String>> ORACLES = new ConcurrentHashMap<>();
  private final SparkSession spark = SparkTestSession.get();

  @TempDir Path tmp;

  static Stream<Arguments> matrix() {
    List<Arguments> out = new ArrayList<>();
    for (StatefulQueries query : StatefulQueries.values()) {
      for (StateStores store : StateStores.values()) {
        out.add(Arguments.of(query, store, 4, 8));
        out.add(Arguments.of(query, store, 8, 3));
      }
    }
    return out.stream();
  }

  @ParameterizedTest(name = "{0} on {1}: {2} -> {3} partitions")
  @MethodSource("matrix")
  void repartitionedQueryWritesExactlyTheUninterruptedOutput(StatefulQueries query,
      StateStores store, int from, int to) {
    StreamRun run = new StreamRun(spark, tmp.resolve("input"));
    Path checkpoint = tmp.resolve("checkpoint");
    Path sink = tmp.resolve("sink");
    for (int i = 0; i < FIRST_PART_FILES; i++) {
      run.writeEvents(i, ROWS_PER_FILE, DEVICES);
    }
    run.runAvailable(query, checkpoint, sink, store.withPartitions(from));

    RepartitionResult result = StateShift.get(spark).repartitionState(checkpoint.toString())
        .toPartitions(to).execute();

    assertThat(result.fromPartitions()).isEqualTo(from);
    assertThat(result.toPartitions()).isEqualTo(to);
    assertThat(result.rowsMoved()).isPositive();
    assertThat(result.stores()).allSatisfy(s -> assertThat(s.rowsWritten()).isEqualTo(s.rowsRead()));
    StateAssertions.assertEveryKeyInItsSparkPartition(spark, checkpoint, result.batchId(), to);
    StateAssertions.assertMetadataReports(spark, checkpoint, to);

    for (int i = FIRST_PART_FILES; i < ALL_EVENT_FILES; i++) {
      run.writeEvents(i, ROWS_PER_FILE, DEVICES);
    }
    run.writeFlush(ALL_EVENT_FILES);
    // The session still asks for the old count: the checkpoint's new count must win.
    List<StreamingQueryProgress> progress =
        run.runAvailable(query, checkpoint, sink, store.withPartitions(from));

    assertThat(progress).isNotEmpty();
    for (StreamingQueryProgress p : progress) {
      for (StateOperatorProgress op : p.stateOperators()) {
        assertThat(op.numShufflePartitions()).isEqualTo(to);
        assertThat(op.numStateStoreInstances()).isEqualTo(to);
      }
    }
    assertThat(run.sinkRows(sink, query)).containsExactlyElementsOf(oracle(query));
  }

  /** The same query over the same files, on a fresh checkpoint, in one uninterrupted run. */
  private List<String> oracle(StatefulQueries query) {
    return ORACLES.computeIfAbsent(query, q -> {
      Path dir = tmp.resolve("oracle-" + q.name());
      StreamRun run = new StreamRun(spark, dir.resolve("input"));
      for (int i = 0; i < ALL_EVENT_FILES; i++) {
        run.writeEvents(i, ROWS_PER_FILE, DEVICES);
      }
      run.writeFlush(ALL_EVENT_FILES);
      run.runAvailable(q, dir.resolve("checkpoint"), dir.resolve("sink"),
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
        List<String> batch = query.apply(events).collectAsList().stream().map(Row::toString)
            .filter(r -> !r.contains("flush")).sorted().toList();
        assertThat(rows.stream().filter(r -> !r.contains("flush")).toList())
            .containsExactlyElementsOf(batch);
      }
      case DEDUP, DEDUP_WITHIN_WATERMARK -> assertThat(rows).hasSize(
          (int) events.select("eventId").distinct().count());
      case DEDUP_THEN_WINDOWED_COUNT -> {
        long distinct = events.filter("device != 'flush'").dropDuplicates("eventId", "ts").count();
        long counted = rows.stream().filter(r -> !r.contains("flush"))
            .mapToLong(r -> Long.parseLong(r.substring(r.lastIndexOf(',') + 1, r.length() - 1)))
            .sum();
        assertThat(counted).isEqualTo(distinct);
      }
    }
  }
}
