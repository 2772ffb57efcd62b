package io.stateshift;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.stateshift.StateShiftException.Reason;
import io.stateshift.spark.state.StateSources;
import io.stateshift.testing.CheckpointDigest;
import io.stateshift.testing.OperatorQueries;
import io.stateshift.testing.OperatorRun;
import io.stateshift.testing.SparkTestSession;
import io.stateshift.testing.StateStores;
import io.stateshift.testing.TestSets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.stream.Collectors;
import java.util.stream.Stream;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.streaming.StateOperatorProgress;
import org.apache.spark.sql.streaming.StreamingQueryProgress;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * The oracle for joins, session windows, flatMapGroupsWithState and queries with several stateful
 * operators: stopped, repartitioned and restarted, a query writes exactly what it writes when run
 * without interruption over the same input; every key of every store sits in the partition Spark
 * assigns it; timers registered before the repartition fire after it, once. Every operator runs on
 * the HDFS-backed store and on RocksDB, and every checkpoint is repartitioned up and then down,
 * with input between.
 */
class OperatorOracleTest {
  static final int FIRST_PART_FILES = 2;
  static final int ALL_EVENT_FILES = 4;
  static final int JOIN_ROWS = 150;
  static final int JOIN_DEVICES = 25;
  static final int ROTATING_ROWS = 120;
  static final String JOIN_FORMAT = "spark.sql.streaming.join.stateFormatVersion";
  static final String FMGWS_FORMAT =
      "spark.sql.streaming.flatMapGroupsWithState.stateFormatVersion";
  static final String STRICT = "spark.sql.streaming.statefulOperator.useStrictDistribution";

  private final SparkSession spark = SparkTestSession.get();

  /** Oracles are shared by the scenarios that run the same query with the same format. */
  private static final Map<String, List<String>> ORACLES = new ConcurrentHashMap<>();

  @TempDir static Path oracleDir;

  @TempDir Path tmp;

  /**
   * Every operator on the HDFS-backed store and on RocksDB (with or without changelog
   * checkpointing, alternating), each repartitioned up and then down on one checkpoint. By default
   * every operator once, the two stores taking turns; both under -Pextended.
   */
  static Stream<Arguments> scenarios() {
    String session = "spark.sql.streaming.sessionWindow.stateFormatVersion";
    List<Arguments> out = new ArrayList<>();
    for (StateStores store : List.of(StateStores.HDFS, StateStores.ROCKSDB)) {
      boolean hdfs = store == StateStores.HDFS;
      out.add(
          Arguments.of(
              OperatorQueries.JOIN_INNER,
              hdfs ? store : StateStores.ROCKSDB_CHANGELOG,
              JOIN_FORMAT,
              "2"));
      out.add(Arguments.of(OperatorQueries.JOIN_INNER, store, JOIN_FORMAT, "1"));
      out.add(Arguments.of(OperatorQueries.JOIN_LEFT_OUTER, store, JOIN_FORMAT, "2"));
      out.add(
          Arguments.of(
              OperatorQueries.JOIN_RIGHT_OUTER,
              hdfs ? store : StateStores.ROCKSDB_CHANGELOG,
              JOIN_FORMAT,
              "2"));
      out.add(Arguments.of(OperatorQueries.JOIN_FULL_OUTER, store, JOIN_FORMAT, "2"));
      out.add(
          Arguments.of(
              OperatorQueries.JOIN_LEFT_SEMI,
              hdfs ? store : StateStores.ROCKSDB_CHANGELOG,
              JOIN_FORMAT,
              "2"));
      out.add(
          Arguments.of(
              OperatorQueries.SESSION_WINDOW_COUNT,
              hdfs ? store : StateStores.ROCKSDB_CHANGELOG,
              session,
              "1"));
      out.add(Arguments.of(OperatorQueries.FLAT_MAP_EVENT_TIME_TIMEOUT, store, FMGWS_FORMAT, "2"));
      out.add(
          Arguments.of(
              OperatorQueries.MAP_EVENT_TIME_TIMEOUT,
              hdfs ? store : StateStores.ROCKSDB_CHANGELOG,
              FMGWS_FORMAT,
              "2"));
      out.add(Arguments.of(OperatorQueries.MAP_NO_TIMEOUT, store, FMGWS_FORMAT, hdfs ? "1" : "2"));
      out.add(
          Arguments.of(
              OperatorQueries.JOIN_THEN_WINDOWED_COUNT,
              hdfs ? store : StateStores.ROCKSDB_CHANGELOG,
              JOIN_FORMAT,
              "2"));
    }
    int operators = out.size() / 2;
    // Case i is operator i % operators on the HDFS-backed store (first half) or RocksDB. The full
    // outer join covers what the left and right outer joins do (null rows from either side, on
    // the same four stores per partition), so those two run under -Pextended only.
    List<OperatorQueries> extendedOnly =
        List.of(OperatorQueries.JOIN_LEFT_OUTER, OperatorQueries.JOIN_RIGHT_OUTER);
    return TestSets.orCover(
        TestSets.subset(
            out,
            i ->
                (i % operators) % 2 == i / operators
                    && !extendedOnly.contains(out.get(i).get()[0])),
        // a line's cover: the inner join on RocksDB
        c -> c[0] == OperatorQueries.JOIN_INNER && c[1] != StateStores.HDFS);
  }

  static final int FIRST = 3;
  static final int UP = 5;
  static final int DOWN = 2;

  @Tag("cover")
  @ParameterizedTest(name = "{0} on {1}: 3 -> 5 -> 2, {2}={3}")
  @MethodSource("scenarios")
  void repartitionedQueryWritesExactlyTheUninterruptedOutput(
      OperatorQueries query, StateStores store, String formatConf, String format) {
    OperatorRun run = new OperatorRun(spark, tmp.resolve("input"));
    Path checkpoint = tmp.resolve("checkpoint");
    Path sink = tmp.resolve("sink");
    Map<String, String> conf = new HashMap<>(store.withPartitions(FIRST));
    conf.put(formatConf, format);
    for (int i = 0; i < FIRST_PART_FILES; i++) {
      writeEvents(run, query, i);
    }
    startOnNewCheckpoint(run, query, checkpoint, sink, conf);
    if (query == OperatorQueries.SESSION_WINDOW_COUNT && !StateSources.OPERATOR_METADATA) {
      // Spark 3.5 writes no operator metadata: a session window's placement cannot be derived
      assertRefusedWithoutMetadata(checkpoint, UP, "sessionStartTime");
      return;
    }
    List<String> beforeRepartition = run.sinkRows(sink, query);

    repartitionAndCheck(checkpoint, FIRST, UP);
    writeEvents(run, query, FIRST_PART_FILES);
    // The session still asks for the first count: the checkpoint's count must win.
    assertRunsWithPartitions(run.runAvailable(query, checkpoint, sink, conf), UP);

    repartitionAndCheck(checkpoint, UP, DOWN);
    for (int i = FIRST_PART_FILES + 1; i < ALL_EVENT_FILES; i++) {
      writeEvents(run, query, i);
    }
    run.writeFlush(ALL_EVENT_FILES);
    assertRunsWithPartitions(run.runAvailable(query, checkpoint, sink, conf), DOWN);

    List<String> rows = run.sinkRows(sink, query);
    assertThat(rows).containsExactlyElementsOf(oracle(query, formatConf, format));
    if (query == OperatorQueries.FLAT_MAP_EVENT_TIME_TIMEOUT
        || query == OperatorQueries.MAP_EVENT_TIME_TIMEOUT) {
      assertTimersOfTheFirstRunFireAfterItOnce(run, beforeRepartition, rows);
    }
    if (query == OperatorQueries.JOIN_LEFT_OUTER || query == OperatorQueries.JOIN_FULL_OUTER) {
      // left rows of the first files left unmatched, emitted after the repartition, once
      assertThat(newRows(beforeRepartition, rows))
          .anyMatch(r -> r.contains(",null,null,null]") && !r.contains("flush"));
    }
    if (query == OperatorQueries.JOIN_RIGHT_OUTER || query == OperatorQueries.JOIN_FULL_OUTER) {
      assertThat(newRows(beforeRepartition, rows))
          .anyMatch(r -> r.startsWith("[null,null,null,") && !r.contains("flush"));
    }
  }

  /** Refused as bad input, naming {@code reason}, the checkpoint byte for byte unchanged. */
  private void assertRefusedWithoutMetadata(Path checkpoint, int to, String reason) {
    Map<String, String> before = CheckpointDigest.of(checkpoint);
    assertThatThrownBy(
            () ->
                StateShift.get(spark)
                    .repartitionState(checkpoint.toString())
                    .toPartitions(to)
                    .execute())
        .isInstanceOf(StateShiftException.class)
        .hasMessageContaining("no operator metadata")
        .hasMessageContaining(reason)
        .satisfies(e -> assertThat(((StateShiftException) e).reason().isBadInput()).isTrue());
    assertThat(CheckpointDigest.of(checkpoint)).isEqualTo(before);
  }

  private void repartitionAndCheck(Path checkpoint, int from, int to) {
    RepartitionResult result = StateAssertions.repartition(spark, checkpoint, from, to);
    assertEveryKeyInItsSparkPartition(checkpoint, result.batchId(), to);
    StateAssertions.assertMetadataReports(spark, checkpoint, to);
  }

  /**
   * Processing-time timeouts: devices registered by the batch before the repartition time out in
   * the first batch after it (three seconds of wall clock later), exactly once each, with their
   * full count; devices first seen in that batch do not time out yet.
   */
  @ParameterizedTest(name = "on {0}: 4 -> {1}")
  @MethodSource("providersAndTargets")
  void processingTimeTimeoutsRegisteredBeforeTheRepartitionFireAfterItOnce(
      StateStores store, int target) throws Exception {
    OperatorQueries query = OperatorQueries.FLAT_MAP_PROCESSING_TIME_TIMEOUT;
    OperatorRun run = new OperatorRun(spark, tmp.resolve("input"));
    Path checkpoint = tmp.resolve("checkpoint");
    Path sink = tmp.resolve("sink");
    Map<String, String> conf = new HashMap<>(store.withPartitions(4));
    conf.put(FMGWS_FORMAT, "2");
    // only batches with data: a no-data batch would fire timeouts on its own schedule
    conf.put("spark.sql.streaming.noDataMicroBatches.enabled", "false");
    run.writeRotatingEvents(0, ROTATING_ROWS);
    run.runAvailable(query, checkpoint, sink, conf);
    long registeredAt = System.currentTimeMillis();
    assertThat(run.sinkRows(sink, query)).isEmpty();

    RepartitionResult result =
        StateShift.get(spark)
            .repartitionState(checkpoint.toString())
            .toPartitions(target)
            .execute();
    assertEveryKeyInItsSparkPartition(checkpoint, result.batchId(), target);

    Thread.sleep(
        Math.max(
            0,
            registeredAt
                + OperatorQueries.PROCESSING_TIMEOUT_MS
                + 500
                - System.currentTimeMillis()));
    run.writeRotatingEvents(2, ROTATING_ROWS); // devices r-8 to r-15, none of file 0's
    assertRunsWithPartitions(run.runAvailable(query, checkpoint, sink, conf), target);

    Map<String, Long> file0Counts =
        countsByDevice(
            run.batch()
                .where(org.apache.spark.sql.functions.input_file_name().contains("events-0000")));
    List<String> expected =
        file0Counts.entrySet().stream()
            .map(e -> "[" + e.getKey() + "," + e.getValue() + ",timeout]")
            .sorted()
            .toList();
    assertThat(expected).hasSizeGreaterThan(3);
    assertThat(run.sinkRows(sink, query)).containsExactlyElementsOf(expected);
  }

  /**
   * A checkpoint written with useStrictDistribution=false whose input was already partitioned by a
   * subset of the key (the device): Spark placed the state by the device alone. The repartition
   * places every key by its full key and records strict distribution, so the restarted query looks
   * for each key where it now is.
   */
  @ParameterizedTest(name = "on {0}: 4 -> {1}")
  @MethodSource("providersAndTargets")
  void stateOfANonStrictCheckpointPlacedByASubsetOfTheKeyIsMovedToItsFullKeyPartition(
      StateStores store, int target) {
    OperatorQueries query = OperatorQueries.COUNT_PLACED_BY_DEVICE;
    OperatorRun run = new OperatorRun(spark, tmp.resolve("input"));
    Path checkpoint = tmp.resolve("checkpoint");
    Path sink = tmp.resolve("sink");
    Map<String, String> conf = new HashMap<>(store.withPartitions(4));
    conf.put(STRICT, "false");
    for (int i = 0; i < FIRST_PART_FILES; i++) {
      run.writeEvents(i, JOIN_ROWS, JOIN_DEVICES);
    }
    run.runAvailable(query, checkpoint, sink, conf);
    long lastBatch = lastCommitted(checkpoint);
    assertThat(misplacedKeys(checkpoint, lastBatch, 4))
        .as("Spark placed this state by the device alone")
        .isPositive();
    if (!StateSources.OPERATOR_METADATA) {
      // Spark 3.5 writes no operator metadata: a key placed otherwise than by its whole state key
      // leaves its placement unknown
      assertRefusedWithoutMetadata(checkpoint, target, "not placed by its whole state key");
      return;
    }

    RepartitionResult result =
        StateShift.get(spark)
            .repartitionState(checkpoint.toString())
            .toPartitions(target)
            .execute();
    assertEveryKeyInItsSparkPartition(checkpoint, result.batchId(), target);
    assertThat(readText(checkpoint.resolve("offsets/" + result.batchId())))
        .contains("\"" + STRICT + "\":\"true\"");

    for (int i = FIRST_PART_FILES; i < ALL_EVENT_FILES; i++) {
      run.writeEvents(i, JOIN_ROWS, JOIN_DEVICES);
    }
    assertRunsWithPartitions(run.runAvailable(query, checkpoint, sink, conf), target);
    assertThat(misplacedKeys(checkpoint, lastCommitted(checkpoint), target)).isZero();
    List<String> rows = run.sinkRows(sink, query);
    assertThat(rows).containsExactlyElementsOf(oracle(query, STRICT, "false"));
    List<String> batch =
        run
            .batch()
            .groupBy(
                org.apache.spark.sql.functions.col("device"),
                org.apache.spark.sql.functions.expr("minute(ts)").as("minute"))
            .count()
            .collectAsList()
            .stream()
            .map(Row::toString)
            .sorted()
            .toList();
    assertThat(rows).containsExactlyElementsOf(batch);
  }

  /** Join state format 4 is for testing only in Spark 4.2: refused, naming the fix, unchanged. */
  @Test
  @Tag("join-format-4")
  void joinStateFormat4IsRefusedAndTheCheckpointIsUnchanged() {
    OperatorRun run = new OperatorRun(spark, tmp.resolve("input"));
    Path checkpoint = tmp.resolve("checkpoint");
    Map<String, String> conf = new HashMap<>(StateStores.ROCKSDB.withPartitions(4));
    conf.put(JOIN_FORMAT, "4");
    run.writeEvents(0, JOIN_ROWS, JOIN_DEVICES);
    System.setProperty("spark.testing", "true"); // Spark 4.2 runs format 4 only in test mode
    try {
      run.runAvailable(OperatorQueries.JOIN_INNER, checkpoint, tmp.resolve("sink"), conf);
    } finally {
      System.clearProperty("spark.testing");
    }
    var before = CheckpointDigest.of(checkpoint);

    assertThatThrownBy(
            () ->
                StateShift.get(spark)
                    .repartitionState(checkpoint.toString())
                    .toPartitions(8)
                    .execute())
        .isInstanceOfSatisfying(
            StateShiftException.class,
            e -> assertThat(e.reason()).isEqualTo(Reason.UNSUPPORTED_OPERATOR))
        .hasMessageContaining("join state format 4")
        .hasMessageContaining("formats 1, 2 and 3")
        .hasMessageContaining("new checkpoint");
    assertThat(CheckpointDigest.of(checkpoint)).isEqualTo(before);
  }

  /**
   * flatMapGroupsWithState state format 1 with a timeout: Spark 4.2's own state validation rejects
   * its rows outside the query, so it is refused, naming the fix, and left unchanged.
   */
  @Test
  void flatMapGroupsWithStateFormat1WithATimeoutIsRefusedAndTheCheckpointIsUnchanged() {
    OperatorRun run = new OperatorRun(spark, tmp.resolve("input"));
    Path checkpoint = tmp.resolve("checkpoint");
    Map<String, String> conf = new HashMap<>(StateStores.HDFS.withPartitions(4));
    conf.put(FMGWS_FORMAT, "1");
    run.writeRotatingEvents(0, ROTATING_ROWS);
    run.runAvailable(
        OperatorQueries.FLAT_MAP_EVENT_TIME_TIMEOUT, checkpoint, tmp.resolve("sink"), conf);
    var before = CheckpointDigest.of(checkpoint);

    assertThatThrownBy(
            () ->
                StateShift.get(spark)
                    .repartitionState(checkpoint.toString())
                    .toPartitions(8)
                    .execute())
        .isInstanceOfSatisfying(
            StateShiftException.class,
            e -> assertThat(e.reason()).isEqualTo(Reason.UNSUPPORTED_OPERATOR))
        .hasMessageContaining("with a timeout")
        .hasMessageContaining("state format 1")
        .hasMessageContaining("new checkpoint");
    assertThat(CheckpointDigest.of(checkpoint)).isEqualTo(before);
  }

  /** The on-demand path: the same join restarted with only the partition setting changed. */
  @Test
  void aJoinRestartedWithANewPartitionSettingIsRepartitionedOnDemand() {
    SparkSession session = SparkTestSession.get().newSession();
    OperatorQueries query = OperatorQueries.JOIN_LEFT_OUTER;
    OperatorRun run = new OperatorRun(session, tmp.resolve("input"));
    Path checkpoint = tmp.resolve("checkpoint");
    Path sink = tmp.resolve("sink");
    Map<String, String> conf = new HashMap<>(StateStores.ROCKSDB_CHANGELOG.withPartitions(5));
    conf.put(StateShiftExtensions.STATE_PARTITIONS, "3");
    for (int i = 0; i < FIRST_PART_FILES; i++) {
      run.writeEvents(i, JOIN_ROWS, JOIN_DEVICES);
    }
    assertRunsWithPartitions(run.runAvailable(query, checkpoint, sink, conf), 3);

    for (int i = FIRST_PART_FILES; i < ALL_EVENT_FILES; i++) {
      run.writeEvents(i, JOIN_ROWS, JOIN_DEVICES);
    }
    run.writeFlush(ALL_EVENT_FILES);
    conf.put(StateShiftExtensions.STATE_PARTITIONS, "6");
    List<StreamingQueryProgress> second = run.runAvailable(query, checkpoint, sink, conf);

    assertRunsWithPartitions(second, 6);
    assertThat(second.get(0).durationMs()).containsKey(StateShiftExtensions.PROGRESS_KEY);
    assertEveryKeyInItsSparkPartition(checkpoint, lastCommitted(checkpoint), 6);
    assertThat(run.sinkRows(sink, query))
        .containsExactlyElementsOf(oracle(query, JOIN_FORMAT, "2"));
  }

  /**
   * A join checkpoint as Spark 3.5 writes it, with no operator metadata (here: removed): the join
   * is derived from its four store folders and their schemas, repartitioned, and the query
   * continues to exactly the uninterrupted output.
   */
  @Test
  void aJoinWithoutOperatorMetadataIsDerivedFromItsStoresAndRepartitioned() throws Exception {
    OperatorQueries query = OperatorQueries.JOIN_INNER;
    OperatorRun run = new OperatorRun(spark, tmp.resolve("input"));
    Path checkpoint = tmp.resolve("checkpoint");
    Path sink = tmp.resolve("sink");
    Map<String, String> conf = new HashMap<>(StateStores.ROCKSDB.withPartitions(FIRST));
    conf.put(JOIN_FORMAT, "2");
    for (int i = 0; i < FIRST_PART_FILES; i++) {
      run.writeEvents(i, JOIN_ROWS, JOIN_DEVICES);
    }
    startOnNewCheckpoint(run, query, checkpoint, sink, conf);
    Path operatorMetadata = checkpoint.resolve("state/0/_metadata");
    if (Files.exists(operatorMetadata)) {
      try (Stream<Path> files = Files.walk(operatorMetadata)) {
        files.sorted(java.util.Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
      }
    }

    StateAssertions.repartition(spark, checkpoint, FIRST, UP);
    for (int i = FIRST_PART_FILES; i < ALL_EVENT_FILES; i++) {
      run.writeEvents(i, JOIN_ROWS, JOIN_DEVICES);
    }
    run.writeFlush(ALL_EVENT_FILES);
    assertRunsWithPartitions(run.runAvailable(query, checkpoint, sink, conf), UP);
    // Spark has written operator metadata by now, so its state source can check placement
    assertEveryKeyInItsSparkPartition(checkpoint, lastCommitted(checkpoint), UP);
    assertThat(run.sinkRows(sink, query))
        .containsExactlyElementsOf(oracle(query, JOIN_FORMAT, "2"));
  }

  /** An increase on one provider, a decrease on the other. */
  static Stream<Arguments> providersAndTargets() {
    return Stream.of(Arguments.of(StateStores.ROCKSDB, 7), Arguments.of(StateStores.HDFS, 2));
  }

  // ---- helpers ----

  /** Every stateful operator of every batch ran with n partitions (a join has 4 stores each). */
  private static void assertRunsWithPartitions(List<StreamingQueryProgress> progress, int n) {
    assertThat(progress).isNotEmpty();
    for (StreamingQueryProgress p : progress) {
      assertThat(p.stateOperators()).isNotEmpty();
      for (StateOperatorProgress op : p.stateOperators()) {
        int stores = op.operatorName().equals("symmetricHashJoin") ? 4 : 1;
        assertThat(op.numShufflePartitions()).isEqualTo(n);
        assertThat(op.numStateStoreInstances()).isEqualTo((long) n * stores);
      }
    }
  }

  private static void writeEvents(OperatorRun run, OperatorQueries query, int index) {
    if (query.isJoin()) {
      run.writeEvents(index, JOIN_ROWS, JOIN_DEVICES);
    } else {
      run.writeRotatingEvents(index, ROTATING_ROWS);
    }
  }

  /**
   * Runs a query on a new checkpoint. Spark 4.2 writes join state format 1 (the format of
   * checkpoints from Spark 2.3, and of later ones that set it) only in its own test mode: for that
   * format the first run sets spark.testing, so the checkpoint is what an older Spark wrote; every
   * run after it, and the repartition, go without.
   */
  private static void startOnNewCheckpoint(
      OperatorRun run,
      OperatorQueries query,
      Path checkpoint,
      Path sink,
      Map<String, String> conf) {
    boolean legacyJoinFormat = "1".equals(conf.get(JOIN_FORMAT)) && query.isJoin();
    if (legacyJoinFormat) {
      System.setProperty("spark.testing", "true");
    }
    try {
      run.runAvailable(query, checkpoint, sink, conf);
    } finally {
      if (legacyJoinFormat) {
        System.clearProperty("spark.testing");
      }
    }
  }

  /** The same query over the same files, on a fresh checkpoint, in one uninterrupted run. */
  private List<String> oracle(OperatorQueries query, String formatConf, String format) {
    return ORACLES.computeIfAbsent(
        query + " " + formatConf + "=" + format, key -> computeOracle(query, formatConf, format));
  }

  private List<String> computeOracle(OperatorQueries query, String formatConf, String format) {
    Path dir = oracleDir.resolve(query + "-" + format);
    OperatorRun run = new OperatorRun(spark, dir.resolve("input"));
    boolean strictTest = query == OperatorQueries.COUNT_PLACED_BY_DEVICE;
    for (int i = 0; i < ALL_EVENT_FILES; i++) {
      if (query.isJoin() || strictTest) {
        run.writeEvents(i, JOIN_ROWS, JOIN_DEVICES);
      } else {
        run.writeRotatingEvents(i, ROTATING_ROWS);
      }
    }
    if (!strictTest) {
      run.writeFlush(ALL_EVENT_FILES);
    }
    // two partitions (the strict distribution query partitions its input into four itself)
    Map<String, String> conf = new HashMap<>(StateStores.HDFS.withPartitions(strictTest ? 4 : 2));
    conf.put(formatConf, format);
    startOnNewCheckpoint(run, query, dir.resolve("checkpoint"), dir.resolve("sink"), conf);
    List<String> rows = run.sinkRows(dir.resolve("sink"), query);
    assertThat(rows).isNotEmpty();
    assertMatchesBatchComputation(query, run, rows);
    return rows;
  }

  /** Where a batch query computes the same answer, the streaming oracle must agree with it. */
  private void assertMatchesBatchComputation(
      OperatorQueries query, OperatorRun run, List<String> rows) {
    Dataset<Row> events = run.batch();
    switch (query) {
      case JOIN_INNER ->
          assertThat(rows)
              .containsExactlyElementsOf(
                  query.apply(() -> events).collectAsList().stream()
                      .map(Row::toString)
                      .sorted()
                      .toList());
      case SESSION_WINDOW_COUNT ->
          assertThat(withoutFlush(rows))
              .containsExactlyElementsOf(
                  withoutFlush(
                      query.apply(() -> events).collectAsList().stream()
                          .map(Row::toString)
                          .sorted()
                          .toList()));
      case FLAT_MAP_EVENT_TIME_TIMEOUT -> {
        List<String> counts =
            countsByDevice(events.where("device != 'flush'")).entrySet().stream()
                .map(e -> "[" + e.getKey() + "," + e.getValue() + ",timeout]")
                .sorted()
                .toList();
        assertThat(rows).containsExactlyElementsOf(counts);
      }
      default -> {}
    }
  }

  /**
   * Every device whose timer was set before the repartition and had not fired: its timeout row is
   * not in the first run's output and is in the final output exactly once.
   */
  private static void assertTimersOfTheFirstRunFireAfterItOnce(
      OperatorRun run, List<String> beforeRepartition, List<String> after) {
    Set<String> pending = new java.util.TreeSet<>();
    for (int d = 4 * (FIRST_PART_FILES - 1); d < 4 * (FIRST_PART_FILES - 1) + 8; d++) {
      String device = "r-" + d;
      if (beforeRepartition.stream()
          .noneMatch(r -> r.startsWith("[" + device + ",") && r.endsWith(",timeout]"))) {
        pending.add(device);
      }
    }
    assertThat(pending).isNotEmpty();
    for (String device : pending) {
      assertThat(
              after.stream()
                  .filter(r -> r.startsWith("[" + device + ",") && r.endsWith(",timeout]"))
                  .count())
          .as("timeouts of %s", device)
          .isEqualTo(1);
    }
  }

  private static List<String> newRows(List<String> before, List<String> after) {
    List<String> out = new ArrayList<>(after);
    for (String r : before) {
      out.remove(r);
    }
    return out;
  }

  private static List<String> withoutFlush(List<String> rows) {
    return rows.stream().filter(r -> !r.contains("flush")).toList();
  }

  private static Map<String, Long> countsByDevice(Dataset<Row> events) {
    return events.groupBy("device").count().collectAsList().stream()
        .collect(Collectors.toMap(r -> r.getString(0), r -> r.getLong(1)));
  }

  /**
   * Reads every store of every operator with Spark's statestore source and checks each key's
   * partition against pmod(hash(partition key), n), computed in SQL. The partition key is the whole
   * state key, except for a session window (the key without the session) and a join's
   * keyWithIndexToValue store (the key without the index).
   */
  private void assertEveryKeyInItsSparkPartition(Path checkpoint, long batchId, int partitions) {
    List<Row> stores =
        StateSources.metadata(spark, checkpoint.toString())
            .select("operatorId", "operatorName", "stateStoreName")
            .collectAsList();
    assertThat(stores).isNotEmpty();
    for (Row store : stores) {
      Dataset<Row> state = stateRows(checkpoint, batchId, store);
      long misplaced =
          state
              .selectExpr(
                  "partition_id", partitionExpression(state, store, partitions) + " AS expected")
              .filter("partition_id != expected")
              .count();
      String what = "operator " + store.getLong(0) + " store " + store.getString(2);
      assertThat(state.count()).as("rows of %s", what).isPositive();
      assertThat(misplaced).as("misplaced keys of %s", what).isZero();
      assertThat(state.agg(org.apache.spark.sql.functions.max("partition_id")).first().getInt(0))
          .isLessThan(partitions);
    }
  }

  private long misplacedKeys(Path checkpoint, long batchId, int partitions) {
    long misplaced = 0;
    for (Row store :
        StateSources.metadata(spark, checkpoint.toString())
            .select("operatorId", "operatorName", "stateStoreName")
            .collectAsList()) {
      Dataset<Row> state = stateRows(checkpoint, batchId, store);
      misplaced +=
          state
              .selectExpr(
                  "partition_id", partitionExpression(state, store, partitions) + " AS expected")
              .filter("partition_id != expected")
              .count();
    }
    return misplaced;
  }

  private Dataset<Row> stateRows(Path checkpoint, long batchId, Row store) {
    return StateSources.state(
        spark, checkpoint.toString(), batchId, store.getLong(0), store.getString(2));
  }

  private static String partitionExpression(Dataset<Row> state, Row store, int partitions) {
    StructType key = (StructType) state.schema().apply("key").dataType();
    boolean dropLast =
        store.getString(1).equals("sessionWindowStateStoreSaveExec")
            || store.getString(2).endsWith("keyWithIndexToValue");
    StructField[] fields = key.fields();
    List<String> partitionKey = new ArrayList<>();
    for (int i = 0; i < fields.length - (dropLast ? 1 : 0); i++) {
      partitionKey.add("key.`" + fields[i].name() + "`");
    }
    return "pmod(hash(" + String.join(", ", partitionKey) + "), " + partitions + ")";
  }

  private static long lastCommitted(Path checkpoint) {
    try (var files = Files.list(checkpoint.resolve("commits"))) {
      return files
          .map(p -> p.getFileName().toString())
          .filter(n -> n.matches("\\d+"))
          .mapToLong(Long::parseLong)
          .max()
          .orElseThrow();
    } catch (java.io.IOException e) {
      throw new java.io.UncheckedIOException(e);
    }
  }

  private static String readText(Path file) {
    try {
      return Files.readString(file);
    } catch (java.io.IOException e) {
      throw new java.io.UncheckedIOException(e);
    }
  }
}
