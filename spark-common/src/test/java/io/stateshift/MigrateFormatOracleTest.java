package io.stateshift;

import static org.assertj.core.api.Assertions.assertThat;

import io.stateshift.spark.line.LineFeatures;
import io.stateshift.testing.CheckpointDigest;
import io.stateshift.testing.OperatorQueries;
import io.stateshift.testing.OperatorRun;
import io.stateshift.testing.SparkFeatures;
import io.stateshift.testing.SparkTestSession;
import io.stateshift.testing.StateStores;
import io.stateshift.testing.StatefulQueries;
import io.stateshift.testing.StreamRun;
import io.stateshift.testing.TestSets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.stream.Stream;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.streaming.StateOperatorProgress;
import org.apache.spark.sql.streaming.StreamingQueryProgress;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * The oracle for migrations of RocksDB's state checkpoint format (v1 to v2 and v2 to v1, with a
 * partition change in the same pass) for every operator family that runs on RocksDB: aggregation,
 * deduplication, stream-stream joins in state format 2 and 3, session windows,
 * flatMapGroupsWithState and transformWithState. A query stopped, migrated and restarted with the
 * new format in its session writes exactly what it writes when run without interruption over the
 * same input; Spark's statestore reader, opening the state in the new format, finds every key in
 * the partition Spark assigns it; the partition folders hold only version files of the new format.
 */
class MigrateFormatOracleTest {
  static final int FIRST = 3;
  static final int FILES_BEFORE = 2;
  static final int ALL_FILES = 4;
  static final String JOIN_FORMAT = "spark.sql.streaming.join.stateFormatVersion";
  static final String NO_DATA_BATCHES = "spark.sql.streaming.noDataMicroBatches.enabled";

  private final SparkSession spark = SparkTestSession.get();
  private static final Map<Workload, List<String>> ORACLES = new ConcurrentHashMap<>();

  @TempDir static Path oracleDir;

  @TempDir Path tmp;

  /** One query per operator family that runs on RocksDB, each over small input. */
  enum Workload {
    AGGREGATION(StatefulQueries.WINDOWED_COUNT, null, 0),
    DEDUP(StatefulQueries.DEDUP, null, 0),
    JOIN(null, OperatorQueries.JOIN_INNER, 2),
    JOIN_STATE_FORMAT_3(null, OperatorQueries.JOIN_INNER, 3),
    SESSION_WINDOW(null, OperatorQueries.SESSION_WINDOW_COUNT, 0),
    FLAT_MAP_GROUPS_WITH_STATE(null, OperatorQueries.FLAT_MAP_EVENT_TIME_TIMEOUT, 0),
    TRANSFORM_WITH_STATE(null, OperatorQueries.TWS_EVENT_TIME, 0);

    private final StatefulQueries stateful;
    private final OperatorQueries operator;
    private final int joinFormat;

    Workload(StatefulQueries stateful, OperatorQueries operator, int joinFormat) {
      this.stateful = stateful;
      this.operator = operator;
      this.joinFormat = joinFormat;
    }

    void write(SparkSession spark, Path input, int index) {
      if (operator == null) {
        new StreamRun(spark, input).writeEvents(index, 150, 30);
      } else if (operator.isJoin()) {
        new OperatorRun(spark, input).writeEvents(index, 100, 20);
      } else {
        new OperatorRun(spark, input).writeRotatingEvents(index, 60);
      }
    }

    /** The session: RocksDB in {@code format}, the operator's own settings. */
    Map<String, String> conf(StateStores store, int format, int partitions) {
      Map<String, String> conf = new HashMap<>(store.withPartitions(partitions));
      conf.put(MigrateFormatVersionTest.FORMAT, Integer.toString(format));
      conf.put("spark.sql.streaming.stateStore.minDeltasForSnapshot", "2");
      if (joinFormat > 0) {
        conf.put(JOIN_FORMAT, Integer.toString(joinFormat));
      }
      if (this == TRANSFORM_WITH_STATE) {
        // one batch per file whatever the runs: no-data batches would fire timers at run ends
        conf.put(NO_DATA_BATCHES, "false");
      }
      return conf;
    }

    List<StreamingQueryProgress> run(
        SparkSession spark, Path input, Path checkpoint, Path sink, Map<String, String> conf) {
      return operator == null
          ? new StreamRun(spark, input).runAvailable(stateful, checkpoint, sink, conf)
          : new OperatorRun(spark, input).runAvailable(operator, checkpoint, sink, conf);
    }

    List<String> rows(SparkSession spark, Path input, Path sink) {
      return operator == null
          ? new StreamRun(spark, input).sinkRows(sink, stateful)
          : new OperatorRun(spark, input).sinkRows(sink, operator);
    }

    /** Store instances per partition: a join in state format 2 has four stores. */
    int storesPerOperator() {
      return joinFormat == 2 ? 4 : 1;
    }
  }

  /**
   * Every workload in both directions under -Pextended; by default each workload once, the
   * directions taking turns. 1 -> 2 starts on RocksDB with changelog checkpointing, 2 -> 1 on plain
   * snapshots.
   */
  static Stream<Arguments> scenarios() {
    List<Arguments> out = new ArrayList<>();
    boolean joinFormat3 = SparkFeatures.joinStateFormat(SparkTestSession.get(), 3);
    for (Workload w : Workload.values()) {
      if (w.joinFormat == 3 && !joinFormat3) {
        continue; // Spark 4.0 and 3.5 have join state formats 1 and 2 only
      }
      if (w == Workload.TRANSFORM_WITH_STATE && !LineFeatures.TRANSFORM_WITH_STATE) {
        continue; // refused on this line: TransformWithStateRefusedTest
      }
      out.add(Arguments.of(w, 1, 2, StateStores.ROCKSDB_CHANGELOG, 4));
      out.add(Arguments.of(w, 2, 1, StateStores.ROCKSDB, 2));
    }
    return TestSets.subset(out, i -> (i / 2) % 2 == i % 2);
  }

  @ParameterizedTest(name = "{0}: format v{1} -> v{2} on {3}, 3 -> {4} partitions")
  @MethodSource("scenarios")
  void migratedQueryWritesExactlyTheUninterruptedOutput(
      Workload workload, int fromFormat, int toFormat, StateStores store, int partitions)
      throws Exception {
    Path input = tmp.resolve("input");
    Path checkpoint = tmp.resolve("checkpoint");
    Path sink = tmp.resolve("sink");
    for (int i = 0; i < FILES_BEFORE; i++) {
      workload.write(spark, input, i);
    }
    workload.run(spark, input, checkpoint, sink, workload.conf(store, fromFormat, FIRST));

    RepartitionResult result =
        StateShift.get(spark)
            .migrateState(checkpoint.toString())
            .toFormatVersion(toFormat)
            .toPartitions(partitions)
            .execute();
    assertThat(result.plan().changesFormat()).isTrue();
    assertThat(result.plan().changesProvider()).isFalse();
    assertThat(result.plan().checkpointFormatVersion()).isEqualTo(fromFormat);
    assertThat(result.plan().targetCheckpointFormatVersion()).isEqualTo(toFormat);
    assertThat(result.toPartitions()).isEqualTo(partitions);
    assertThat(result.rowsMoved()).isPositive();
    assertThat(result.stores())
        .allSatisfy(s -> assertThat(s.rowsWritten()).isEqualTo(s.rowsRead()));
    long batch = result.batchId();
    assertThat(Files.readString(checkpoint.resolve("commits/" + batch)))
        .startsWith("v" + toFormat + "\n");
    assertThat(MigrateFormatVersionTest.uniqueIds(checkpoint, batch) != null)
        .isEqualTo(toFormat == 2);
    MigrateFormatVersionTest.assertOnlyFormat(checkpoint, toFormat, partitions);

    // Spark's reader opens the state in the format the session names
    spark.conf().set(MigrateFormatVersionTest.FORMAT, Integer.toString(toFormat));
    try {
      assertEveryKeyInItsSparkPartition(workload, checkpoint, batch, partitions);
      StateAssertions.assertMetadataReports(spark, checkpoint, partitions);
    } finally {
      spark.conf().unset(MigrateFormatVersionTest.FORMAT);
    }
    VerificationReport verified = StateShift.get(spark).verify(checkpoint.toString());
    assertThat(verified.problems()).as(verified.toString()).isEmpty();

    for (int i = FILES_BEFORE; i < ALL_FILES; i++) {
      workload.write(spark, input, i);
    }
    new StreamRun(spark, input).writeFlush(ALL_FILES);
    // the session names the new format (Spark does not record it) and the old count
    List<StreamingQueryProgress> progress =
        workload.run(spark, input, checkpoint, sink, workload.conf(store, toFormat, FIRST));
    assertRunsWith(progress, partitions, workload.storesPerOperator());
    long last = lastCommitted(checkpoint);
    assertThat(last).isGreaterThan(batch);
    assertThat(MigrateFormatVersionTest.uniqueIds(checkpoint, last) != null)
        .isEqualTo(toFormat == 2);
    MigrateFormatVersionTest.assertOnlyFormat(checkpoint, toFormat, partitions);

    assertThat(workload.rows(spark, input, sink)).containsExactlyElementsOf(oracle(workload));
  }

  /**
   * The provider and the format in one pass, both ways: RocksDB in format v2 to the HDFS-backed
   * store (format v1 only: commits/N+1 names no ids, the {@code <version>_<id>} files leave the
   * kept partition folders), and the HDFS-backed store to RocksDB in format v2. A rollback restores
   * the old layout byte for byte; the migration done again, the restarted query writes the
   * uninterrupted output with the new provider.
   */
  static Stream<Arguments> providerAndFormat() {
    return Stream.of(
        Arguments.of(Workload.AGGREGATION, StateStores.ROCKSDB_CHANGELOG, 2, "hdfs", 1, 2),
        Arguments.of(Workload.DEDUP, StateStores.HDFS, 1, "rocksdb", 2, 4));
  }

  @ParameterizedTest(name = "{0}: {1} v{2} -> {3} v{4}, 3 -> {5} partitions")
  @MethodSource("providerAndFormat")
  void providerAndFormatChangeInOnePassWritesExactlyTheUninterruptedOutput(
      Workload workload, StateStores from, int fromFormat, String to, int toFormat, int partitions)
      throws Exception {
    Path input = tmp.resolve("input");
    Path checkpoint = tmp.resolve("checkpoint");
    Path sink = tmp.resolve("sink");
    for (int i = 0; i < FILES_BEFORE; i++) {
      workload.write(spark, input, i);
    }
    workload.run(spark, input, checkpoint, sink, workload.conf(from, fromFormat, FIRST));
    assertThat(MigrateFormatVersionTest.uniqueIds(checkpoint, lastCommitted(checkpoint)) != null)
        .isEqualTo(fromFormat == 2);
    Map<String, String> before = new java.util.TreeMap<>(CheckpointDigest.of(checkpoint));
    before.keySet().removeIf(k -> k.startsWith("_stateshift"));

    MigrateState migration =
        StateShift.get(spark)
            .migrateState(checkpoint.toString())
            .toProvider(to)
            .toPartitions(partitions);
    if (toFormat == 2) {
      migration.toFormatVersion(2);
    } // to the HDFS-backed store: format v1 without asking
    RepartitionPlan plan = migration.plan();
    assertThat(plan.changesProvider()).isTrue();
    assertThat(plan.changesFormat()).isTrue();
    assertThat(plan.targetCheckpointFormatVersion()).isEqualTo(toFormat);
    long undone = migration.execute().batchId();
    assertThat(StateShift.get(spark).rollbackRepartition(checkpoint.toString()).repartitionBatch())
        .isEqualTo(undone);
    Map<String, String> after = new java.util.TreeMap<>(CheckpointDigest.of(checkpoint));
    after.keySet().removeIf(k -> k.startsWith("_stateshift"));
    assertThat(after).isEqualTo(before);

    RepartitionResult result = migration.execute();
    long batch = result.batchId();
    String target = to.equals("rocksdb") ? MigrateOracleTest.ROCKSDB : MigrateOracleTest.HDFS;
    assertThat(result.rowsMoved()).isPositive();
    assertThat(result.stores())
        .allSatisfy(s -> assertThat(s.rowsWritten()).isEqualTo(s.rowsRead()));
    assertThat(Files.readString(checkpoint.resolve("offsets/" + batch)))
        .contains("\"spark.sql.streaming.stateStore.providerClass\":\"" + target + "\"");
    assertThat(Files.readString(checkpoint.resolve("commits/" + batch)))
        .startsWith("v" + toFormat + "\n");
    assertThat(MigrateFormatVersionTest.uniqueIds(checkpoint, batch) != null)
        .isEqualTo(toFormat == 2);
    if (toFormat == 2) {
      MigrateFormatVersionTest.assertOnlyFormat(checkpoint, 2, partitions);
    } else {
      try (Stream<Path> files = Files.walk(checkpoint.resolve("state"))) {
        assertThat(files.map(p -> p.getFileName().toString()))
            .noneMatch(n -> n.matches("\\d+_[^.]+\\.(zip|changelog)"));
      }
    }
    spark.conf().set(MigrateFormatVersionTest.FORMAT, Integer.toString(toFormat));
    try {
      StateAssertions.assertEveryStoreKeyInItsSparkPartition(spark, checkpoint, batch, partitions);
    } finally {
      spark.conf().unset(MigrateFormatVersionTest.FORMAT);
    }
    VerificationReport verified = StateShift.get(spark).verify(checkpoint.toString());
    assertThat(verified.problems()).as(verified.toString()).isEmpty();

    for (int i = FILES_BEFORE; i < ALL_FILES; i++) {
      workload.write(spark, input, i);
    }
    new StreamRun(spark, input).writeFlush(ALL_FILES);
    // the session names the old provider (the offset log wins) and the new format
    List<StreamingQueryProgress> progress =
        workload.run(spark, input, checkpoint, sink, workload.conf(from, toFormat, FIRST));
    assertRunsWith(progress, partitions, workload.storesPerOperator());
    MigrateOracleTest.assertNewVersionsWrittenBy(checkpoint, batch + 1, target);
    assertThat(MigrateFormatVersionTest.uniqueIds(checkpoint, lastCommitted(checkpoint)) != null)
        .isEqualTo(toFormat == 2);
    assertThat(workload.rows(spark, input, sink)).containsExactlyElementsOf(oracle(workload));
  }

  /**
   * Spark's statestore reader on every store (every column family of a join in state format 3,
   * every state variable and the timers of transformWithState): each key in pmod(hash(partition
   * key), n), computed in SQL.
   */
  private void assertEveryKeyInItsSparkPartition(
      Workload workload, Path checkpoint, long batchId, int partitions) {
    if (workload.joinFormat != 3 && workload != Workload.TRANSFORM_WITH_STATE) {
      StateAssertions.assertEveryStoreKeyInItsSparkPartition(
          spark, checkpoint, batchId, partitions);
      return;
    }
    Map<String, Dataset<Row>> stores = new java.util.LinkedHashMap<>();
    if (workload == Workload.TRANSFORM_WITH_STATE) {
      for (String variable : TransformWithStateOracleTest.STATE_VARIABLES) {
        stores.put(
            variable, reader(batchId).option("stateVarName", variable).load(checkpoint.toString()));
      }
      stores.put(
          "timers",
          reader(batchId).option("readRegisteredTimers", true).load(checkpoint.toString()));
    } else {
      for (String family : JoinStateFormat3Test.FAMILIES) {
        stores.put(family, reader(batchId).option("storeName", family).load(checkpoint.toString()));
      }
    }
    long entries = 0;
    for (Map.Entry<String, Dataset<Row>> store : stores.entrySet()) {
      Dataset<Row> state = store.getValue();
      String expected;
      long count = state.count();
      if (workload == Workload.TRANSFORM_WITH_STATE) {
        expected = "pmod(hash(key), " + partitions + ")";
      } else {
        // a keyWithIndexToValue key is the join key and an index
        StructField[] key = ((StructType) state.schema().apply("key").dataType()).fields();
        List<String> joinKey = new ArrayList<>();
        int fields = key.length - (store.getKey().endsWith("keyWithIndexToValue") ? 1 : 0);
        for (int i = 0; i < fields; i++) {
          joinKey.add("key.`" + key[i].name() + "`");
        }
        expected = "pmod(hash(" + String.join(", ", joinKey) + "), " + partitions + ")";
        assertThat(count).as("rows of %s", store.getKey()).isPositive();
      }
      entries += count;
      assertThat(
              state
                  .filter("partition_id != " + expected + " OR partition_id >= " + partitions)
                  .count())
          .as("misplaced keys of %s", store.getKey())
          .isZero();
    }
    assertThat(entries).isPositive();
  }

  private org.apache.spark.sql.DataFrameReader reader(long batchId) {
    return spark.read().format("statestore").option("batchId", batchId).option("operatorId", 0);
  }

  /** The same query over the same files, on a fresh checkpoint, in one uninterrupted run. */
  private List<String> oracle(Workload workload) {
    return ORACLES.computeIfAbsent(
        workload,
        w -> {
          Path dir = oracleDir.resolve(w.name());
          Path input = dir.resolve("input");
          for (int i = 0; i < ALL_FILES; i++) {
            w.write(spark, input, i);
          }
          new StreamRun(spark, input).writeFlush(ALL_FILES);
          w.run(
              spark,
              input,
              dir.resolve("checkpoint"),
              dir.resolve("sink"),
              w.conf(StateStores.ROCKSDB, 1, 2));
          List<String> rows = w.rows(spark, input, dir.resolve("sink"));
          assertThat(rows).isNotEmpty();
          return rows;
        });
  }

  private static void assertRunsWith(
      List<StreamingQueryProgress> progress, int partitions, int storesPerOperator) {
    assertThat(progress).isNotEmpty();
    for (StreamingQueryProgress p : progress) {
      for (StateOperatorProgress op : p.stateOperators()) {
        assertThat(op.numShufflePartitions()).isEqualTo(partitions);
        assertThat(op.numStateStoreInstances()).isEqualTo((long) partitions * storesPerOperator);
      }
    }
  }

  static long lastCommitted(Path checkpoint) throws java.io.IOException {
    try (Stream<Path> commits = Files.list(checkpoint.resolve("commits"))) {
      return commits
          .map(p -> p.getFileName().toString())
          .filter(n -> n.matches("\\d+"))
          .mapToLong(Long::parseLong)
          .max()
          .orElseThrow();
    }
  }
}
