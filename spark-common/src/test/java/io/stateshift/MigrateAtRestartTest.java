package io.stateshift;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.stateshift.spark.OnDemandRepartition;
import io.stateshift.spark.line.LineFeatures;
import io.stateshift.testing.CheckpointDigest;
import io.stateshift.testing.SessionConf;
import io.stateshift.testing.SparkFeatures;
import io.stateshift.testing.SparkTestSession;
import io.stateshift.testing.StateStores;
import io.stateshift.testing.StatefulQueries;
import io.stateshift.testing.StreamRun;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;
import org.apache.logging.log4j.LogManager;
import org.apache.logging.log4j.core.LogEvent;
import org.apache.logging.log4j.core.Logger;
import org.apache.logging.log4j.core.appender.AbstractAppender;
import org.apache.logging.log4j.core.config.Property;
import org.apache.spark.api.java.function.VoidFunction2;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.streaming.StreamingQuery;
import org.apache.spark.sql.streaming.StreamingQueryProgress;
import org.apache.spark.sql.streaming.Trigger;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * Migration at restart, by conf alone: a query restarted with StateShiftExtensions, another state
 * store provider in its session and {@code spark.stateshift.migrate.enabled=true} has its state
 * migrated before its first batch, and writes exactly what the same query writes when run without
 * interruption over the same input. Without the setting, the mismatch is logged with the command
 * and the setting that fix it, and the query keeps the checkpoint's provider, as Spark does.
 */
class MigrateAtRestartTest {
  static final String PROVIDER = "spark.sql.streaming.stateStore.providerClass";
  static final String MIGRATE = "spark.stateshift.migrate.enabled";
  static final String FORMAT = "spark.sql.streaming.stateStore.checkpointFormatVersion";
  private static final StatefulQueries QUERY = StatefulQueries.WINDOWED_COUNT;

  @TempDir Path tmp;

  /** A brand-new session of the shared application: its own conf, listeners and extensions. */
  private static SparkSession freshSession() {
    return SparkTestSession.get().newSession();
  }

  /** A query run once on {@code store} with 3 partitions, over {@code files} files of events. */
  private record Started(SparkSession spark, StreamRun run, Path checkpoint, Path sink) {}

  private Started startedOn(StateStores store, int files) {
    SparkSession spark = freshSession();
    StreamRun run = new StreamRun(spark, tmp.resolve("input"));
    Path checkpoint = tmp.resolve("checkpoint");
    Path sink = tmp.resolve("sink");
    for (int i = 0; i < files; i++) {
      run.writeEvents(i, 200, 40);
    }
    run.runAvailable(QUERY, checkpoint, sink, store.withPartitions(3));
    return new Started(spark, run, checkpoint, sink);
  }

  /**
   * HDFS-backed to RocksDB (changelog checkpointing on after the move) at one restart, then back to
   * HDFS-backed together with a partition change at the next: each restart writes its new state
   * versions with the session's provider, and the output is the uninterrupted run's.
   */
  @Test
  void hdfsToRocksDbAndBackAtRestartMatchTheUninterruptedRun() {
    Started started = startedOn(StateStores.HDFS, 2);
    SparkSession spark = started.spark();
    StreamRun run = started.run();
    Path checkpoint = started.checkpoint();
    Path sink = started.sink();
    long before = lastCommitted(spark, checkpoint);

    run.writeEvents(2, 200, 40);
    Map<String, String> toRocksDb = new HashMap<>(StateStores.ROCKSDB_CHANGELOG.withPartitions(3));
    toRocksDb.put(MIGRATE, "true");
    List<StreamingQueryProgress> first = run.runAvailable(QUERY, checkpoint, sink, toRocksDb);
    assertThat(StreamRun.stateInstances(first)).containsOnly(3L);
    assertThat(first.get(0).durationMs()).containsKey(StateShiftExtensions.PROGRESS_KEY);
    RepartitionResult migrated =
        StateShiftExtensions.lastRepartition(first.get(0).id()).orElseThrow();
    assertThat(migrated.plan().changesProvider()).isTrue();
    assertThat(migrated.plan().targetStateStoreProvider()).isEqualTo(MigrateOracleTest.ROCKSDB);
    assertThat(migrated.batchId()).isEqualTo(before + 1);
    MigrateOracleTest.assertNewVersionsWrittenBy(
        checkpoint, migrated.batchId() + 1, MigrateOracleTest.ROCKSDB);
    CheckpointReport onRocksDb = StateShift.get(spark).inspect(checkpoint.toString());
    assertThat(onRocksDb.stateStoreProvider()).isEqualTo(MigrateOracleTest.ROCKSDB);
    assertThat(onRocksDb.partitions()).isEqualTo(3);

    run.writeEvents(3, 200, 40);
    run.writeFlush(4);
    Map<String, String> toHdfs = new HashMap<>(StateStores.HDFS.withPartitions(3));
    toHdfs.put(MIGRATE, "true");
    toHdfs.put(StateShiftExtensions.STATE_PARTITIONS, "5");
    List<StreamingQueryProgress> second = run.runAvailable(QUERY, checkpoint, sink, toHdfs);
    assertThat(StreamRun.stateInstances(second)).containsOnly(5L);
    assertThat(second.get(0).durationMs()).containsKey(StateShiftExtensions.PROGRESS_KEY);
    long back = lastCommitted(spark, checkpoint);
    CheckpointReport onHdfs = StateShift.get(spark).inspect(checkpoint.toString());
    assertThat(onHdfs.stateStoreProvider()).isEqualTo(MigrateOracleTest.HDFS);
    assertThat(onHdfs.partitions()).isEqualTo(5);
    StateAssertions.assertMetadataReports(spark, checkpoint, 5);
    VerificationReport verified = StateShift.get(spark).verify(checkpoint.toString());
    assertThat(verified.ok()).as(verified.toString()).isTrue();
    assertThat(StateShift.get(spark).history(checkpoint.toString()))
        .filteredOn(h -> h.path() != null && h.path().startsWith("migrate "))
        .hasSize(2);
    assertThat(back).isGreaterThan(migrated.batchId());

    assertThat(run.sinkRows(sink, QUERY)).isNotEmpty().containsExactlyElementsOf(oracle(spark));
  }

  /**
   * A batch that was planned but failed in the sink before the restart completes first, as planned,
   * on the old provider and count; then the state moves to the other provider and count in one
   * pass, and the same run continues on them (the old provider's instances that batch loaded are
   * closed first). The sink overwrites a batch's folder: exactly once.
   */
  @ParameterizedTest(name = "{0} -> {1}, 4 -> {2} partitions")
  @CsvSource({"HDFS, ROCKSDB, 6", "ROCKSDB_CHANGELOG, HDFS, 3"})
  void aPlannedButUncommittedBatchCompletesOnTheOldProviderFirst(
      StateStores from, StateStores to, int partitions) throws Exception {
    SparkSession spark = freshSession();
    StreamRun run = new StreamRun(spark, tmp.resolve("input"));
    for (int i = 0; i < 3; i++) {
      run.writeEvents(i, 200, 40);
    }
    Path checkpoint = tmp.resolve("checkpoint");
    Path sink = tmp.resolve("sink");
    Path failOnce = tmp.resolve("fail-batch-2-once");
    Files.createFile(failOnce);
    Map<String, String> conf = new HashMap<>(from.withPartitions(4));
    assertThatThrownBy(() -> runFailingOnce(spark, checkpoint, sink, failOnce, conf))
        .hasStackTraceContaining("injected failure in the sink for batch 2");
    assertThat(checkpoint.resolve("offsets/2")).exists();
    assertThat(checkpoint.resolve("commits/2")).doesNotExist();

    for (int i = 3; i < 5; i++) {
      run.writeEvents(i, 200, 40);
    }
    run.writeFlush(5);
    Map<String, String> restart = new HashMap<>(to.withPartitions(4));
    restart.put(MIGRATE, "true");
    restart.put(StateShiftExtensions.STATE_PARTITIONS, Integer.toString(partitions));
    List<StreamingQueryProgress> progress =
        runFailingOnce(spark, checkpoint, sink, failOnce, restart);

    assertThat(progress.get(0).batchId()).isEqualTo(2); // the pending batch, as planned
    assertThat(progress.get(0).stateOperators()[0].numStateStoreInstances()).isEqualTo(4);
    assertThat(progress.get(1).batchId()).isEqualTo(4); // batch 3 is the migration
    assertThat(progress.get(1).durationMs()).containsKey(StateShiftExtensions.PROGRESS_KEY);
    assertThat(progress.subList(1, progress.size()))
        .allSatisfy(
            p -> assertThat(p.stateOperators()[0].numStateStoreInstances()).isEqualTo(partitions));
    String target = to == StateStores.HDFS ? MigrateOracleTest.HDFS : MigrateOracleTest.ROCKSDB;
    assertThat(readText(checkpoint.resolve("offsets/3")))
        .contains("\"" + PROVIDER + "\":\"" + target + "\"");
    MigrateOracleTest.assertNewVersionsWrittenBy(checkpoint, 4, target);
    VerificationReport verified = StateShift.get(spark).verify(checkpoint.toString());
    assertThat(verified.ok()).as(verified.toString()).isTrue();

    assertThat(run.sinkRows(sink, QUERY)).isNotEmpty().containsExactlyElementsOf(oracle(spark));
  }

  /**
   * Without the setting, a restart with another provider logs one warning that names the command
   * and the setting, writes nothing of its own, and runs on the checkpoint's provider.
   */
  @Test
  void withoutTheSettingTheMismatchIsReportedAndTheQueryKeepsItsProvider() {
    Started started = startedOn(StateStores.HDFS, 2);
    SparkSession spark = started.spark();
    StreamRun run = started.run();
    Path checkpoint = started.checkpoint();
    Path sink = started.sink();
    long before = lastCommitted(spark, checkpoint);

    run.writeEvents(2, 200, 40);
    run.writeEvents(3, 200, 40);
    run.writeFlush(4);
    List<String> warnings = new CopyOnWriteArrayList<>();
    List<StreamingQueryProgress> progress;
    try (Capture capture = new Capture(warnings)) {
      progress = run.runAvailable(QUERY, checkpoint, sink, StateStores.ROCKSDB.withPartitions(3));
    }
    assertThat(warnings)
        .filteredOn(w -> w.contains("stateshift migrate"))
        .singleElement()
        .satisfies(
            w ->
                assertThat(w)
                    .contains("stateshift migrate --checkpoint ")
                    .contains(checkpoint.getFileName().toString())
                    .contains("--provider rocksdb")
                    .contains(MIGRATE + "=true")
                    .contains("HDFS-backed state store")
                    .contains("Spark keeps the checkpoint's provider"));
    assertThat(progress)
        .isNotEmpty()
        .allSatisfy(
            p -> assertThat(p.durationMs()).doesNotContainKey(StateShiftExtensions.PROGRESS_KEY));
    MigrateOracleTest.assertNewVersionsWrittenBy(checkpoint, before + 1, MigrateOracleTest.HDFS);
    assertThat(StateShift.get(spark).inspect(checkpoint.toString()).stateStoreProvider())
        .isEqualTo(MigrateOracleTest.HDFS);
    assertThat(StateShift.get(spark).history(checkpoint.toString())).isEmpty();
    assertThat(run.sinkRows(sink, QUERY)).isNotEmpty().containsExactlyElementsOf(oracle(spark));
  }

  /**
   * RocksDB's state checkpoint format at restart: a session that sets format v2 on a v1 checkpoint
   * (with the setting) has the state converted before its first batch; the next restart back to v1
   * with a partition change converts it back in one pass; the output is the uninterrupted run's.
   */
  @Test
  @Tag("checkpoint-v2")
  void stateCheckpointFormatConvertedAtRestartBothWays() {
    Started started = startedOn(StateStores.ROCKSDB_CHANGELOG, 2);
    SparkSession spark = started.spark();
    StreamRun run = started.run();
    Path checkpoint = started.checkpoint();
    Path sink = started.sink();

    run.writeEvents(2, 200, 40);
    Map<String, String> toV2 = new HashMap<>(StateStores.ROCKSDB_CHANGELOG.withPartitions(3));
    toV2.put(FORMAT, "2");
    toV2.put(MIGRATE, "true");
    List<StreamingQueryProgress> first = run.runAvailable(QUERY, checkpoint, sink, toV2);
    assertThat(first.get(0).durationMs()).containsKey(StateShiftExtensions.PROGRESS_KEY);
    RepartitionResult converted =
        StateShiftExtensions.lastRepartition(first.get(0).id()).orElseThrow();
    assertThat(converted.plan().changesFormat()).isTrue();
    assertThat(converted.plan().changesProvider()).isFalse();
    assertThat(converted.plan().targetCheckpointFormatVersion()).isEqualTo(2);
    assertThat(StreamRun.stateInstances(first)).containsOnly(3L);
    assertThat(StateShift.get(spark).inspect(checkpoint.toString()).stateCheckpointFormat())
        .isEqualTo(2);

    run.writeEvents(3, 200, 40);
    run.writeFlush(4);
    Map<String, String> toV1 = new HashMap<>(StateStores.ROCKSDB_CHANGELOG.withPartitions(3));
    toV1.put(FORMAT, "1");
    toV1.put(MIGRATE, "true");
    toV1.put(StateShiftExtensions.STATE_PARTITIONS, "5");
    List<StreamingQueryProgress> second = run.runAvailable(QUERY, checkpoint, sink, toV1);
    assertThat(StreamRun.stateInstances(second)).containsOnly(5L);
    CheckpointReport back = StateShift.get(spark).inspect(checkpoint.toString());
    assertThat(back.stateCheckpointFormat()).isEqualTo(1);
    assertThat(back.partitions()).isEqualTo(5);
    VerificationReport verified = StateShift.get(spark).verify(checkpoint.toString());
    assertThat(verified.ok()).as(verified.toString()).isTrue();

    assertThat(run.sinkRows(sink, QUERY)).isNotEmpty().containsExactlyElementsOf(oracle(spark));
  }

  /**
   * Without the setting, a session whose format differs from the checkpoint's is refused at the
   * start with the command and the setting that fix it (Spark would fail its first batch), and the
   * checkpoint is not changed.
   */
  @Test
  void aFormatMismatchWithoutTheSettingRefusesTheStartWithTheFix() {
    Started started = startedOn(StateStores.ROCKSDB_CHANGELOG, 1);
    SparkSession spark = started.spark();
    StreamRun run = started.run();
    Path checkpoint = started.checkpoint();
    Path sink = started.sink();
    Map<String, String> before = CheckpointDigest.of(checkpoint);

    run.writeEvents(1, 200, 40);
    Map<String, String> v2 = new HashMap<>(StateStores.ROCKSDB_CHANGELOG.withPartitions(3));
    v2.put(FORMAT, "2");
    assertThatThrownBy(() -> run.runAvailable(QUERY, checkpoint, sink, v2))
        .hasStackTraceContaining("state checkpoint format v1")
        .hasStackTraceContaining("--format-version 2")
        .hasStackTraceContaining(MIGRATE + "=true")
        .hasStackTraceContaining("The checkpoint was not changed");
    StreamRun.awaitQueryEvents(spark);
    assertThat(CheckpointDigest.of(checkpoint)).isEqualTo(before);
  }

  /**
   * A migration Spark could not run (transformWithState to the HDFS-backed store) refuses the
   * query's start with the reason, before anything is written.
   */
  @Test
  void anImpossibleMigrationRefusesTheStartAndLeavesTheCheckpointUnchanged() {
    if (!SparkFeatures.transformWithState(freshSession())) {
      // Spark 3.5: no transformWithState; the migration it cannot make is to format v2
      Started started = startedOn(StateStores.ROCKSDB, 2);
      Map<String, String> unchanged = CheckpointDigest.of(started.checkpoint());
      started.run().writeEvents(2, 200, 40);
      Map<String, String> toV2 = new HashMap<>(StateStores.ROCKSDB.withPartitions(3));
      toV2.put(FORMAT, "2");
      toV2.put(MIGRATE, "true");
      assertThatThrownBy(
              () -> started.run().runAvailable(QUERY, started.checkpoint(), started.sink(), toV2))
          .hasStackTraceContaining("has no format v2");
      StreamRun.awaitQueryEvents(started.spark());
      assertThat(CheckpointDigest.of(started.checkpoint())).isEqualTo(unchanged);
      return;
    }
    SparkSession spark = freshSession();
    io.stateshift.testing.OperatorRun tws =
        new io.stateshift.testing.OperatorRun(spark, tmp.resolve("input"));
    Path checkpoint = tmp.resolve("checkpoint");
    tws.writeRotatingEvents(0, 120);
    Map<String, String> conf = new HashMap<>(StateStores.ROCKSDB.withPartitions(3));
    conf.put("spark.sql.streaming.noDataMicroBatches.enabled", "false");
    tws.runAvailable(
        io.stateshift.testing.OperatorQueries.TWS_PROCESSING_TIME,
        checkpoint,
        tmp.resolve("sink"),
        conf);
    Map<String, String> before = CheckpointDigest.of(checkpoint);
    tws.writeRotatingEvents(1, 120);
    Map<String, String> toHdfs = new HashMap<>(conf);
    toHdfs.putAll(StateStores.HDFS.conf());
    toHdfs.put(MIGRATE, "true");
    assertThatThrownBy(
            () ->
                tws.runAvailable(
                    io.stateshift.testing.OperatorQueries.TWS_PROCESSING_TIME,
                    checkpoint,
                    tmp.resolve("sink"),
                    toHdfs))
        .hasStackTraceContaining("(transformWithState)")
        .hasStackTraceContaining(
            LineFeatures.TRANSFORM_WITH_STATE
                ? "RocksDB only"
                : "cannot move transformWithState state");
    StreamRun.awaitQueryEvents(spark);
    assertThat(CheckpointDigest.of(checkpoint)).isEqualTo(before);
  }

  // ---- helpers ----

  /** The same query over the same files, on a fresh checkpoint, in one uninterrupted run. */
  private List<String> oracle(SparkSession spark) {
    StreamRun oracle = new StreamRun(spark, tmp.resolve("input"));
    Path oracleSink = tmp.resolve("oracle-sink");
    oracle.runAvailable(
        QUERY, tmp.resolve("oracle-checkpoint"), oracleSink, StateStores.HDFS.withPartitions(2));
    return oracle.sinkRows(oracleSink, QUERY);
  }

  private static long lastCommitted(SparkSession spark, Path checkpoint) {
    return StateShift.get(spark).inspect(checkpoint.toString()).lastCommittedBatch();
  }

  /**
   * The query of {@link StreamRun}, with a sink that fails batch 2 once while the marker exists.
   */
  private List<StreamingQueryProgress> runFailingOnce(
      SparkSession spark, Path checkpoint, Path sink, Path failOnce, Map<String, String> conf)
      throws Exception {
    Runnable restoreSettings = SessionConf.set(spark, conf);
    try {
      Dataset<Row> events =
          spark
              .readStream()
              .schema(StreamRun.EVENT_SCHEMA)
              .option("maxFilesPerTrigger", 1)
              .json(tmp.resolve("input").toString());
      String marker = failOnce.toString();
      String sinkPath = sink.toString();
      StreamingQuery query =
          QUERY
              .apply(events)
              .writeStream()
              .outputMode(QUERY.outputMode())
              .option("checkpointLocation", checkpoint.toString())
              .trigger(Trigger.AvailableNow())
              .foreachBatch(
                  (VoidFunction2<Dataset<Row>, Long>)
                      (batch, id) -> {
                        if (id == 2 && Files.deleteIfExists(Path.of(marker))) {
                          throw new IllegalStateException(
                              "injected failure in the sink for batch 2");
                        }
                        batch.write().mode("overwrite").parquet(sinkPath + "/batch=" + id);
                      })
              .start();
      try {
        query.awaitTermination();
      } finally {
        StreamRun.awaitQueryEvents(spark);
      }
      return List.of(query.recentProgress());
    } finally {
      restoreSettings.run();
    }
  }

  private static String readText(Path file) {
    try {
      return Files.readString(file);
    } catch (java.io.IOException e) {
      throw new java.io.UncheckedIOException(e);
    }
  }

  /** Collects the warnings the on-demand listener logs while open. */
  private static final class Capture extends AbstractAppender implements AutoCloseable {
    private final Logger logger = (Logger) LogManager.getLogger(OnDemandRepartition.class);

    Capture(List<String> into) {
      super("stateshift-test-capture", null, null, true, Property.EMPTY_ARRAY);
      this.into = into;
      start();
      logger.addAppender(this);
    }

    private final List<String> into;

    @Override
    public void append(LogEvent event) {
      if (event.getLevel().isMoreSpecificThan(org.apache.logging.log4j.Level.WARN)) {
        into.add(event.getMessage().getFormattedMessage());
      }
    }

    @Override
    public void close() {
      logger.removeAppender(this);
      stop();
    }
  }
}
