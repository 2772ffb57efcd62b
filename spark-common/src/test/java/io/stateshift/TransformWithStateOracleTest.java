package io.stateshift;

import static org.assertj.core.api.Assertions.assertThat;

import io.stateshift.spark.state.DeltaChanges;
import io.stateshift.testing.DeviceStateProcessor;
import io.stateshift.testing.OperatorQueries;
import io.stateshift.testing.OperatorRun;
import io.stateshift.testing.SparkTestSession;
import io.stateshift.testing.StateStores;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import org.apache.spark.sql.DataFrameReader;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.streaming.StateOperatorProgress;
import org.apache.spark.sql.streaming.StreamingQueryProgress;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * The oracle for transformWithState (RocksDB only, as Spark requires): a query whose state
 * variables (value, list and map state, with and without TTL) and timers (processing time, event
 * time) are repartitioned up and then down writes exactly what the same query writes run without
 * interruption over the same input. After each repartition every entry of every state variable and
 * every timer sits in Spark's partition of its grouping key, the state reads back unchanged, timers
 * registered before it fire after it once, expired TTL entries stay expired and live ones live on
 * ({@link DeviceStateProcessor} writes what its state holds).
 */
@Tag("transform-with-state") // the lines whose stateshift moves its state (4.2)
class TransformWithStateOracleTest {
  static final int ROWS = 40;
  static final int FILES = 4;
  static final String NO_DATA_BATCHES = "spark.sql.streaming.noDataMicroBatches.enabled";

  /** Longer than the short TTL and the processing-time timer, so both expire between batches. */
  static final long BATCH_GAP_MS = DeviceStateProcessor.SHORT_TTL_MS + 400;

  static final List<String> STATE_VARIABLES =
      List.of("count", "lastBatchCount", "ids", "lastBatchIds", "perMinute", "lastBatchPerMinute");

  private final SparkSession spark = SparkTestSession.get();

  @TempDir Path tmp;

  /**
   * Processing time, RocksDB snapshots, 3 to 5 partitions then 5 to 2 through the API. One batch
   * per file, and a pause longer than the short TTL and the timer delay after each: the output
   * depends on the input only, so the uninterrupted run (interleaved) is the oracle.
   */
  @Test
  void processingTimeStateTtlAndTimersSurviveAnIncreaseThenADecrease() throws Exception {
    OperatorQueries query = OperatorQueries.TWS_PROCESSING_TIME;
    Map<String, String> conf = new HashMap<>(StateStores.ROCKSDB.withPartitions(3));
    // only batches with data: a no-data batch would fire timers on its own schedule
    conf.put(NO_DATA_BATCHES, "false");
    OperatorRun oracle = new OperatorRun(spark, tmp.resolve("oracle-input"));
    OperatorRun run = new OperatorRun(spark, tmp.resolve("input"));
    Path checkpoint = tmp.resolve("checkpoint");
    Path sink = tmp.resolve("sink");
    int[] partitionsAfter = {3, 3, 5, 2};
    long[] repartitionBatch = new long[FILES];
    for (int i = 0; i < FILES; i++) {
      oracle.writeRotatingEvents(i, ROWS);
      oracle.runAvailable(
          query, tmp.resolve("oracle-checkpoint"), tmp.resolve("oracle-sink"), conf);
      run.writeRotatingEvents(i, ROWS);
      assertRunsWithPartitions(run.runAvailable(query, checkpoint, sink, conf), partitionsAfter[i]);
      if (i + 1 < FILES && partitionsAfter[i + 1] != partitionsAfter[i]) {
        repartitionBatch[i] = repartitionAndCheck(checkpoint, partitionsAfter[i + 1]);
      }
      Thread.sleep(BATCH_GAP_MS);
    }

    List<String> rows = run.sinkRows(sink, query);
    assertThat(rows)
        .doesNotHaveDuplicates()
        .containsExactlyElementsOf(oracle.sinkRows(tmp.resolve("oracle-sink"), query));
    for (int i = 1; i <= 2; i++) {
      // the batch right after a repartition: every device of the file before it has its timer
      // fire there, once; its short-TTL entries are gone and its other state is all there
      Set<String> devicesBefore = devicesOf(run, i);
      List<String> after = linesOfBatch(sink, repartitionBatch[i] + 1);
      for (String device : devicesBefore) {
        assertThat(after).filteredOn(l -> l.startsWith("timer|" + device + "|")).hasSize(1);
        assertThat(after)
            .filteredOn(l -> l.startsWith("input|" + device + "|"))
            .allSatisfy(
                l ->
                    assertThat(l.substring(0, l.indexOf("|after")))
                        .contains("lastBatchCount=none", "lastBatchIds=0 ", "lastBatchMinutes=0")
                        .doesNotContain("before count=none", " ids=0:"));
      }
      assertThat(after)
          .anyMatch(l -> l.startsWith("input|") && devicesBefore.contains(l.split("\\|")[1]));
    }
  }

  /**
   * Event time, RocksDB with changelog checkpointing, 3 to 5 partitions through the API, then 5 to
   * 2 on demand when the query restarts with a new partition setting. Event-time timers set before
   * a repartition fire after it, once each.
   */
  @Test
  void eventTimeStateAndTimersSurviveAnIncreaseThenAnOnDemandDecrease() {
    SparkSession session = SparkTestSession.get().newSession();
    OperatorQueries query = OperatorQueries.TWS_EVENT_TIME;
    Map<String, String> conf = new HashMap<>(StateStores.ROCKSDB_CHANGELOG.withPartitions(3));
    // one batch per file whatever the runs: no-data batches would fire timers at run boundaries
    conf.put(NO_DATA_BATCHES, "false");
    OperatorRun run = new OperatorRun(session, tmp.resolve("input"));
    Path checkpoint = tmp.resolve("checkpoint");
    Path sink = tmp.resolve("sink");
    run.writeRotatingEvents(0, ROWS);
    run.writeRotatingEvents(1, ROWS);
    assertRunsWithPartitions(run.runAvailable(query, checkpoint, sink, conf), 3);
    long firstRepartition = repartitionAndCheck(checkpoint, 5);

    run.writeRotatingEvents(2, ROWS);
    assertRunsWithPartitions(run.runAvailable(query, checkpoint, sink, conf), 5);
    run.writeRotatingEvents(3, ROWS);
    run.writeFlush(FILES);
    conf.put(StateShiftExtensions.STATE_PARTITIONS, "2");
    List<StreamingQueryProgress> onDemand = run.runAvailable(query, checkpoint, sink, conf);
    assertRunsWithPartitions(onDemand, 2);
    assertThat(onDemand.get(0).durationMs()).containsKey(StateShiftExtensions.PROGRESS_KEY);
    assertEveryEntryInItsSparkPartition(checkpoint, lastCommitted(checkpoint), 2);

    conf.remove(StateShiftExtensions.STATE_PARTITIONS);
    List<String> rows = run.sinkRows(sink, query);
    assertThat(rows)
        .doesNotHaveDuplicates()
        .containsExactlyElementsOf(uninterruptedRows(session, query, FILES, conf));
    // devices last seen before the first repartition: their timers fire after it, once each
    Set<String> gone = new TreeSet<>(devicesOf(run, 1));
    gone.removeAll(devicesOf(run, 2));
    gone.removeAll(devicesOf(run, 3));
    assertThat(gone).isNotEmpty();
    List<String> timersAfter =
        session
            .read()
            .parquet(sink.toString())
            .where("batch > " + firstRepartition)
            .collectAsList()
            .stream()
            .map(r -> r.getString(0))
            .filter(l -> l.startsWith("timer|"))
            .toList();
    assertThat(timersAfter).anyMatch(l -> gone.contains(l.split("\\|")[1]));
  }

  /**
   * The prepared path: a layout prepared after the first two files, a tail of two files in which
   * list state is appended to (RocksDB merges), values and maps are updated, lists and maps are
   * cleared and timers fire (removals). The repartition replays that tail onto the prepared layout;
   * the state is then the same entry for entry, every entry in its partition, and the output equals
   * an uninterrupted run's.
   */
  @ParameterizedTest(name = "state checkpoint format v{0}")
  @ValueSource(ints = {1, 2})
  void preparedLayoutTakesATailOfAppendsUpdatesAndRemovals(int format) {
    OperatorQueries query = OperatorQueries.TWS_EVENT_TIME;
    Map<String, String> conf = new HashMap<>(StateStores.ROCKSDB_CHANGELOG.withPartitions(3));
    conf.put(NO_DATA_BATCHES, "false");
    conf.put(CheckpointFormatV2Test.FORMAT, Integer.toString(format));
    OperatorRun run = new OperatorRun(spark, tmp.resolve("input"));
    Path checkpoint = tmp.resolve("checkpoint");
    Path sink = tmp.resolve("sink");
    run.writeRotatingEvents(0, ROWS);
    run.writeRotatingEvents(1, ROWS);
    run.runAvailable(query, checkpoint, sink, conf);
    long v = StateAssertions.preparedBatch(spark, checkpoint, 5);
    run.writeRotatingEvents(2, ROWS);
    run.writeRotatingEvents(3, ROWS);
    run.runAvailable(query, checkpoint, sink, conf);
    long last = lastCommitted(checkpoint);
    DeltaChanges.Counts tail = DeltaChanges.of(spark, checkpoint, v + 2, last + 1);
    assertThat(tail.puts()).as("puts in the tail").isPositive();
    assertThat(tail.merges()).as("list appends in the tail").isPositive();
    assertThat(tail.removals()).as("removals in the tail").isPositive();
    // Spark's statestore source loads by the commit log's ids only when the session uses v2
    spark.conf().set(CheckpointFormatV2Test.FORMAT, Integer.toString(format));
    try {
      Map<String, List<String>> stateBefore = stateContents(checkpoint, last, 0);
      RepartitionResult result = StateAssertions.repartition(spark, checkpoint, 3, 5);
      assertThat(result.path().prepared()).as("path: %s", result.path()).isTrue();
      assertThat(result.path().preparedBatch()).isEqualTo(v);
      assertThat(result.path().rowsReplayed()).isPositive();
      assertThat(stateContents(checkpoint, result.batchId(), 5)).isEqualTo(stateBefore);
    } finally {
      spark.conf().unset(CheckpointFormatV2Test.FORMAT);
    }
    assertThat(StateShift.get(spark).verify(checkpoint.toString()).problems()).isEmpty();

    run.writeRotatingEvents(4, ROWS);
    run.writeFlush(5);
    run.runAvailable(query, checkpoint, sink, conf);
    assertThat(run.sinkRows(sink, query))
        .isNotEmpty()
        .doesNotHaveDuplicates()
        .containsExactlyElementsOf(uninterruptedRows(spark, query, 5, conf));
  }

  /**
   * Spark 4.0 and 4.1 record no RocksDB merge operator in the offset log, and Spark 4.2 continues
   * such a checkpoint with version 1 (list values joined by commas), not its default 2. List state
   * of such a checkpoint, repartitioned before its first batch on 4.2, keeps that encoding: the
   * query continues on 4.2 and its output equals an uninterrupted run's.
   */
  @Test
  void listStateOfACheckpointFromBeforeSpark42KeepsItsMergeOperator() throws Exception {
    OperatorQueries query = OperatorQueries.TWS_EVENT_TIME;
    Map<String, String> conf = new HashMap<>(StateStores.ROCKSDB.withPartitions(3));
    conf.put(NO_DATA_BATCHES, "false");
    Map<String, String> asBefore42 = new HashMap<>(conf);
    asBefore42.put(MERGE_OPERATOR_VERSION, "1");
    OperatorRun run = new OperatorRun(spark, tmp.resolve("input"));
    Path checkpoint = tmp.resolve("checkpoint");
    Path sink = tmp.resolve("sink");
    run.writeRotatingEvents(0, ROWS);
    run.writeRotatingEvents(1, ROWS);
    run.runAvailable(query, checkpoint, sink, asBefore42);
    offsetLogWithoutMergeOperator(checkpoint);

    repartitionAndCheck(checkpoint, 5);
    run.writeRotatingEvents(2, ROWS);
    run.writeRotatingEvents(3, ROWS);
    run.writeFlush(FILES);
    assertRunsWithPartitions(run.runAvailable(query, checkpoint, sink, conf), 5);

    assertThat(run.sinkRows(sink, query))
        .isNotEmpty()
        .doesNotHaveDuplicates()
        .containsExactlyElementsOf(uninterruptedRows(spark, query, FILES, asBefore42));
  }

  static final String MERGE_OPERATOR_VERSION =
      "spark.sql.streaming.stateStore.rocksdb.mergeOperatorVersion";

  /** Rewrites the offset log as Spark 4.0 and 4.1 write it: without the merge operator. */
  private static void offsetLogWithoutMergeOperator(Path checkpoint) throws Exception {
    try (var files = java.nio.file.Files.list(checkpoint.resolve("offsets"))) {
      for (Path file : files.toList()) {
        String name = file.getFileName().toString();
        if (name.endsWith(".crc")) {
          java.nio.file.Files.delete(file); // Hadoop's checksum of the old text
          continue;
        }
        String text = java.nio.file.Files.readString(file);
        String without = text.replace(",\"" + MERGE_OPERATOR_VERSION + "\":\"1\"", "");
        without = without.replace("\"" + MERGE_OPERATOR_VERSION + "\":\"1\",", "");
        assertThat(without).as(name).isNotEqualTo(text).doesNotContain(MERGE_OPERATOR_VERSION);
        var written = java.nio.file.Files.getLastModifiedTime(file);
        java.nio.file.Files.writeString(file, without);
        java.nio.file.Files.setLastModifiedTime(file, written); // not taken for a running query
      }
    }
  }

  /**
   * Row checksums cover a key's column family id, which an old and a new partition number
   * differently: prepare refuses them with column families, naming the setting, and writes nothing.
   */
  @Test
  void prepareRefusesColumnFamiliesWithRowChecksums() {
    Map<String, String> conf = new HashMap<>(StateStores.ROCKSDB_CHANGELOG.withPartitions(3));
    conf.put(NO_DATA_BATCHES, "false");
    conf.put("spark.sql.streaming.stateStore.rowChecksum.enabled", "true");
    OperatorRun run = new OperatorRun(spark, tmp.resolve("input"));
    Path checkpoint = tmp.resolve("checkpoint");
    run.writeRotatingEvents(0, ROWS);
    run.runAvailable(OperatorQueries.TWS_EVENT_TIME, checkpoint, tmp.resolve("sink"), conf);
    var before = io.stateshift.testing.CheckpointDigest.of(checkpoint);
    org.assertj.core.api.Assertions.assertThatThrownBy(
            () ->
                StateShift.get(spark).prepareState(checkpoint.toString()).toPartitions(5).execute())
        .isInstanceOfSatisfying(
            StateShiftException.class,
            e ->
                assertThat(e.reason()).isEqualTo(StateShiftException.Reason.UNSUPPORTED_CHECKPOINT))
        .hasMessageContaining("spark.sql.streaming.stateStore.rowChecksum.enabled")
        .hasMessageContaining("Nothing was written");
    assertThat(io.stateshift.testing.CheckpointDigest.of(checkpoint)).isEqualTo(before);
  }

  /** The query's output run without interruption over input files 0..files-1 and a flush. */
  private List<String> uninterruptedRows(
      SparkSession session, OperatorQueries query, int files, Map<String, String> conf) {
    OperatorRun oracle = new OperatorRun(session, tmp.resolve("oracle-input"));
    for (int i = 0; i < files; i++) {
      oracle.writeRotatingEvents(i, ROWS);
    }
    oracle.writeFlush(files);
    oracle.runAvailable(query, tmp.resolve("oracle-checkpoint"), tmp.resolve("oracle-sink"), conf);
    return oracle.sinkRows(tmp.resolve("oracle-sink"), query);
  }

  /**
   * Repartitions through the API and checks the result: rows moved one for one, every entry in its
   * partition, the state unchanged entry for entry, Spark's metadata and stateshift's own census
   * agree. Returns the repartition's batch id.
   */
  private long repartitionAndCheck(Path checkpoint, int to) {
    long before = lastCommitted(checkpoint);
    Map<String, List<String>> stateBefore = stateContents(checkpoint, before, 0);
    RepartitionResult result =
        StateShift.get(spark).repartitionState(checkpoint.toString()).toPartitions(to).execute();
    assertThat(result.toPartitions()).isEqualTo(to);
    assertThat(result.rowsMoved()).isPositive();
    assertThat(result.stores())
        .allSatisfy(s -> assertThat(s.rowsWritten()).isEqualTo(s.rowsRead()));
    assertThat(stateContents(checkpoint, result.batchId(), to)).isEqualTo(stateBefore);
    StateAssertions.assertMetadataReports(spark, checkpoint, to);
    VerificationReport verified = StateShift.get(spark).verify(checkpoint.toString());
    assertThat(verified.problems()).isEmpty();
    return result.batchId();
  }

  /** Every state variable's entries and every timer, read with Spark's statestore source. */
  private DataFrameReader stateReader(Path checkpoint, long batchId) {
    return spark.read().format("statestore").option("batchId", batchId).option("operatorId", 0);
  }

  private List<Dataset<Row>> everyStateVariable(Path checkpoint, long batchId) {
    List<Dataset<Row>> out = new ArrayList<>();
    for (String variable : STATE_VARIABLES) {
      out.add(
          stateReader(checkpoint, batchId)
              .option("stateVarName", variable)
              .load(checkpoint.toString()));
    }
    out.add(
        stateReader(checkpoint, batchId)
            .option("readRegisteredTimers", true)
            .load(checkpoint.toString()));
    return out;
  }

  /** Spark's placement, computed independently in SQL: pmod(hash(grouping key), n). */
  private void assertEveryEntryInItsSparkPartition(Path checkpoint, long batchId, int partitions) {
    long entries = 0;
    for (Dataset<Row> state : everyStateVariable(checkpoint, batchId)) {
      entries += state.count();
      assertThat(
              state
                  .selectExpr("partition_id", "pmod(hash(key), " + partitions + ") AS expected")
                  .filter("partition_id != expected OR partition_id >= " + partitions)
                  .count())
          .as("misplaced entries of %s", state.schema().simpleString())
          .isZero();
    }
    assertThat(entries).isPositive();
  }

  /**
   * Each state variable's entries and the timers, as sorted strings without the partition; with
   * {@code partitions > 0} it also checks that every one of them is in its Spark partition.
   */
  private Map<String, List<String>> stateContents(Path checkpoint, long batchId, int partitions) {
    List<Dataset<Row>> all = everyStateVariable(checkpoint, batchId);
    Dataset<Row> entries = null; // one job for all of them: (variable, entry, misplaced)
    for (int i = 0; i < all.size(); i++) {
      String name = i < STATE_VARIABLES.size() ? STATE_VARIABLES.get(i) : "timers";
      Dataset<Row> state = all.get(i);
      String[] columns =
          java.util.Arrays.stream(state.columns())
              .filter(c -> !c.equals("partition_id"))
              .toArray(String[]::new);
      String misplaced =
          partitions <= 0
              ? "false"
              : "partition_id != pmod(hash(key), "
                  + partitions
                  + ") OR partition_id >= "
                  + partitions;
      Dataset<Row> rows =
          state.selectExpr(
              "'" + name + "' AS variable",
              "to_json(struct(" + String.join(", ", columns) + ")) AS entry",
              "(" + misplaced + ") AS misplaced");
      entries = entries == null ? rows : entries.unionAll(rows);
    }
    List<Row> rows = entries.collectAsList();
    assertThat(rows).isNotEmpty();
    assertThat(rows).as("misplaced entries").noneMatch(r -> r.getBoolean(2));
    Map<String, List<String>> out = new HashMap<>();
    for (Row row : rows) {
      out.computeIfAbsent(row.getString(0), k -> new ArrayList<>()).add(row.getString(1));
    }
    out.values().forEach(java.util.Collections::sort);
    return out;
  }

  private Set<String> devicesOf(OperatorRun run, int file) {
    Set<String> out = new TreeSet<>();
    run.batch()
        .where(
            org.apache
                .spark
                .sql
                .functions
                .input_file_name()
                .contains(String.format("events-%04d", file)))
        .select("device")
        .distinct()
        .collectAsList()
        .forEach(r -> out.add(r.getString(0)));
    assertThat(out).isNotEmpty();
    return out;
  }

  private List<String> linesOfBatch(Path sink, long batchId) {
    return spark
        .read()
        .parquet(sink.toString())
        .where("batch = " + batchId)
        .collectAsList()
        .stream()
        .map(r -> r.getString(0))
        .toList();
  }

  private static long lastCommitted(Path checkpoint) {
    try (var files = java.nio.file.Files.list(checkpoint.resolve("commits"))) {
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

  private static void assertRunsWithPartitions(List<StreamingQueryProgress> progress, int n) {
    assertThat(progress).isNotEmpty();
    for (StreamingQueryProgress p : progress) {
      for (StateOperatorProgress op : p.stateOperators()) {
        assertThat(op.numShufflePartitions()).isEqualTo(n);
        assertThat(op.numStateStoreInstances()).isEqualTo(n);
      }
    }
  }
}
