package io.stateshift;

import static org.assertj.core.api.Assertions.assertThat;

import io.stateshift.testing.SparkTestSession;
import io.stateshift.testing.StateStores;
import io.stateshift.testing.StatefulQueries;
import io.stateshift.testing.StreamRun;
import io.stateshift.testing.TestSets;
import java.nio.file.Path;
import java.util.List;
import java.util.stream.Stream;
import org.apache.spark.sql.SparkSession;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * Checkpoints with many partitions (Spark's default of 200) move through the file exchanges, not
 * the shuffle: every old partition's state goes to one staged file, every new partition is written
 * from the runs of all old ones. The restarted query must write exactly what an uninterrupted run
 * writes.
 */
class WideFileExchangeTest {
  private static final int ROWS_PER_FILE = 300;
  private static final int DEVICES = 150;

  private final SparkSession spark = SparkTestSession.get();

  @TempDir Path tmp;

  /**
   * RocksDB 200 -> 64 runs under -Pextended only: 20 -> 7 takes the same path. 20 -> 40, a
   * multiple, splits each old partition in place, in one stage.
   */
  static Stream<Arguments> cases() {
    return TestSets.subset(
        List.of(
            Arguments.of(StateStores.ROCKSDB, 20, 7, "rocksdb-sst-exchange"),
            Arguments.of(StateStores.ROCKSDB, 200, 64, "rocksdb-sst-exchange"),
            Arguments.of(StateStores.HDFS, 200, 64, "hdfs-file-exchange"),
            Arguments.of(StateStores.ROCKSDB, 20, 40, "rocksdb-sst-exchange")),
        i -> i != 1);
  }

  @ParameterizedTest(name = "{0}: {1} -> {2} partitions")
  @MethodSource("cases")
  void manyPartitionsTakeTheFileExchangeAndTheOutputHolds(
      StateStores store, int from, int to, String path) {
    StatefulQueries query = StatefulQueries.GROUPED_COUNT;
    StreamRun run = new StreamRun(spark, tmp.resolve("input"));
    Path checkpoint = tmp.resolve("checkpoint");
    Path sink = tmp.resolve("sink");
    run.writeEvents(0, ROWS_PER_FILE, DEVICES);
    run.runAvailable(query, checkpoint, sink, store.withPartitions(from));

    List<String> progress = new java.util.concurrent.CopyOnWriteArrayList<>();
    RepartitionResult result =
        StateShift.get(spark)
            .repartitionState(checkpoint.toString())
            .toPartitions(to)
            .onProgress(progress::add)
            .execute();
    assertThat(result.stores())
        .allSatisfy(s -> assertThat(s.rowsWritten()).isEqualTo(s.rowsRead()));
    // each stage's last line counts its own tasks, whatever their number
    List<String> stages =
        progress.stream()
            .filter(line -> line.matches(".*: \\d+/\\d+"))
            .map(line -> line.split(":")[0])
            .distinct()
            .toList();
    if (store == StateStores.ROCKSDB && to % from == 0) {
      assertThat(stages).containsExactly("splitting state partitions");
    } else {
      assertThat(stages)
          .containsSubsequence("reading state partitions", "writing state partitions");
    }
    for (String stage : stages) {
      assertThat(progress)
          .filteredOn(line -> line.startsWith(stage))
          .last()
          .asString()
          .matches(stage + ": (\\d+)/\\1");
    }
    List<HistoryEntry> history = StateShift.get(spark).history(checkpoint.toString());
    assertThat(history.get(history.size() - 1).path()).startsWith(path);
    StateAssertions.assertEveryKeyInItsSparkPartition(spark, checkpoint, result.batchId(), to);

    run.writeEvents(1, ROWS_PER_FILE, DEVICES);
    run.runAvailable(query, checkpoint, sink, store.withPartitions(from));
    assertThat(run.sinkRows(sink, query)).containsExactlyElementsOf(uninterrupted(query));
  }

  /** The same query over the same files, on a fresh checkpoint, in one uninterrupted run. */
  private List<String> uninterrupted(StatefulQueries query) {
    Path dir = tmp.resolve("oracle");
    StreamRun run = new StreamRun(spark, dir.resolve("input"));
    run.writeEvents(0, ROWS_PER_FILE, DEVICES);
    run.runAvailable(
        query, dir.resolve("checkpoint"), dir.resolve("sink"), StateStores.HDFS.withPartitions(5));
    run.writeEvents(1, ROWS_PER_FILE, DEVICES);
    run.runAvailable(
        query, dir.resolve("checkpoint"), dir.resolve("sink"), StateStores.HDFS.withPartitions(5));
    List<String> rows = run.sinkRows(dir.resolve("sink"), query);
    assertThat(rows).isNotEmpty();
    return rows;
  }
}
