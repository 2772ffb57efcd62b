package io.stateshift;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.stateshift.testing.CheckpointDigest;
import io.stateshift.testing.SparkTestSession;
import io.stateshift.testing.StateStores;
import io.stateshift.testing.StatefulQueries;
import io.stateshift.testing.StreamRun;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.streaming.StreamingQueryListener;
import org.apache.spark.sql.streaming.StreamingQueryProgress;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * On-demand repartitioning enabled by conf alone: the same query code, restarted on the same
 * checkpoint after {@code spark.sql.streaming.stateStore.partitions} changed.
 */
class OnDemandRepartitionTest {
  private static final String KEY = StateShiftExtensions.STATE_PARTITIONS;

  @TempDir Path tmp;

  /** A brand-new session of the shared application: its own conf, listeners and extensions. */
  private SparkSession freshSession() {
    return SparkTestSession.get().newSession();
  }

  @Test
  void newCheckpointStartsWithTheConfiguredCountAndARestartRepartitions() throws Exception {
    SparkSession spark = freshSession();
    StreamRun run = new StreamRun(spark, tmp.resolve("input"));
    for (int i = 0; i < 4; i++) {
      run.writeEvents(i, 300, 40);
    }
    Path checkpoint = tmp.resolve("checkpoint");
    Path sink = tmp.resolve("sink");
    Map<String, String> conf = new HashMap<>(StateStores.ROCKSDB_CHANGELOG.withPartitions(7));
    conf.put(KEY, "4");
    List<StreamingQueryProgress> first =
        run.runAvailable(StatefulQueries.WINDOWED_COUNT, checkpoint, sink, conf);
    // the setting wins over spark.sql.shuffle.partitions
    assertThat(StreamRun.stateInstances(first)).containsOnly(4L);

    for (int i = 4; i < 7; i++) {
      run.writeEvents(i, 300, 40);
    }
    run.writeFlush(7);
    List<StreamingQueryProgress> seenByListener = new ArrayList<>();
    StreamingQueryListener listener = new CollectingListener(seenByListener);
    spark.streams().addListener(listener);
    conf.put(KEY, "8");
    List<StreamingQueryProgress> second;
    try {
      second = run.runAvailable(StatefulQueries.WINDOWED_COUNT, checkpoint, sink, conf);
      spark.sparkContext().listenerBus().waitUntilEmpty();
    } finally {
      spark.streams().removeListener(listener);
    }

    assertThat(StreamRun.stateInstances(second)).containsOnly(8L);
    assertThat(second.get(0).durationMs()).containsKey(StateShiftExtensions.PROGRESS_KEY);
    assertThat(second.get(0).durationMs().get(StateShiftExtensions.PROGRESS_KEY)).isPositive();
    assertThat(second.subList(1, second.size()))
        .allSatisfy(
            p -> assertThat(p.durationMs()).doesNotContainKey(StateShiftExtensions.PROGRESS_KEY));
    assertThat(seenByListener).isNotEmpty();
    assertThat(seenByListener.get(0).durationMs()).containsKey(StateShiftExtensions.PROGRESS_KEY);
    assertThat(seenByListener.get(0).batchId()).isEqualTo(second.get(0).batchId());
    StateAssertions.assertMetadataReports(spark, checkpoint, 8);

    // The oracle: the same query over the same files without interruption.
    StreamRun oracle = new StreamRun(spark, tmp.resolve("input"));
    Path oracleSink = tmp.resolve("oracle-sink");
    Map<String, String> plain = StateStores.HDFS.withPartitions(5);
    oracle.runAvailable(
        StatefulQueries.WINDOWED_COUNT, tmp.resolve("oracle-checkpoint"), oracleSink, plain);
    assertThat(run.sinkRows(sink, StatefulQueries.WINDOWED_COUNT))
        .isNotEmpty()
        .containsExactlyElementsOf(oracle.sinkRows(oracleSink, StatefulQueries.WINDOWED_COUNT));

    // Same count again: nothing happens, nothing is reported.
    run.writeEvents(9, 50, 40);
    List<StreamingQueryProgress> third =
        run.runAvailable(StatefulQueries.WINDOWED_COUNT, checkpoint, sink, conf);
    assertThat(third)
        .allSatisfy(
            p -> assertThat(p.durationMs()).doesNotContainKey(StateShiftExtensions.PROGRESS_KEY));
  }

  /**
   * A batch that was planned (offsets written) but failed in the sink on its first attempt: the
   * restart with a new count must finish that batch as planned, exactly once, then repartition. The
   * sink writes to Delta idempotently (txnAppId, txnVersion = batch id): exactly-once.
   */
  @Test
  @Tag("cover")
  void aPlannedButUncommittedBatchCompletesFirstThenTheStateMoves() throws Exception {
    SparkSession spark = freshSession();
    StreamRun run = new StreamRun(spark, tmp.resolve("input"));
    for (int i = 0; i < 3; i++) {
      run.writeEvents(i, 300, 40);
    }
    Path checkpoint = tmp.resolve("checkpoint");
    String table = tmp.resolve("delta-sink").toString();
    Path failOnce = tmp.resolve("fail-batch-2-once");
    java.nio.file.Files.createFile(failOnce);
    Map<String, String> conf = new HashMap<>(StateStores.ROCKSDB.withPartitions(4));
    conf.forEach((k, v) -> spark.conf().set(k, v));
    assertThatThrownBy(() -> runToDelta(spark, checkpoint, table, failOnce))
        .hasStackTraceContaining("injected failure in the sink for batch 2");
    assertThat(checkpoint.resolve("offsets/2")).exists();
    assertThat(checkpoint.resolve("commits/2")).doesNotExist();

    for (int i = 3; i < 6; i++) {
      run.writeEvents(i, 300, 40);
    }
    run.writeFlush(6);
    spark.conf().set(KEY, "7");
    List<StreamingQueryProgress> progress = runToDelta(spark, checkpoint, table, failOnce);
    spark.sparkContext().listenerBus().waitUntilEmpty();

    assertThat(progress.get(0).batchId()).isEqualTo(2); // the pending batch, as planned
    assertThat(progress.get(0).stateOperators()[0].numStateStoreInstances()).isEqualTo(4);
    assertThat(progress.get(0).durationMs()).doesNotContainKey(StateShiftExtensions.PROGRESS_KEY);
    assertThat(progress.get(1).batchId()).isEqualTo(4); // batch 3 is the repartition
    assertThat(progress.get(1).durationMs()).containsKey(StateShiftExtensions.PROGRESS_KEY);
    assertThat(progress.subList(1, progress.size()))
        .allSatisfy(p -> assertThat(p.stateOperators()[0].numStateStoreInstances()).isEqualTo(7));

    StreamRun oracle = new StreamRun(spark, tmp.resolve("input"));
    Path oracleSink = tmp.resolve("oracle-sink");
    oracle.runAvailable(
        StatefulQueries.WINDOWED_COUNT,
        tmp.resolve("oracle-checkpoint"),
        oracleSink,
        StateStores.HDFS.withPartitions(5));
    List<String> delta =
        spark.read().format("delta").load(table).collectAsList().stream()
            .map(org.apache.spark.sql.Row::toString)
            .sorted()
            .toList();
    assertThat(delta)
        .isNotEmpty()
        .doesNotHaveDuplicates()
        .containsExactlyElementsOf(oracle.sinkRows(oracleSink, StatefulQueries.WINDOWED_COUNT));
  }

  private List<StreamingQueryProgress> runToDelta(
      SparkSession spark, Path checkpoint, String table, Path failOnce) throws Exception {
    var events =
        spark
            .readStream()
            .schema(StreamRun.EVENT_SCHEMA)
            .option("maxFilesPerTrigger", 1)
            .json(tmp.resolve("input").toString());
    String marker = failOnce.toString();
    var query =
        StatefulQueries.WINDOWED_COUNT
            .apply(events)
            .writeStream()
            .outputMode("append")
            .option("checkpointLocation", checkpoint.toString())
            .trigger(org.apache.spark.sql.streaming.Trigger.AvailableNow())
            .foreachBatch(
                (org.apache.spark.api.java.function.VoidFunction2<
                        org.apache.spark.sql.Dataset<org.apache.spark.sql.Row>, Long>)
                    (batch, id) -> {
                      if (id == 2
                          && java.nio.file.Files.deleteIfExists(java.nio.file.Path.of(marker))) {
                        throw new IllegalStateException("injected failure in the sink for batch 2");
                      }
                      batch
                          .write()
                          .format("delta")
                          .mode("append")
                          .option("txnAppId", "windowed-count")
                          .option("txnVersion", id)
                          .save(table);
                    })
            .start();
    query.awaitTermination();
    return List.of(query.recentProgress());
  }

  @Test
  void aChangedQueryIsRefusedBeforeAnyStateMoves() throws Exception {
    SparkSession spark = freshSession();
    StreamRun run = new StreamRun(spark, tmp.resolve("input"));
    run.writeEvents(0, 100, 10);
    Path checkpoint = tmp.resolve("checkpoint");
    Map<String, String> conf = new HashMap<>(StateStores.HDFS.withPartitions(3));
    run.runAvailable(StatefulQueries.GROUPED_COUNT, checkpoint, tmp.resolve("sink"), conf);
    var before = CheckpointDigest.of(checkpoint);
    spark.conf().set(KEY, "5");
    var events =
        spark
            .readStream()
            .schema(StreamRun.EVENT_SCHEMA)
            .option("maxFilesPerTrigger", 1)
            .json(tmp.resolve("input").toString());
    // Grouped by another key: the saved state no longer fits this query.
    assertThatThrownBy(
            () ->
                events
                    .groupBy("device", "eventId")
                    .count()
                    .writeStream()
                    .format("noop")
                    .outputMode("complete")
                    .option("checkpointLocation", checkpoint.toString())
                    .trigger(org.apache.spark.sql.streaming.Trigger.AvailableNow())
                    .start()
                    .awaitTermination())
        .hasStackTraceContaining("differ from those in checkpoint");
    assertThat(CheckpointDigest.of(checkpoint)).isEqualTo(before);
  }

  @Test
  void anInvalidSettingFailsTheQueryAndLeavesTheCheckpointUnchanged() {
    SparkSession spark = freshSession();
    StreamRun run = new StreamRun(spark, tmp.resolve("input"));
    run.writeEvents(0, 100, 10);
    Path checkpoint = tmp.resolve("checkpoint");
    Map<String, String> conf = new HashMap<>(StateStores.HDFS.withPartitions(3));
    run.runAvailable(StatefulQueries.GROUPED_COUNT, checkpoint, tmp.resolve("sink"), conf);
    var before = CheckpointDigest.of(checkpoint);
    conf.put(KEY, "zero");
    assertThatThrownBy(
            () ->
                run.runAvailable(
                    StatefulQueries.GROUPED_COUNT, checkpoint, tmp.resolve("sink"), conf))
        .hasStackTraceContaining(KEY + "=zero is not a partition count");
    assertThat(CheckpointDigest.of(checkpoint)).isEqualTo(before);
  }

  @Test
  void anUnsupportedOperatorFailsTheQueryWithTheReason() throws Exception {
    SparkSession spark = freshSession();
    StreamRun run = new StreamRun(spark, tmp.resolve("input"));
    run.writeEvents(0, 100, 10);
    Path checkpoint = tmp.resolve("checkpoint");
    var events =
        spark
            .readStream()
            .schema(StreamRun.EVENT_SCHEMA)
            .option("maxFilesPerTrigger", 1)
            .json(tmp.resolve("input").toString());
    spark.conf().set("spark.sql.shuffle.partitions", "3");
    runLimit(events, checkpoint);
    var before = CheckpointDigest.of(checkpoint);
    spark.conf().set(KEY, "6");
    assertThatThrownBy(() -> runLimit(events, checkpoint))
        .hasStackTraceContaining("cannot be repartitioned");
    assertThat(CheckpointDigest.of(checkpoint)).isEqualTo(before);
  }

  private static void runLimit(
      org.apache.spark.sql.Dataset<org.apache.spark.sql.Row> events, Path checkpoint)
      throws Exception {
    events
        .limit(5)
        .writeStream()
        .format("noop")
        .outputMode("append")
        .option("checkpointLocation", checkpoint.toString())
        .trigger(org.apache.spark.sql.streaming.Trigger.AvailableNow())
        .start()
        .awaitTermination();
  }

  /** A user's listener, added after the session started: it must see the complete progress. */
  private static final class CollectingListener extends StreamingQueryListener {
    private final List<StreamingQueryProgress> seen;

    CollectingListener(List<StreamingQueryProgress> seen) {
      this.seen = seen;
    }

    @Override
    public void onQueryStarted(QueryStartedEvent event) {}

    @Override
    public void onQueryProgress(QueryProgressEvent event) {
      seen.add(event.progress());
    }

    @Override
    public void onQueryIdle(QueryIdleEvent event) {}

    @Override
    public void onQueryTerminated(QueryTerminatedEvent event) {}
  }
}
