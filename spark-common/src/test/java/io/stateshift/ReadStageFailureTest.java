package io.stateshift;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.stateshift.StateShiftException.Reason;
import io.stateshift.config.StateShiftConf;
import io.stateshift.protocol.FailPoints;
import io.stateshift.testing.CheckpointDigest;
import io.stateshift.testing.CheckpointTrees;
import io.stateshift.testing.FaultyFileSystem;
import io.stateshift.testing.SparkFeatures;
import io.stateshift.testing.SparkTestSession;
import io.stateshift.testing.StateStores;
import io.stateshift.testing.StatefulQueries;
import io.stateshift.testing.StreamRun;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import org.apache.spark.sql.SparkSession;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * An I/O error in the read stage of each exchange (the HDFS-backed file exchange and the RocksDB
 * SST exchange), while other read tasks are still staging their files: the repartition fails saying
 * the checkpoint was not changed, and that is true: the list of files and folders (Hadoop's {@code
 * .crc} side files and {@code _stateshift} included) and every file's digest are the same as
 * before. Spark returns from a failed job at the first failed task while its other tasks go on
 * writing, so the attempt's files may only be removed once those have ended.
 */
class ReadStageFailureTest {
  private static final int FROM = 4;
  private static final int TO = 6;

  private final SparkSession spark = SparkTestSession.get();

  @TempDir Path tmp;

  /**
   * The stores whose read tasks stage files in the exchange folder: RocksDB's only where the
   * RocksDB file exchanges run (elsewhere its records go through Spark's shuffle).
   */
  static java.util.stream.Stream<StateStores> stores() {
    return SparkFeatures.rocksDbFileExchanges(SparkTestSession.get())
        ? java.util.stream.Stream.of(StateStores.HDFS, StateStores.ROCKSDB)
        : java.util.stream.Stream.of(StateStores.HDFS);
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("stores")
  void ioErrorWhileReadingLeavesEveryFileAsItWas(StateStores store) throws Exception {
    FaultyFileSystem.register(spark.sparkContext().hadoopConfiguration());
    // the read tasks stage their files where the I/O error is injected
    spark
        .conf()
        .set(StateShiftConf.EXCHANGE_DIR.key(), FaultyFileSystem.uriOf(tmp.resolve("exchange")));
    // as on a cluster: staged files, not runs kept in this JVM's memory
    spark.conf().set(StateShiftConf.LOCAL_EXCHANGE_HEAP_SHARE.key(), "0");
    try {
      readStageFails(store);
    } finally {
      spark.conf().unset(StateShiftConf.EXCHANGE_DIR.key());
      spark.conf().unset(StateShiftConf.LOCAL_EXCHANGE_HEAP_SHARE.key());
    }
  }

  private void readStageFails(StateStores store) throws Exception {
    StreamRun run = new StreamRun(spark, tmp.resolve("input"));
    run.writeEvents(0, 200, 40);
    run.writeEvents(1, 200, 40);
    Path original = tmp.resolve("original");
    run.runAvailable(
        StatefulQueries.GROUPED_COUNT, original, tmp.resolve("sink"), store.withPartitions(FROM));

    // One repartition of a copy, recorded: the read stage's operations are the first of the
    // step after the journal's save (the write stage starts when every read task has ended).
    Path recordedCopy = CheckpointTrees.copy(original, tmp.resolve("recorded"));
    FaultyFileSystem.reset(true);
    FailPoints.observe(FaultyFileSystem::step);
    try {
      StateShift.get(spark)
          .repartitionState(FaultyFileSystem.uriOf(recordedCopy))
          .toPartitions(TO)
          .assumeStopped()
          .execute();
    } finally {
      FailPoints.observe(null);
    }
    List<FaultyFileSystem.Operation> staging =
        FaultyFileSystem.recorded().stream()
            .filter(op -> op.step().equals("journal-staging"))
            .toList();
    int readOps = 0;
    while (readOps < staging.size() && staging.get(readOps).path().contains("/exchange")) {
      readOps++;
    }
    assertThat(readOps).as("read-stage operations in %s", staging).isGreaterThan(2);

    Path checkpoint = CheckpointTrees.copy(original, tmp.resolve("checkpoint"));
    Map<String, String> before = CheckpointDigest.of(checkpoint);
    assertThat(before.keySet())
        .as("the digest lists the side files")
        .anyMatch(name -> name.endsWith(".crc"));
    int failing = readOps / 2; // a read task fails while the other one is still staging
    FaultyFileSystem.reset(false);
    FaultyFileSystem.failAt("journal-staging", failing);
    FailPoints.observe(FaultyFileSystem::step);
    try {
      assertThatThrownBy(
              () ->
                  StateShift.get(spark)
                      .repartitionState(FaultyFileSystem.uriOf(checkpoint))
                      .toPartitions(TO)
                      .assumeStopped()
                      .execute())
          .isInstanceOfSatisfying(
              StateShiftException.class, e -> assertThat(e.reason()).isEqualTo(Reason.FAILED))
          .hasMessageContaining("the checkpoint was not changed")
          .hasStackTraceContaining("injected I/O error");
    } finally {
      FailPoints.observe(null);
    }
    assertThat(FaultyFileSystem.failed()).as("the chosen operation ran and failed").isNotNull();
    assertThat(FaultyFileSystem.failed().path()).contains("/exchange");
    Thread.sleep(500); // a task still writing after the error would show up here
    assertThat(CheckpointDigest.of(checkpoint))
        .as("every file and folder is as it was (failed %s)", FaultyFileSystem.failed())
        .isEqualTo(before);
  }
}
