package io.stateshift.spark.state;

import static org.assertj.core.api.Assertions.assertThat;

import io.stateshift.checkpoint.Checkpoint;
import io.stateshift.checkpoint.CheckpointFiles;
import io.stateshift.checkpoint.StateLayout;
import io.stateshift.spark.line.StateCalls;
import io.stateshift.testing.SparkTestSession;
import io.stateshift.testing.StateStores;
import io.stateshift.testing.StatefulQueries;
import io.stateshift.testing.StreamRun;
import java.nio.file.Path;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.execution.streaming.state.ReadStateStore;
import org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider;
import org.apache.spark.sql.execution.streaming.state.StateStoreProvider;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * An old RocksDB partition loaded to be read once does not rewrite itself in the background. The
 * oracle is Spark's own load of the same version, which starts merging its level-0 files. Tag
 * level0-versions: the versions Spark 4.0's query writes here hold no level-0 file to keep.
 */
@Tag("level0-versions")
class StoppedCompactionsTest {
  private static final String LEVEL0_FILES = "rocksdb.num-files-at-level0";

  @TempDir Path tmp;

  @Test
  void loadedOldStoreKeepsItsFilesWhereSparksOwnLoadCompactsThem() throws Exception {
    SparkSession spark = SparkTestSession.get();
    spark.streams(); // the state store coordinator
    StreamRun run = new StreamRun(spark, tmp.resolve("input"));
    for (int batch = 0; batch < 4; batch++) { // one flushed level-0 file per batch: the trigger
      run.writeEvents(batch, 20_000, 50);
    }
    Path checkpoint = tmp.resolve("checkpoint");
    run.runAvailable(
        StatefulQueries.DEDUP,
        checkpoint,
        tmp.resolve("sink"),
        StateStores.ROCKSDB.withPartitions(2));
    StateLayout layout =
        StateLayout.read(
            spark,
            Checkpoint.load(
                CheckpointFiles.at(checkpoint.toString(), spark.sessionState().newHadoopConf())),
            true);
    long version = layout.lastCommitted() + 1;

    long sparksRows;
    StateStoreProvider sparks = open(layout);
    try {
      ReadStateStore store = sparks.getReadStore(version, scala.Option.empty());
      try {
        org.rocksdb.RocksDB db = nativeDb(store);
        // Spark 4.0's load may have merged them already; ours below shows the version has 4 or more
        // RocksDB's one shared compaction thread may be busy with other stores of this JVM
        long deadline = System.currentTimeMillis() + 90_000;
        while (level0Files(db) >= 4 && System.currentTimeMillis() < deadline) {
          Thread.sleep(20);
        }
        assertThat(level0Files(db)).as("Spark's own load compacts them").isLessThan(4);
        sparksRows = rows(store);
      } finally {
        StateCalls.release(
            store); // else closing the provider waits two minutes and hides the failure
      }
    } finally {
      sparks.close();
    }

    StateStoreProvider ours = open(layout);
    try {
      ReadStateStore store =
          io.stateshift.spark.state.StateStores.loadToRead(ours, version, scala.Option.empty());
      try {
        org.rocksdb.RocksDB db = nativeDb(store);
        long atLoad = level0Files(db);
        Thread.sleep(1_000);
        assertThat(level0Files(db)).as("no compaction after loadToRead").isEqualTo(atLoad);
        assertThat(atLoad).as("level-0 files of the last version").isGreaterThanOrEqualTo(4);
        assertThat(rows(store)).as("every key still read").isEqualTo(sparksRows).isPositive();
      } finally {
        StateCalls.release(store);
      }
    } finally {
      ours.close();
    }
  }

  /** Partition 0 of the checkpoint's one store. */
  private static StateStoreProvider open(StateLayout layout) {
    CheckpointFiles files = layout.checkpoint().files();
    return io.stateshift.spark.state.StateStores.open(
        files.path("state").toString(),
        layout.stores().get(0),
        0,
        io.stateshift.spark.state.StateStores.storeConf(layout.storeConf()),
        files.conf());
  }

  private static long rows(ReadStateStore store) {
    var it = store.iterator(io.stateshift.spark.state.StateStores.DEFAULT_COLUMN_FAMILY);
    long rows = 0;
    while (it.hasNext()) {
      it.next();
      rows++;
    }
    it.close();
    return rows;
  }

  private static org.rocksdb.RocksDB nativeDb(ReadStateStore store) {
    return RocksDbInternals.nativeDb(
        ((RocksDBStateStoreProvider.RocksDBStateStore) store).dbInstance());
  }

  private static long level0Files(org.rocksdb.RocksDB db) throws Exception {
    return Long.parseLong(db.getProperty(LEVEL0_FILES));
  }
}
