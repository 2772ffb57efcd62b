package io.stateshift;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.stateshift.checkpoint.CheckpointFiles;
import io.stateshift.estimate.CostModel;
import io.stateshift.protocol.CheckpointLock;
import io.stateshift.testing.CheckpointDigest;
import io.stateshift.testing.SparkTestSession;
import io.stateshift.testing.StateStores;
import io.stateshift.testing.StatefulQueries;
import io.stateshift.testing.StreamRun;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.hdfs.MiniDFSCluster;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.streaming.StateOperatorProgress;
import org.apache.spark.sql.streaming.StreamingQueryProgress;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * The oracle on a real HDFS: a MiniDFSCluster (NameNode and DataNode in this JVM) holds the
 * checkpoint; lock, journal, staging and the switch all go through the HDFS client, and a second
 * repartition is refused while the lock is held, leaving the checkpoint unchanged.
 */
class HdfsCheckpointTest {
  private static MiniDFSCluster cluster;
  private final SparkSession spark = SparkTestSession.get();

  @TempDir Path tmp;

  @BeforeAll
  static void startHdfs(@TempDir Path base) throws Exception {
    Configuration conf = new Configuration();
    conf.set(MiniDFSCluster.HDFS_MINIDFS_BASEDIR, base.resolve("hdfs").toString());
    cluster = new MiniDFSCluster.Builder(conf).numDataNodes(1).build();
    cluster.waitActive();
  }

  @AfterAll
  static void stopHdfs() {
    if (cluster != null) {
      cluster.shutdown();
    }
  }

  @ParameterizedTest(name = "{0} state, checkpoint on HDFS, 4 -> 6 -> 3")
  @EnumSource(
      value = StateStores.class,
      names = {"HDFS", "ROCKSDB", "ROCKSDB_CHANGELOG"})
  void repartitionedQueryOnHdfsWritesTheUninterruptedOutput(StateStores store) throws Exception {
    String checkpoint = cluster.getURI() + "/checkpoints/" + store.name().toLowerCase();
    StreamRun run = new StreamRun(spark, tmp.resolve("input"));
    Path sink = tmp.resolve("sink");
    run.writeEvents(0, 300, 30);
    run.writeEvents(1, 300, 30);
    run.runAvailable(StatefulQueries.WINDOWED_COUNT, checkpoint, sink, store.withPartitions(4));

    assertASecondRepartitionIsRefusedWhileTheLockIsHeld(checkpoint);

    RepartitionResult up =
        StateShift.get(spark).repartitionState(checkpoint).toPartitions(6).execute();
    assertThat(up.plan().checkpoint()).startsWith("hdfs://");
    // the cost model prices the files as this storage's
    assertThat(up.plan().estimate().orElseThrow().job().storage())
        .isEqualTo(CostModel.Storage.HDFS);
    StateAssertions.assertEveryKeyInItsSparkPartition(spark, checkpoint, up.batchId(), 6);
    run.writeEvents(2, 300, 30);
    run.runAvailable(StatefulQueries.WINDOWED_COUNT, checkpoint, sink, store.withPartitions(4));

    RepartitionResult down =
        StateShift.get(spark).repartitionState(checkpoint).toPartitions(3).execute();
    assertThat(StateShift.get(spark).verify(checkpoint).problems()).isEmpty();
    StateAssertions.assertMetadataReports(spark, checkpoint, 3);
    FileSystem hdfs = cluster.getFileSystem();
    assertThat(hdfs.exists(new org.apache.hadoop.fs.Path(checkpoint + "/state/0/5"))).isFalse();
    assertThat(hdfs.exists(new org.apache.hadoop.fs.Path(checkpoint + "/_stateshift/lock")))
        .isFalse();
    run.writeEvents(3, 300, 30);
    run.writeFlush(4);
    List<StreamingQueryProgress> last =
        run.runAvailable(StatefulQueries.WINDOWED_COUNT, checkpoint, sink, store.withPartitions(4));
    for (StreamingQueryProgress p : last) {
      for (StateOperatorProgress op : p.stateOperators()) {
        assertThat(op.numStateStoreInstances()).isEqualTo(3);
      }
    }
    assertThat(down.batchId()).isGreaterThan(up.batchId());

    StreamRun oracle = new StreamRun(spark, tmp.resolve("input"));
    Path oracleSink = tmp.resolve("oracle-sink");
    oracle.runAvailable(
        StatefulQueries.WINDOWED_COUNT,
        tmp.resolve("oracle-checkpoint"),
        oracleSink,
        StateStores.HDFS.withPartitions(2));
    assertThat(run.sinkRows(sink, StatefulQueries.WINDOWED_COUNT))
        .isNotEmpty()
        .containsExactlyElementsOf(oracle.sinkRows(oracleSink, StatefulQueries.WINDOWED_COUNT));
  }

  /** Exclusivity on HDFS: the lock file is created only if absent, so a second attempt stops. */
  private void assertASecondRepartitionIsRefusedWhileTheLockIsHeld(String checkpoint)
      throws java.io.IOException {
    FileSystem hdfs = cluster.getFileSystem();
    org.apache.hadoop.fs.Path root = new org.apache.hadoop.fs.Path(checkpoint);
    CheckpointFiles files =
        CheckpointFiles.at(checkpoint, spark.sparkContext().hadoopConfiguration());
    try (CheckpointLock held = CheckpointLock.acquire(files, "repartition to 8", 600_000)) {
      Map<String, String> before = CheckpointDigest.of(hdfs, root);
      assertThatThrownBy(
              () -> StateShift.get(spark).repartitionState(checkpoint).toPartitions(6).execute())
          .isInstanceOf(StateShiftException.class)
          .hasMessageContaining("is locked by")
          .hasMessageContaining("(repartition to 8)");
      assertThat(CheckpointDigest.of(hdfs, root)).isEqualTo(before);
    }
  }
}
