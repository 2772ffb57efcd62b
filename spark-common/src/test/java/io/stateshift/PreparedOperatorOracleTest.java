package io.stateshift;

import static org.assertj.core.api.Assertions.assertThat;

import io.stateshift.spark.state.DeltaChanges;
import io.stateshift.testing.OperatorQueries;
import io.stateshift.testing.OperatorRun;
import io.stateshift.testing.SparkTestSession;
import io.stateshift.testing.StateStores;
import io.stateshift.testing.StatefulQueries;
import io.stateshift.testing.StreamRun;
import io.stateshift.testing.TestSets;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;
import org.apache.spark.sql.SparkSession;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * The prepared path for joins, session windows, flatMapGroupsWithState and deduplication with an
 * aggregation after it, on the HDFS-backed store and on RocksDB with changelog checkpointing: a
 * layout prepared after the first batches, a tail of batches in which keys are added, updated and
 * removed (devices come and go, sessions close, timeouts fire, join rows expire behind the
 * watermark), the repartition replaying that tail onto the prepared layout, and the restarted
 * query's output equal to an uninterrupted run's, every key in the partition Spark assigns it.
 */
class PreparedOperatorOracleTest {
  private static final int FROM = 3;
  private static final int TO = 5;
  private static final int BEFORE = 2;
  private static final int TAIL = 2;
  private static final int ALL = BEFORE + TAIL + 1;

  private final SparkSession spark = SparkTestSession.get();

  @TempDir Path tmp;

  /**
   * Every operator on both stores under {@code -Pextended}; in {@code mvn test} the stores take
   * turns, RocksDB with changelog checkpointing first.
   */
  static Stream<Arguments> operators() {
    List<Arguments> out = new ArrayList<>();
    List<StateStores> stores = List.of(StateStores.ROCKSDB_CHANGELOG, StateStores.HDFS);
    List<Object[]> operators =
        List.of(
            new Object[] {OperatorQueries.JOIN_FULL_OUTER, OperatorOracleTest.JOIN_FORMAT, "2"},
            new Object[] {
              OperatorQueries.SESSION_WINDOW_COUNT,
              "spark.sql.streaming.sessionWindow.stateFormatVersion",
              "1"
            },
            new Object[] {
              OperatorQueries.FLAT_MAP_EVENT_TIME_TIMEOUT, OperatorOracleTest.FMGWS_FORMAT, "2"
            });
    for (int i = 0; i < operators.size(); i++) {
      for (int s = 0; s < stores.size(); s++) {
        Object[] o = operators.get(i);
        out.add(Arguments.of(o[0], stores.get(s), o[1], o[2]));
      }
    }
    return TestSets.subset(out, i -> (i / stores.size()) % stores.size() == i % stores.size());
  }

  @ParameterizedTest(name = "{0} on {1}: prepared {2}={3}")
  @MethodSource("operators")
  void tailReplayedOntoThePreparedLayoutWritesTheUninterruptedOutput(
      OperatorQueries query, StateStores store, String formatConf, String format) {
    OperatorRun run = new OperatorRun(spark, tmp.resolve("input"));
    Path checkpoint = tmp.resolve("checkpoint");
    Path sink = tmp.resolve("sink");
    Map<String, String> conf = new HashMap<>(store.withPartitions(FROM));
    conf.put(formatConf, format);
    write(run, query, 0, BEFORE);
    run.runAvailable(query, checkpoint, sink, conf);
    PrepareResult prepared =
        StateShift.get(spark).prepareState(checkpoint.toString()).toPartitions(TO).execute();
    long v = prepared.prepared().orElseThrow().preparedBatch();
    write(run, query, BEFORE, TAIL);
    run.runAvailable(query, checkpoint, sink, conf);
    assertTailAddsAndRemoves(checkpoint, v);

    RepartitionResult result = StateAssertions.repartition(spark, checkpoint, FROM, TO);
    assertThat(result.path().prepared()).as("path: %s", result.path()).isTrue();
    assertThat(result.path().preparedBatch()).isEqualTo(v);
    assertThat(result.path().lastCommittedBatch()).isGreaterThan(v);
    assertThat(result.path().rowsReplayed()).isPositive();
    StateAssertions.assertEveryStoreKeyInItsSparkPartition(spark, checkpoint, result.batchId(), TO);

    write(run, query, BEFORE + TAIL, ALL - BEFORE - TAIL);
    run.writeFlush(ALL);
    run.runAvailable(query, checkpoint, sink, conf);
    assertThat(run.sinkRows(sink, query))
        .containsExactlyElementsOf(oracle(query, formatConf, format));
  }

  /** Deduplication and a windowed count in one query: two operators, each with its own tail. */
  @ParameterizedTest(name = "{0}")
  @MethodSource("dedupStores")
  void deduplicationThenAggregation(StateStores store) {
    StatefulQueries query = StatefulQueries.DEDUP_THEN_WINDOWED_COUNT;
    StreamRun run = new StreamRun(spark, tmp.resolve("input"));
    Path checkpoint = tmp.resolve("checkpoint");
    Path sink = tmp.resolve("sink");
    Map<String, String> conf = store.withPartitions(FROM);
    for (int i = 0; i < BEFORE; i++) {
      run.writeEvents(i, 300, 40);
    }
    run.runAvailable(query, checkpoint, sink, conf);
    long v = StateAssertions.preparedBatch(spark, checkpoint, TO);
    for (int i = BEFORE; i < BEFORE + TAIL; i++) {
      run.writeEvents(i, 300, 40);
    }
    run.runAvailable(query, checkpoint, sink, conf);
    assertTailAddsAndRemoves(checkpoint, v);

    RepartitionResult result = StateAssertions.repartition(spark, checkpoint, FROM, TO);
    assertThat(result.path().prepared()).as("path: %s", result.path()).isTrue();
    assertThat(result.path().preparedBatch()).isEqualTo(v);
    assertThat(result.stores()).hasSize(2);
    StateAssertions.assertEveryStoreKeyInItsSparkPartition(spark, checkpoint, result.batchId(), TO);

    run.writeEvents(BEFORE + TAIL, 300, 40);
    run.writeFlush(ALL);
    run.runAvailable(query, checkpoint, sink, conf);

    StreamRun oracle = new StreamRun(spark, tmp.resolve("input"));
    Path oracleSink = tmp.resolve("oracle-sink");
    oracle.runAvailable(
        query, tmp.resolve("oracle-checkpoint"), oracleSink, StateStores.HDFS.withPartitions(2));
    assertThat(run.sinkRows(sink, query))
        .isNotEmpty()
        .containsExactlyElementsOf(oracle.sinkRows(oracleSink, query));
  }

  /** RocksDB with changelog checkpointing in {@code mvn test}, both stores under -Pextended. */
  static Stream<Arguments> dedupStores() {
    return TestSets.subset(
        List.of(Arguments.of(StateStores.ROCKSDB_CHANGELOG), Arguments.of(StateStores.HDFS)),
        i -> i == 0);
  }

  /** The batches after V put and remove keys (the delta files of versions V+2..L+1). */
  private void assertTailAddsAndRemoves(Path checkpoint, long v) {
    long last;
    try (Stream<Path> commits = Files.list(checkpoint.resolve("commits"))) {
      last =
          commits
              .map(p -> p.getFileName().toString())
              .filter(n -> n.matches("\\d+"))
              .mapToLong(Long::parseLong)
              .max()
              .orElseThrow();
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
    assertThat(last).isGreaterThan(v);
    DeltaChanges.Counts tail = DeltaChanges.of(spark, checkpoint, v + 2, last + 1);
    assertThat(tail.puts()).as("puts in the tail").isPositive();
    assertThat(tail.removals()).as("removals in the tail").isPositive();
  }

  private static void write(OperatorRun run, OperatorQueries query, int first, int count) {
    for (int i = first; i < first + count; i++) {
      if (query.isJoin()) {
        run.writeEvents(i, OperatorOracleTest.JOIN_ROWS, OperatorOracleTest.JOIN_DEVICES);
      } else {
        run.writeRotatingEvents(i, OperatorOracleTest.ROTATING_ROWS);
      }
    }
  }

  /** The same query over the same files, on a fresh checkpoint, in one uninterrupted run. */
  private List<String> oracle(OperatorQueries query, String formatConf, String format) {
    Path dir = tmp.resolve("oracle");
    OperatorRun run = new OperatorRun(spark, dir.resolve("input"));
    write(run, query, 0, ALL);
    run.writeFlush(ALL);
    Map<String, String> conf = new HashMap<>(StateStores.HDFS.withPartitions(2));
    conf.put(formatConf, format);
    run.runAvailable(query, dir.resolve("checkpoint"), dir.resolve("sink"), conf);
    List<String> rows = run.sinkRows(dir.resolve("sink"), query);
    assertThat(rows).isNotEmpty();
    return rows;
  }
}
