package io.stateshift;

import static org.apache.spark.sql.functions.col;
import static org.apache.spark.sql.functions.from_json;
import static org.assertj.core.api.Assertions.assertThat;

import io.stateshift.testing.ChildJvm;
import io.stateshift.testing.KafkaBroker;
import io.stateshift.testing.LineApis;
import io.stateshift.testing.SessionConf;
import io.stateshift.testing.SparkTestSession;
import io.stateshift.testing.StateStores;
import io.stateshift.testing.StatefulQueries;
import io.stateshift.testing.StreamRun;
import io.stateshift.testing.TestSets;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeoutException;
import java.util.stream.Stream;
import org.apache.spark.api.java.function.VoidFunction2;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.streaming.DataStreamWriter;
import org.apache.spark.sql.streaming.StreamingQuery;
import org.apache.spark.sql.streaming.StreamingQueryProgress;
import org.apache.spark.sql.streaming.Trigger;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.EnumSource;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * Sinks and sources that keep their own record of batch ids, through a repartition. A repartition
 * is recorded as a batch of its own (N+1) in offsets/ and commits/ that no sink and no source ever
 * runs; each sink below must continue after it and its output, read back in batch as users read it,
 * must equal the uninterrupted run of the same query over the same input. (The file sinks, whose
 * log needs every batch id, have tests of their own.)
 *
 * <p>Every case runs one checkpoint through both ways of repartitioning: the command ({@code FROM
 * -> UP}) between the first and second run, then the on-demand path at the third start ({@code UP
 * -> DOWN}), with input arriving between the runs. The broker is real (KRaft, in this JVM), started
 * once for the class.
 */
@Tag("kafka") // a Kafka broker for every case: the lines whose Kafka connector is served
class SinkBatchIdsTest {
  static final int FROM = 4;
  static final int UP = 6;
  static final int DOWN = 3;

  /** Three runs of two event files each, then two flush files that close every window. */
  static final int EVENT_FILES = 6;

  static final int ROWS_PER_FILE = 150;
  static final int DEVICES = 20;
  static final String TXN_APP_ID = "windowed-count";
  static final String TABLE = "sink_batch_ids_delta";
  static final long LOCK_LEASE_MS = 1500;
  static final String SINK_EVOLUTION = "spark.sql.streaming.queryEvolution.enableSinkEvolution";
  static final String SINK_NAME = "counts_delta";

  /** The sinks checked here, with the query each one runs. */
  enum Sink {
    DELTA_TABLE,
    DELTA_PATH,
    FOREACH_BATCH_DELTA,
    KAFKA,
    MEMORY,
    CONSOLE,
    NOOP,
    /** Delta by path under sink evolution: a named sink, commit log v3 with sink metadata. */
    DELTA_PATH_NAMED;

    StatefulQueries query() {
      // Spark's memory sink recovers from a checkpoint in complete mode only: an append-mode
      // memory query cannot be restarted at all, repartitioned or not.
      return this == MEMORY ? StatefulQueries.GROUPED_COUNT : StatefulQueries.WINDOWED_COUNT;
    }
  }

  @TempDir static Path shared;
  private static Path template;
  private static List<String> oracle;
  private static KafkaBroker kafka;

  private final SparkSession spark = SparkTestSession.get();
  @TempDir Path tmp;

  /** What the console sink printed, over all runs of the case. */
  private final StringBuilder printed = new StringBuilder();

  private String topic;

  /** The broker, the input files and the uninterrupted run's output, once for the class. */
  @BeforeAll
  static void startBrokerAndBuildOracle() throws Exception {
    kafka = KafkaBroker.start();
    SparkSession spark = SparkTestSession.get();
    Path dir = shared.resolve("oracle");
    StreamRun run = new StreamRun(spark, dir.resolve("input"));
    for (int i = 0; i < EVENT_FILES; i++) {
      run.writeEvents(i, ROWS_PER_FILE, DEVICES);
    }
    run.writeFlush(EVENT_FILES);
    run.runAvailable(
        StatefulQueries.WINDOWED_COUNT,
        dir.resolve("checkpoint"),
        dir.resolve("sink"),
        StateStores.HDFS.withPartitions(5));
    oracle = json(spark.read().parquet(dir.resolve("sink").toString()).drop("batch"));
    template = dir.resolve("input");
    assertThat(oracle).hasSizeGreaterThan(50);
  }

  @AfterAll
  static void stopBroker() {
    if (kafka != null) {
      kafka.close();
    }
  }

  /**
   * The sinks that keep exactly-once across a restart (Delta by path, named and through
   * foreachBatch, Kafka) by default; every sink under -Pextended.
   */
  static Stream<Arguments> sinks() {
    List<Sink> inDefault =
        List.of(Sink.DELTA_PATH, Sink.DELTA_PATH_NAMED, Sink.FOREACH_BATCH_DELTA, Sink.KAFKA);
    List<Arguments> all = Arrays.stream(Sink.values()).map(s -> Arguments.of(s)).toList();
    return TestSets.subset(all, i -> inDefault.contains(Sink.values()[i]));
  }

  @ParameterizedTest(name = "{0}: command {1} -> {2}, on-demand -> {3}")
  @MethodSource("sinks")
  void sinkContinuesPastRepartitionBatchesWithTheUninterruptedOutput(Sink sink) throws Exception {
    prepare(sink);
    addInput(0, 1);
    List<StreamingQueryProgress> first = runQuery(sink, StateStores.HDFS.withPartitions(FROM));
    List<String> memoryFirst = sink == Sink.MEMORY ? memoryTable() : List.of();

    RepartitionResult command = StateAssertions.repartition(spark, checkpoint(), FROM, UP);
    assertThat(command.batchId()).isEqualTo(last(first) + 1);
    addInput(2, 3);
    // the session still asks for FROM: the checkpoint's count wins
    List<StreamingQueryProgress> second = runQuery(sink, StateStores.HDFS.withPartitions(FROM));

    Map<String, String> onDemand = new HashMap<>(StateStores.HDFS.withPartitions(FROM));
    onDemand.put(StateShiftExtensions.STATE_PARTITIONS, Integer.toString(DOWN));
    addInput(4, 5, EVENT_FILES, EVENT_FILES + 1);
    List<StreamingQueryProgress> third = runQuery(sink, onDemand);

    assertThat(StreamRun.stateInstances(first)).containsOnly((long) FROM);
    assertThat(StreamRun.stateInstances(second)).containsOnly((long) UP);
    assertThat(StreamRun.stateInstances(third)).containsOnly((long) DOWN);
    // Two batch ids no sink saw: the command's, and the on-demand repartition's.
    assertThat(second.get(0).batchId()).isEqualTo(command.batchId() + 1);
    long onDemandBatch = last(second) + 1;
    assertThat(third.get(0).durationMs()).containsKey(StateShiftExtensions.PROGRESS_KEY);
    assertThat(third.get(0).batchId()).isEqualTo(onDemandBatch + 1);
    List<Long> skipped = List.of(command.batchId(), onDemandBatch);
    assertThat(StateShift.get(spark).verify(checkpoint().toString()).problems()).isEmpty();

    List<StreamingQueryProgress> all = new ArrayList<>(first);
    all.addAll(second);
    all.addAll(third);
    switch (sink) {
      case DELTA_TABLE -> {
        assertThat(json(spark.table(TABLE))).containsExactlyElementsOf(oracle);
        assertThat(deltaEpochIds("`" + TABLE + "`"))
            .isNotEmpty()
            .doesNotContainAnyElementsOf(skipped);
      }
      case DELTA_PATH, DELTA_PATH_NAMED -> {
        assertThat(json(spark.read().format("delta").load(target())))
            .containsExactlyElementsOf(oracle);
        assertThat(deltaEpochIds("delta.`" + target() + "`"))
            .isNotEmpty()
            .doesNotContainAnyElementsOf(skipped);
        if (sink == Sink.DELTA_PATH_NAMED) {
          // The repartition batches carry the sink metadata of the batch before them, and the
          // restarted query read it from there: every commit names the one active sink.
          for (long batch : skipped) {
            assertThat(Files.readString(checkpoint().resolve("commits/" + batch)))
                .startsWith("v3\n")
                .contains("\"" + SINK_NAME + "\"")
                .contains("\"isActive\":true");
          }
          assertThat(Files.readString(checkpoint().resolve("commits/" + last(third))))
              .startsWith("v3\n")
              .contains("\"" + SINK_NAME + "\"");
        }
      }
      case FOREACH_BATCH_DELTA -> {
        assertThat(json(spark.read().format("delta").load(target())))
            .containsExactlyElementsOf(oracle);
        // Delta skips a write whose txnVersion is not above the last one of its txnAppId: batch
        // ids with gaps still only grow, so no batch after a repartition is skipped as a replay.
        List<Long> versions = txnVersions(target());
        assertThat(versions)
            .isNotEmpty()
            .isSorted()
            .doesNotHaveDuplicates()
            .doesNotContainAnyElementsOf(skipped)
            .contains(last(third));
        assertThat(versions).containsAll(batchIds(second)).containsAll(batchIds(third));
      }
      case KAFKA -> assertThat(kafkaValues(topic)).containsExactlyElementsOf(oracle);
      case MEMORY -> {
        // The memory sink lives in the driver and starts empty at each run; in complete mode the
        // restarted query rewrites the whole table, which must equal the uninterrupted run's.
        List<String> expected = memoryOracle();
        assertThat(memoryFirst).isNotEmpty();
        assertThat(memoryTable()).containsExactlyElementsOf(expected);
        assertThat(numOutputRows(third)).isPositive();
      }
      case CONSOLE -> {
        // Console output cannot be read back from anywhere but stdout: what the runs printed,
        // captured, holds every row of the uninterrupted run exactly once, and no skipped batch.
        assertThat(printedRows()).containsExactlyElementsOf(oracle);
        assertThat(printedBatchIds())
            .doesNotContainAnyElementsOf(skipped)
            .containsAll(batchIds(all));
      }
      case NOOP ->
          // Nothing to read back; the row count the sink reports over all runs is the oracle's.
          assertThat(numOutputRows(all)).isEqualTo(oracle.size());
    }
  }

  /**
   * A repartition SIGKILLed half-way through its switch (in a JVM of its own), then finished by the
   * next start of the query, as a user restarts it: the sink continues with the oracle's output.
   */
  @ParameterizedTest(name = "{0}: killed at published, finished by the restart")
  @EnumSource(
      value = Sink.class,
      names = {"DELTA_PATH", "KAFKA"})
  void killedMidRepartitionThenFinished(Sink sink) throws Exception {
    prepare(sink);
    addInput(0, 1);
    List<StreamingQueryProgress> first = runQuery(sink, StateStores.HDFS.withPartitions(FROM));
    Path log = tmp.resolve("child.log");
    int exit =
        ChildJvm.runCli(
            log,
            List.of(
                "-Dspark.stateshift.test.failpoint=published",
                "-Dspark.stateshift.lock.leaseMs=" + LOCK_LEASE_MS),
            "repartition",
            "--checkpoint",
            checkpoint().toString(),
            "--partitions",
            Integer.toString(UP),
            "--assume-stopped");
    assertThat(exit).as("exit code; log: %s", Files.readString(log)).isEqualTo(137);
    Thread.sleep(LOCK_LEASE_MS + 100); // the dead holder's lock expires

    addInput(2, 3, 4, 5, EVENT_FILES, EVENT_FILES + 1);
    List<StreamingQueryProgress> second = runQuery(sink, StateStores.HDFS.withPartitions(FROM));
    assertThat(StreamRun.stateInstances(second)).containsOnly((long) UP);
    assertThat(second.get(0).batchId()).isEqualTo(last(first) + 2);
    assertThat(checkpoint().resolve("_stateshift/journal")).doesNotExist();
    assertThat(StateShift.get(spark).verify(checkpoint().toString()).problems()).isEmpty();
    List<String> output =
        sink == Sink.KAFKA ? kafkaValues(topic) : json(spark.read().format("delta").load(target()));
    assertThat(output).containsExactlyElementsOf(oracle);
  }

  /**
   * Kafka as the source: its offsets are Kafka offsets, its only log entry (sources/0/0, the
   * initial offsets) is written at batch 0, and the repartition batch repeats the offsets of the
   * batch before it. The restarted query reads on from there, none skipped and none twice.
   */
  @Test
  void kafkaSourceContinuesPastRepartitionBatches() throws Exception {
    String source = "events-" + System.nanoTime();
    // One partition: records come back in the order the files were written, as the file source
    // reads them; across partitions a batch could take the flush events before older events and
    // drop those as late, in any run.
    kafka.createTopic(source, 1);
    Path sink = tmp.resolve("sink");
    produce(source, 0, 1);
    List<StreamingQueryProgress> first =
        runFromKafka(source, checkpoint(), sink, StateStores.HDFS.withPartitions(FROM));
    RepartitionResult command = StateAssertions.repartition(spark, checkpoint(), FROM, UP);
    produce(source, 2, 3);
    List<StreamingQueryProgress> second =
        runFromKafka(source, checkpoint(), sink, StateStores.HDFS.withPartitions(FROM));
    Map<String, String> onDemand = new HashMap<>(StateStores.HDFS.withPartitions(FROM));
    onDemand.put(StateShiftExtensions.STATE_PARTITIONS, Integer.toString(DOWN));
    produce(source, 4, 5);
    produce(source, EVENT_FILES);
    produce(source, EVENT_FILES + 1);
    List<StreamingQueryProgress> third = runFromKafka(source, checkpoint(), sink, onDemand);

    assertThat(second.get(0).batchId()).isEqualTo(command.batchId() + 1);
    assertThat(third.get(0).batchId()).isEqualTo(last(second) + 2);
    assertThat(StreamRun.stateInstances(third)).containsOnly((long) DOWN);
    long read = 0;
    for (List<StreamingQueryProgress> run : List.of(first, second, third)) {
      read += run.stream().mapToLong(StreamingQueryProgress::numInputRows).sum();
    }
    assertThat(read)
        .as("records read over all runs: each once")
        .isEqualTo((long) EVENT_FILES * ROWS_PER_FILE + 2);

    // The uninterrupted run of the same query over the same topic.
    Path oracleSink = tmp.resolve("oracle-sink");
    runFromKafka(
        source, tmp.resolve("oracle-checkpoint"), oracleSink, StateStores.HDFS.withPartitions(5));
    List<String> expected = json(spark.read().parquet(oracleSink.toString()).drop("batch"));
    assertThat(expected).hasSizeGreaterThan(50);
    assertThat(json(spark.read().parquet(sink.toString()).drop("batch")))
        .containsExactlyElementsOf(expected);
  }

  // ---------------------------------------------------------------------------------------------

  private void prepare(Sink sink) throws Exception {
    if (sink == Sink.KAFKA) {
      topic = "windowed-counts-" + System.nanoTime();
      kafka.createTopic(topic, 2);
    }
    if (sink == Sink.DELTA_TABLE) {
      spark.sql("DROP TABLE IF EXISTS " + TABLE);
      spark.sql(
          "CREATE TABLE "
              + TABLE
              + " (window_start TIMESTAMP, window_end TIMESTAMP,"
              + " device STRING, count BIGINT) USING delta LOCATION '"
              + target()
              + "'");
    }
  }

  /** Runs the sink's query over the input present now, one file per batch, to its end. */
  private List<StreamingQueryProgress> runQuery(Sink sink, Map<String, String> conf)
      throws Exception {
    Runnable restoreSettings = SessionConf.set(spark, conf);
    if (sink == Sink.DELTA_PATH_NAMED) {
      spark.conf().set(SINK_EVOLUTION, "true");
    }
    try {
      Dataset<Row> events =
          spark
              .readStream()
              .schema(StreamRun.EVENT_SCHEMA)
              .option("maxFilesPerTrigger", 1)
              .json(input().toString());
      Dataset<Row> out = sink.query().apply(events);
      StreamingQuery query;
      if (sink == Sink.CONSOLE) {
        // The console sink prints with Scala's println from the query's own thread, which
        // inherits the Console output in force where the query starts.
        ByteArrayOutputStream bytes = new ByteArrayOutputStream();
        PrintStream capture = new PrintStream(bytes, true, StandardCharsets.UTF_8);
        query =
            scala.Console$.MODULE$.withOut(
                capture, (scala.Function0<StreamingQuery>) () -> startUnchecked(sink, out));
        query.awaitTermination();
        printed.append(bytes.toString(StandardCharsets.UTF_8));
      } else {
        query = start(sink, out);
        query.awaitTermination();
      }
      StreamRun.awaitQueryEvents(spark);
      return List.of(query.recentProgress());
    } finally {
      restoreSettings.run();
      spark.conf().unset(SINK_EVOLUTION);
    }
  }

  private StreamingQuery startUnchecked(Sink sink, Dataset<Row> out) {
    try {
      return start(sink, out);
    } catch (TimeoutException e) {
      throw new IllegalStateException(e);
    }
  }

  private StreamingQuery start(Sink sink, Dataset<Row> out) throws TimeoutException {
    String target = target();
    DataStreamWriter<Row> writer =
        (sink == Sink.KAFKA || sink == Sink.CONSOLE
                ? out.selectExpr("to_json(struct(*)) AS value")
                : out)
            .writeStream()
            .outputMode(sink.query().outputMode())
            .option("checkpointLocation", checkpoint().toString())
            .trigger(Trigger.AvailableNow());
    return switch (sink) {
      case DELTA_TABLE -> writer.format("delta").toTable(TABLE);
      case DELTA_PATH -> writer.format("delta").start(target);
      case FOREACH_BATCH_DELTA ->
          writer
              .foreachBatch(
                  (VoidFunction2<Dataset<Row>, Long>)
                      (batch, batchId) ->
                          batch
                              .write()
                              .format("delta")
                              .mode("append")
                              .option("txnAppId", TXN_APP_ID)
                              .option("txnVersion", batchId)
                              .save(target))
              .start();
      case KAFKA ->
          writer
              .format("kafka")
              .option("kafka.bootstrap.servers", kafka.bootstrapServers())
              .option("topic", topic)
              .start();
      case MEMORY -> writer.format("memory").queryName(memoryName()).start();
      case CONSOLE ->
          writer.format("console").option("numRows", 100_000).option("truncate", false).start();
      case NOOP -> writer.format("noop").start();
      // name() is Spark's sink evolution API, not yet public in the Java/Scala writer
      case DELTA_PATH_NAMED -> LineApis.named(writer, SINK_NAME).format("delta").start(target);
    };
  }

  /** The windowed count over the events of a Kafka topic, to a per-batch parquet sink. */
  private List<StreamingQueryProgress> runFromKafka(
      String source, Path checkpoint, Path sink, Map<String, String> conf) throws Exception {
    Runnable restoreSettings = SessionConf.set(spark, conf);
    try {
      Dataset<Row> events =
          spark
              .readStream()
              .format("kafka")
              .option("kafka.bootstrap.servers", kafka.bootstrapServers())
              .option("subscribe", source)
              .option("startingOffsets", "earliest")
              .option("maxOffsetsPerTrigger", ROWS_PER_FILE)
              .load()
              .select(from_json(col("value").cast("string"), StreamRun.EVENT_SCHEMA).as("e"))
              .select("e.*");
      String sinkPath = sink.toString();
      StreamingQuery query =
          StatefulQueries.WINDOWED_COUNT
              .apply(events)
              .writeStream()
              .outputMode("append")
              .option("checkpointLocation", checkpoint.toString())
              .trigger(Trigger.AvailableNow())
              .foreachBatch(
                  (VoidFunction2<Dataset<Row>, Long>)
                      (batch, batchId) ->
                          batch.write().mode("overwrite").parquet(sinkPath + "/batch=" + batchId))
              .start();
      query.awaitTermination();
      StreamRun.awaitQueryEvents(spark);
      return List.of(query.recentProgress());
    } finally {
      restoreSettings.run();
    }
  }

  /** Writes the events of input files to the topic, one producer call per file, in order. */
  private void produce(String source, int... files) {
    for (int file : files) {
      spark
          .read()
          .schema(StreamRun.EVENT_SCHEMA)
          .json(template.resolve(fileName(file)).toString())
          .selectExpr("to_json(struct(*)) AS value")
          .write()
          .format("kafka")
          .option("kafka.bootstrap.servers", kafka.bootstrapServers())
          .option("topic", source)
          .save();
    }
  }

  private List<String> kafkaValues(String from) {
    return spark
        .read()
        .format("kafka")
        .option("kafka.bootstrap.servers", kafka.bootstrapServers())
        .option("subscribe", from)
        .option("startingOffsets", "earliest")
        .option("endingOffsets", "latest")
        .load()
        .selectExpr("CAST(value AS STRING)")
        .collectAsList()
        .stream()
        .map(r -> r.getString(0))
        .sorted()
        .toList();
  }

  /** The epoch (batch) id of every streaming write in a Delta table's history. */
  private List<Long> deltaEpochIds(String table) {
    return spark
        .sql("DESCRIBE HISTORY " + table)
        .where("operation = 'STREAMING UPDATE'")
        .selectExpr("CAST(operationParameters['epochId'] AS BIGINT)")
        .collectAsList()
        .stream()
        .map(r -> r.getLong(0))
        .sorted()
        .toList();
  }

  /** The txnVersions of {@link #TXN_APP_ID} recorded in a Delta table's log, in commit order. */
  private List<Long> txnVersions(String table) {
    return spark
        .read()
        .json(table + "/_delta_log/*.json")
        .where("txn IS NOT NULL")
        .selectExpr(
            "txn.appId AS appId",
            "txn.version AS version",
            "CAST(regexp_extract(input_file_name(), '([0-9]+)\\\\.json$', 1) AS BIGINT) AS commit")
        .where("appId = '" + TXN_APP_ID + "'")
        .orderBy("commit")
        .collectAsList()
        .stream()
        .map(r -> r.getLong(1))
        .toList();
  }

  private String memoryName() {
    return "sink_batch_ids_memory";
  }

  private List<String> memoryTable() {
    return spark.table(memoryName()).collectAsList().stream().map(Row::toString).sorted().toList();
  }

  /** The memory sink's table after an uninterrupted complete-mode run over all input. */
  private List<String> memoryOracle() throws Exception {
    Path saved = tmp;
    tmp = tmp.resolve("oracle");
    try {
      addInput(0, 1, 2, 3, 4, 5, EVENT_FILES, EVENT_FILES + 1);
      runQuery(Sink.MEMORY, StateStores.HDFS.withPartitions(5));
      return memoryTable();
    } finally {
      tmp = saved;
    }
  }

  /** The JSON rows the console sink printed (one table cell per row, padded, not truncated). */
  private List<String> printedRows() {
    return printed
        .toString()
        .lines()
        .map(String::trim)
        .filter(l -> l.startsWith("|{") && l.endsWith("|"))
        .map(l -> l.substring(1, l.length() - 1).trim())
        .sorted()
        .toList();
  }

  private List<Long> printedBatchIds() {
    return printed
        .toString()
        .lines()
        .filter(l -> l.startsWith("Batch: "))
        .map(l -> Long.parseLong(l.substring("Batch: ".length()).trim()))
        .toList();
  }

  private static long numOutputRows(List<StreamingQueryProgress> progress) {
    return progress.stream().mapToLong(p -> Math.max(0, p.sink().numOutputRows())).sum();
  }

  private static List<Long> batchIds(List<StreamingQueryProgress> progress) {
    return progress.stream().map(StreamingQueryProgress::batchId).toList();
  }

  private static long last(List<StreamingQueryProgress> progress) {
    assertThat(progress).isNotEmpty();
    return progress.get(progress.size() - 1).batchId();
  }

  /** A dataset's windowed-count rows as sorted JSON text, the form every sink is compared in. */
  private static List<String> json(Dataset<Row> rows) {
    return rows
        .selectExpr("to_json(struct(window_start, window_end, device, count))")
        .collectAsList()
        .stream()
        .map(r -> r.getString(0))
        .sorted()
        .toList();
  }

  private Path checkpoint() {
    return tmp.resolve("checkpoint");
  }

  private String target() {
    return tmp.resolve("sink").toString();
  }

  private Path input() {
    return tmp.resolve("input");
  }

  private void addInput(int... files) throws IOException {
    Files.createDirectories(input());
    for (int file : files) {
      // with their times: the file source takes files in the order of their modification times,
      // and files copied in the same millisecond would come in any order (late events dropped)
      Files.copy(
          template.resolve(fileName(file)),
          input().resolve(fileName(file)),
          StandardCopyOption.COPY_ATTRIBUTES);
    }
  }

  private static String fileName(int index) {
    return String.format("events-%04d.json", index);
  }
}
