package io.stateshift;

import static org.assertj.core.api.Assertions.assertThat;

import io.stateshift.testing.SparkTestSession;
import io.stateshift.testing.StateStores;
import io.stateshift.testing.StatefulQueries;
import io.stateshift.testing.StreamRun;
import java.nio.file.Path;
import java.util.List;
import org.apache.spark.sql.SparkSession;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * Spark 3.5's shuffle path for RocksDB state ({@code spark.stateshift.rocksdb.exchange=shuffle}):
 * each new partition is written as SST files ingested behind the shuffle, in the bytes of 3.5's own
 * encoder (its version byte before each row), a repartition takes {@code rocksdb-sst-ingest}, never
 * the provider's puts, with and without changelog checkpointing, its read side opening the old
 * versions' snapshots read-only, and Spark 3.5 reads the result back: every key in its partition,
 * and the restarted query writes what an uninterrupted run writes.
 */
class RocksDbSstIngestTest {
  private static final int DEVICES = 60;
  private static final String EXCHANGE = "spark.stateshift.rocksdb.exchange";
  private final SparkSession spark = SparkTestSession.get();

  @TempDir Path tmp;

  @Tag("cover")
  @ParameterizedTest(name = "on {0}")
  @EnumSource(
      value = StateStores.class,
      names = {"ROCKSDB", "ROCKSDB_CHANGELOG"})
  void rocksDbStateIsIngestedAsSstFilesBehindTheShuffle(StateStores store) {
    StatefulQueries query = StatefulQueries.WINDOWED_COUNT;
    StreamRun run = new StreamRun(spark, tmp.resolve("input"));
    Path checkpoint = tmp.resolve("checkpoint");
    Path sink = tmp.resolve("sink");
    run.writeEvents(0, 400, DEVICES);
    run.writeEvents(1, 400, DEVICES);
    run.runAvailable(query, checkpoint, sink, store.withPartitions(4));

    RepartitionResult result;
    spark.conf().set(EXCHANGE, "shuffle");
    try {
      result = StateAssertions.repartition(spark, checkpoint, 4, 6);
    } finally {
      spark.conf().unset(EXCHANGE);
    }
    List<HistoryEntry> history = StateShift.get(spark).history(checkpoint.toString());
    // read from each old version's own snapshot, opened read-only, where it has one (the provider
    // loads a version written under changelog checkpointing)
    assertThat(history.get(history.size() - 1).path())
        .startsWith("rocksdb-sst-ingest (read-only snapshots)");
    StateAssertions.assertEveryKeyInItsSparkPartition(spark, checkpoint, result.batchId(), 6);

    run.writeEvents(2, 400, DEVICES);
    run.writeFlush(3);
    run.runAvailable(query, checkpoint, sink, store.withPartitions(4));
    assertThat(run.sinkRows(sink, query)).containsExactlyElementsOf(oracle(query));
  }

  /** The same query over the same files, on a fresh checkpoint, in one uninterrupted run. */
  private List<String> oracle(StatefulQueries query) {
    Path dir = tmp.resolve("oracle");
    StreamRun run = new StreamRun(spark, dir.resolve("input"));
    for (int i = 0; i < 3; i++) {
      run.writeEvents(i, 400, DEVICES);
    }
    run.writeFlush(3);
    run.runAvailable(
        query, dir.resolve("checkpoint"), dir.resolve("sink"), StateStores.HDFS.withPartitions(5));
    List<String> rows = run.sinkRows(dir.resolve("sink"), query);
    assertThat(rows).isNotEmpty();
    return rows;
  }
}
