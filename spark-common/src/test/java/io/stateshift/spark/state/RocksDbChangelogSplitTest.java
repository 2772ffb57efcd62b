package io.stateshift.spark.state;

import static org.assertj.core.api.Assertions.assertThat;

import io.stateshift.RepartitionResult;
import io.stateshift.StateShift;
import io.stateshift.testing.SparkTestSession;
import io.stateshift.testing.StateStores;
import io.stateshift.testing.StatefulQueries;
import io.stateshift.testing.StreamRun;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.stream.Stream;
import org.apache.spark.sql.SparkSession;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * RocksDB with changelog checkpointing keeps most versions as changelog files only. The file
 * exchange reads such a version from its changelogs (and the newest older snapshot, when there is
 * one) without loading it into RocksDB; the restarted query must write exactly what an
 * uninterrupted run writes. First a checkpoint whose versions are all changelogs, then, after that
 * repartition wrote a snapshot, batches logged as changelogs on top of it.
 */
class RocksDbChangelogSplitTest {
  private static final StatefulQueries QUERY = StatefulQueries.WINDOWED_COUNT;
  private static final int FILES = 5;

  private final SparkSession spark = SparkTestSession.get();

  @TempDir Path tmp;

  @Test
  void changelogOnlyThenSnapshotPlusChangelogsWriteTheUninterruptedOutput() throws IOException {
    StreamRun run = new StreamRun(spark, tmp.resolve("input"));
    Path checkpoint = tmp.resolve("checkpoint");
    Path sink = tmp.resolve("sink");
    for (int i = 0; i < 2; i++) {
      run.writeEvents(i, 400, 50);
    }
    run.runAvailable(QUERY, checkpoint, sink, StateStores.ROCKSDB_CHANGELOG.withPartitions(4));
    assertThat(names(checkpoint.resolve("state/0/0")))
        .as("every version a changelog only")
        .contains("1.changelog", "2.changelog")
        .noneMatch(n -> n.endsWith(".zip"));

    long before = RocksDbChangelogSplit.SPLITS.sum();
    RepartitionResult first = repartition(checkpoint, 6);
    assertThat(RocksDbChangelogSplit.SPLITS.sum() - before).isEqualTo(4);

    for (int i = 2; i < 4; i++) {
      run.writeEvents(i, 400, 50);
    }
    run.runAvailable(QUERY, checkpoint, sink, StateStores.ROCKSDB_CHANGELOG.withPartitions(4));
    long snapshot = first.batchId() + 1;
    assertThat(names(checkpoint.resolve("state/0/5")))
        .as("the repartition's snapshot, then changelogs")
        .contains(snapshot + ".zip", (snapshot + 1) + ".changelog", (snapshot + 2) + ".changelog");

    before = RocksDbChangelogSplit.SPLITS.sum();
    repartition(checkpoint, 3);
    assertThat(RocksDbChangelogSplit.SPLITS.sum() - before).isEqualTo(6);

    run.writeEvents(4, 400, 50);
    run.writeFlush(FILES);
    run.runAvailable(QUERY, checkpoint, sink, StateStores.ROCKSDB_CHANGELOG.withPartitions(4));
    assertThat(run.sinkRows(sink, QUERY)).containsExactlyElementsOf(oracle());
  }

  private RepartitionResult repartition(Path checkpoint, int partitions) {
    RepartitionResult result =
        StateShift.get(spark)
            .repartitionState(checkpoint.toString())
            .toPartitions(partitions)
            .execute();
    assertThat(result.stores())
        .allSatisfy(s -> assertThat(s.rowsWritten()).isEqualTo(s.rowsRead()).isPositive());
    return result;
  }

  private List<String> oracle() {
    Path dir = tmp.resolve("oracle");
    StreamRun run = new StreamRun(spark, dir.resolve("input"));
    for (int i = 0; i < FILES; i++) {
      run.writeEvents(i, 400, 50);
    }
    run.writeFlush(FILES);
    run.runAvailable(
        QUERY, dir.resolve("checkpoint"), dir.resolve("sink"), StateStores.HDFS.withPartitions(2));
    List<String> rows = run.sinkRows(dir.resolve("sink"), QUERY);
    assertThat(rows).isNotEmpty();
    return rows;
  }

  private static List<String> names(Path dir) throws IOException {
    try (Stream<Path> files = Files.list(dir)) {
      return files.map(p -> p.getFileName().toString()).toList();
    }
  }
}
