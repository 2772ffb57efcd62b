package io.stateshift;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.stateshift.StateShiftException.Reason;
import io.stateshift.cli.StateShiftCli;
import io.stateshift.spark.line.LineFeatures;
import io.stateshift.spark.line.StateCalls;
import io.stateshift.testing.CheckpointDigest;
import io.stateshift.testing.OperatorQueries;
import io.stateshift.testing.OperatorRun;
import io.stateshift.testing.SparkFeatures;
import io.stateshift.testing.SparkTestSession;
import io.stateshift.testing.StateStores;
import io.stateshift.testing.StatefulQueries;
import io.stateshift.testing.StreamRun;
import io.stateshift.testing.TestSets;
import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.streaming.StateOperatorProgress;
import org.apache.spark.sql.streaming.StreamingQueryProgress;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * The oracle for migrations between the HDFS-backed store and RocksDB, for every operator family
 * the repartition supports (aggregation, deduplication, stream-stream joins, session windows,
 * flatMapGroupsWithState; transformWithState is RocksDB only and its migration refused): a query
 * stopped, migrated (with or without a partition change) and restarted writes exactly what it
 * writes when run without interruption over the same input; Spark's own statestore reader finds
 * every key in the partition Spark assigns it; the restarted query writes its new state versions
 * with the new provider although its session still names the old one (the offset log wins).
 */
class MigrateOracleTest {
  static final int FIRST = 3;
  static final int FILES_BEFORE = 2;
  static final int ALL_FILES = 4;

  private final SparkSession spark = SparkTestSession.get();
  private static final Map<Workload, List<String>> ORACLES = new ConcurrentHashMap<>();

  @TempDir static Path oracleDir;

  @TempDir Path tmp;

  /**
   * The queries the migrations run under, one or more per operator family the repartition supports
   * (transformWithState and join state format 3 run on RocksDB only: their refusal is below), each
   * over small input (hundreds of keys).
   */
  enum Workload {
    WINDOWED_COUNT(StatefulQueries.WINDOWED_COUNT, null),
    DEDUP(StatefulQueries.DEDUP, null),
    DEDUP_WITHIN_WATERMARK(StatefulQueries.DEDUP_WITHIN_WATERMARK, null),
    JOIN(null, OperatorQueries.JOIN_INNER),
    JOIN_FULL_OUTER(null, OperatorQueries.JOIN_FULL_OUTER),
    SESSION_WINDOW(null, OperatorQueries.SESSION_WINDOW_COUNT),
    FLAT_MAP_GROUPS_WITH_STATE(null, OperatorQueries.FLAT_MAP_EVENT_TIME_TIMEOUT);

    private final StatefulQueries stateful;
    private final OperatorQueries operator;

    Workload(StatefulQueries stateful, OperatorQueries operator) {
      this.stateful = stateful;
      this.operator = operator;
    }

    void write(SparkSession spark, Path input, int index) {
      if (operator == null) {
        new StreamRun(spark, input).writeEvents(index, 200, 40);
      } else if (operator.isJoin()) {
        new OperatorRun(spark, input).writeEvents(index, 150, 25);
      } else {
        new OperatorRun(spark, input).writeRotatingEvents(index, 120);
      }
    }

    void writeFlush(SparkSession spark, Path input, int index) {
      new StreamRun(spark, input).writeFlush(index);
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

    int storesPerOperator() {
      return operator != null && operator.isJoin() ? 4 : 1;
    }

    /** The workloads the first migration oracle covered; the others run both ways too. */
    boolean original() {
      return this == WINDOWED_COUNT || this == DEDUP || this == JOIN;
    }
  }

  /**
   * Both directions for every workload with a partition change, and for the first three workloads
   * without one; by default every workload once with a partition change, the directions taking
   * turns, all under -Pextended. The restart after a migration to RocksDB turns changelog
   * checkpointing on in half the cases: the session decides it, the migrated snapshot loads either
   * way.
   */
  static Stream<Arguments> scenarios() {
    List<Arguments> out = new ArrayList<>();
    List<Boolean> inDefault = new ArrayList<>();
    int turn = 0;
    for (Workload w : Workload.values()) {
      if (w == Workload.JOIN_FULL_OUTER) {
        continue; // the join's code paths, with outer rows: extended only
      }
      if (w.original()) {
        out.add(Arguments.of(w, StateStores.HDFS, "rocksdb", FIRST, false));
        inDefault.add(false);
      }
      out.add(Arguments.of(w, StateStores.HDFS, "rocksdb", w == Workload.DEDUP ? 2 : 5, true));
      inDefault.add(turn % 2 == 0);
      if (w.original()) {
        out.add(Arguments.of(w, StateStores.ROCKSDB, "hdfs", FIRST, false));
        inDefault.add(false);
      }
      out.add(Arguments.of(w, StateStores.ROCKSDB_CHANGELOG, "hdfs", 2, false));
      inDefault.add(turn % 2 == 1);
      turn++;
    }
    Stream<Arguments> cases = TestSets.subset(out, inDefault::get);
    // a line's cover: the first default scenario from the HDFS-backed store to RocksDB
    return TestSets.cover()
        ? cases.filter(c -> c.get()[1] == StateStores.HDFS && "rocksdb".equals(c.get()[2])).limit(1)
        : cases;
  }

  /**
   * The workloads added after the first three, both directions without a partition change, and the
   * full outer join with one too: the code paths of the scenarios above, so only in the extended
   * suite.
   */
  static Stream<Arguments> extendedScenarios() {
    List<Arguments> out = new ArrayList<>();
    out.add(Arguments.of(Workload.JOIN_FULL_OUTER, StateStores.HDFS, "rocksdb", 5, true));
    out.add(
        Arguments.of(Workload.JOIN_FULL_OUTER, StateStores.ROCKSDB_CHANGELOG, "hdfs", 2, false));
    for (Workload w : Workload.values()) {
      if (!w.original()) {
        out.add(Arguments.of(w, StateStores.HDFS, "rocksdb", FIRST, false));
        out.add(Arguments.of(w, StateStores.ROCKSDB, "hdfs", FIRST, false));
      }
    }
    return out.stream();
  }

  @Tag("extended")
  @ParameterizedTest(name = "{0}: {1} -> {2}, 3 -> {3} partitions, changelog after: {4}")
  @MethodSource("extendedScenarios")
  void migratedQueryWritesExactlyTheUninterruptedOutputExtended(
      Workload workload, StateStores from, String to, int partitions, boolean changelogAfter) {
    migratedQueryWritesExactlyTheUninterruptedOutput(
        workload, from, to, partitions, changelogAfter);
  }

  @Tag("cover")
  @ParameterizedTest(name = "{0}: {1} -> {2}, 3 -> {3} partitions, changelog after: {4}")
  @MethodSource("scenarios")
  void migratedQueryWritesExactlyTheUninterruptedOutput(
      Workload workload, StateStores from, String to, int partitions, boolean changelogAfter) {
    Path input = tmp.resolve("input");
    Path checkpoint = tmp.resolve("checkpoint");
    Path sink = tmp.resolve("sink");
    for (int i = 0; i < FILES_BEFORE; i++) {
      workload.write(spark, input, i);
    }
    workload.run(spark, input, checkpoint, sink, from.withPartitions(FIRST));

    MigrateState migration =
        StateShift.get(spark).migrateState(checkpoint.toString()).toProvider(to);
    if (partitions != FIRST) {
      migration.toPartitions(partitions);
    }
    if (workload == Workload.SESSION_WINDOW
        && !io.stateshift.spark.state.StateSources.OPERATOR_METADATA) {
      // Spark 3.5 writes no operator metadata: a session window's placement cannot be derived,
      // so it is refused as bad input and the checkpoint left byte for byte as it was
      Map<String, String> before = CheckpointDigest.of(checkpoint);
      assertThatThrownBy(migration::execute)
          .isInstanceOf(StateShiftException.class)
          .hasMessageContaining("no operator metadata")
          .hasMessageContaining("sessionStartTime")
          .satisfies(e -> assertThat(((StateShiftException) e).reason().isBadInput()).isTrue());
      assertThat(CheckpointDigest.of(checkpoint)).isEqualTo(before);
      return;
    }
    RepartitionResult result = migration.execute();
    String target = providerClass(to);
    assertThat(result.plan().changesProvider()).isTrue();
    assertThat(result.plan().targetStateStoreProvider()).isEqualTo(target);
    assertThat(result.fromPartitions()).isEqualTo(FIRST);
    assertThat(result.toPartitions()).isEqualTo(partitions);
    assertThat(result.rowsMoved()).isPositive();
    assertThat(result.stores())
        .allSatisfy(s -> assertThat(s.rowsWritten()).isEqualTo(s.rowsRead()));
    assertThat(result.toString()).startsWith("Migrated ");
    assertThat(readText(checkpoint.resolve("offsets/" + result.batchId())))
        .contains("\"spark.sql.streaming.stateStore.providerClass\":\"" + target + "\"");
    // Spark's own reader opens the migrated state with the provider the offset log names
    StateAssertions.assertEveryStoreKeyInItsSparkPartition(
        spark, checkpoint, result.batchId(), partitions);
    StateAssertions.assertMetadataReports(spark, checkpoint, partitions);
    VerificationReport verified = StateShift.get(spark).verify(checkpoint.toString());
    assertThat(verified.ok()).as(verified.toString()).isTrue();
    assertThat(StateShift.get(spark).history(checkpoint.toString()))
        .anySatisfy(h -> assertThat(h.path()).startsWith("migrate "));
    if (from == StateStores.HDFS) {
      // HDFS-backed to RocksDB moves the files' bytes, re-encoded, without a shuffle; where the
      // line's RocksDB fast paths are unavailable, through SST ingestion behind the shuffle
      String path =
          StateCalls.ROCKSDB_FAST_PATHS_UNAVAILABLE == null
              ? "hdfs-to-rocksdb-file-exchange"
              : "rocksdb-sst-ingest";
      assertThat(StateShift.get(spark).history(checkpoint.toString()))
          .anySatisfy(h -> assertThat(h.path()).contains(path));
    }

    for (int i = FILES_BEFORE; i < ALL_FILES; i++) {
      workload.write(spark, input, i);
    }
    workload.writeFlush(spark, input, ALL_FILES);
    // The session still names the old provider and count: the checkpoint's must win.
    Map<String, String> restart = new HashMap<>(from.withPartitions(FIRST));
    if (changelogAfter) {
      restart.put(ROCKSDB_CHANGELOG, "true");
    }
    List<StreamingQueryProgress> progress = workload.run(spark, input, checkpoint, sink, restart);
    assertRunsWith(progress, partitions, workload.storesPerOperator());
    assertNewVersionsWrittenBy(checkpoint, result.batchId() + 1, target);
    CheckpointReport inspected = StateShift.get(spark).inspect(checkpoint.toString());
    assertThat(inspected.stateStoreProvider()).isEqualTo(target);
    assertThat(inspected.partitions()).isEqualTo(partitions);
    assertThat(inspected.changelogCheckpointing())
        .isEqualTo(target.equals(ROCKSDB) ? Optional.of(changelogAfter) : Optional.empty());
    assertThat(inspected.toString()).contains("state store:     " + target);

    assertThat(workload.rows(spark, input, sink)).containsExactlyElementsOf(oracle(workload));
  }

  /**
   * A rollback of a migration puts back the old provider's layout, byte for byte, and the query
   * restarted on it runs on the old provider and still writes the uninterrupted output.
   */
  @Test
  void aRolledBackMigrationRestoresTheOldProviderAndTheQueryStillMatchesTheOracle() {
    Workload workload = Workload.WINDOWED_COUNT;
    Path input = tmp.resolve("input");
    Path checkpoint = tmp.resolve("checkpoint");
    Path sink = tmp.resolve("sink");
    for (int i = 0; i < FILES_BEFORE; i++) {
      workload.write(spark, input, i);
    }
    workload.run(spark, input, checkpoint, sink, StateStores.HDFS.withPartitions(FIRST));
    Map<String, String> before = withoutStateshift(CheckpointDigest.of(checkpoint));

    RepartitionResult result =
        StateShift.get(spark)
            .migrateState(checkpoint.toString())
            .toProvider("rocksdb")
            .toPartitions(4)
            .execute();
    assertThat(withoutStateshift(CheckpointDigest.of(checkpoint))).isNotEqualTo(before);
    RepartitionPlan undone = StateShift.get(spark).rollbackRepartition(checkpoint.toString());
    assertThat(undone.repartitionBatch()).isEqualTo(result.batchId());
    assertThat(withoutStateshift(CheckpointDigest.of(checkpoint))).isEqualTo(before);

    for (int i = FILES_BEFORE; i < ALL_FILES; i++) {
      workload.write(spark, input, i);
    }
    workload.writeFlush(spark, input, ALL_FILES);
    assertRunsWith(
        workload.run(spark, input, checkpoint, sink, StateStores.HDFS.withPartitions(FIRST)),
        FIRST,
        1);
    assertNewVersionsWrittenBy(checkpoint, result.batchId(), HDFS);
    assertThat(workload.rows(spark, input, sink)).containsExactlyElementsOf(oracle(workload));
  }

  /**
   * A migration to the provider the checkpoint has names repartition; one to the HDFS-backed store
   * of an operator that needs RocksDB (transformWithState, join state format 3) names the operator;
   * neither writes anything, from the API or the command line. A dry run writes nothing either.
   */
  @Test
  void noOpAndImpossibleMigrationsAreRefusedAndTheCheckpointIsUnchanged() {
    Path input = tmp.resolve("input");
    Path checkpoint = tmp.resolve("checkpoint");
    Workload.DEDUP.write(spark, input, 0);
    Workload.DEDUP.run(
        spark, input, checkpoint, tmp.resolve("sink"), StateStores.HDFS.withPartitions(FIRST));
    Map<String, String> before = CheckpointDigest.of(checkpoint);

    assertThatThrownBy(
            () ->
                StateShift.get(spark)
                    .migrateState(checkpoint.toString())
                    .toProvider("hdfs")
                    .toPartitions(5)
                    .execute())
        .isInstanceOfSatisfying(
            StateShiftException.class,
            e -> {
              assertThat(e.reason()).isEqualTo(Reason.SAME_PROVIDER);
              assertThat(e.getMessage())
                  .contains("already in the HDFS-backed state store")
                  .contains("stateshift repartition --checkpoint");
            });
    assertThatThrownBy(
            () -> StateShift.get(spark).migrateState(checkpoint.toString()).toProvider("leveldb"))
        .isInstanceOfSatisfying(
            StateShiftException.class,
            e -> assertThat(e.getMessage()).contains("pass rocksdb or hdfs"));
    Cli same =
        cli("migrate", "--checkpoint", checkpoint.toString(), "--provider", "hdfs", "--json");
    assertThat(same.exit()).isEqualTo(2);
    assertThat(same.out()).contains("SAME_PROVIDER").contains("stateshift repartition");
    Cli dryRun =
        cli(
            "migrate",
            "--checkpoint",
            checkpoint.toString(),
            "--provider",
            "rocksdb",
            "--partitions",
            "4",
            "--dry-run");
    assertThat(dryRun.exit()).as(dryRun.err()).isZero();
    assertThat(dryRun.out())
        .contains("state store:       " + HDFS + " -> " + ROCKSDB)
        .contains("partitions:        3 -> 4")
        .contains("dry run: nothing was written")
        .contains("Nothing to set for the provider")
        .contains(ROCKSDB_CHANGELOG);
    assertThat(CheckpointDigest.of(checkpoint)).isEqualTo(before);

    // transformWithState keeps its state in RocksDB column families: RocksDB only (refused
    // altogether where the line cannot move it)
    if (SparkFeatures.transformWithState(spark)) {
      OperatorRun tws = new OperatorRun(spark, tmp.resolve("tws-input"));
      Path twsCheckpoint = tmp.resolve("tws-checkpoint");
      tws.writeRotatingEvents(0, 120);
      Map<String, String> conf = new HashMap<>(StateStores.ROCKSDB.withPartitions(FIRST));
      conf.put("spark.sql.streaming.noDataMicroBatches.enabled", "false");
      tws.runAvailable(
          OperatorQueries.TWS_PROCESSING_TIME, twsCheckpoint, tmp.resolve("tws-sink"), conf);
      Map<String, String> twsBefore = CheckpointDigest.of(twsCheckpoint);
      assertThatThrownBy(
              () ->
                  StateShift.get(spark)
                      .migrateState(twsCheckpoint.toString())
                      .toProvider("hdfs")
                      .execute())
          .isInstanceOfSatisfying(
              StateShiftException.class,
              e -> {
                assertThat(e.reason()).isEqualTo(Reason.UNSUPPORTED_OPERATOR);
                assertThat(e.getMessage())
                    .contains("(transformWithState)")
                    .contains(
                        LineFeatures.TRANSFORM_WITH_STATE
                            ? "RocksDB only"
                            : "cannot move transformWithState state")
                    .contains("The checkpoint was not changed");
              });
      Cli refused =
          cli("migrate", "--checkpoint", twsCheckpoint.toString(), "--provider", "hdfs", "--json");
      assertThat(refused.exit()).isEqualTo(2);
      assertThat(refused.out()).contains("UNSUPPORTED_OPERATOR");
      assertThat(CheckpointDigest.of(twsCheckpoint)).isEqualTo(twsBefore);
    }

    // so does a stream-stream join in state format 3, where Spark has it (4.1 and later)
    if (SparkFeatures.joinStateFormat(spark, 3)) {
      OperatorRun join = new OperatorRun(spark, tmp.resolve("join-input"));
      Path joinCheckpoint = tmp.resolve("join-checkpoint");
      join.writeEvents(0, 150, 25);
      Map<String, String> joinConf = new HashMap<>(StateStores.ROCKSDB.withPartitions(FIRST));
      joinConf.put("spark.sql.streaming.join.stateFormatVersion", "3");
      join.runAvailable(
          OperatorQueries.JOIN_INNER, joinCheckpoint, tmp.resolve("join-sink"), joinConf);
      Map<String, String> joinBefore = CheckpointDigest.of(joinCheckpoint);
      assertThatThrownBy(
              () ->
                  StateShift.get(spark)
                      .migrateState(joinCheckpoint.toString())
                      .toProvider("hdfs")
                      .toPartitions(2)
                      .execute())
          .isInstanceOfSatisfying(
              StateShiftException.class,
              e -> {
                assertThat(e.reason()).isEqualTo(Reason.UNSUPPORTED_OPERATOR);
                assertThat(e.getMessage()).contains("(stream-stream join, state format 3)");
              });
      assertThat(CheckpointDigest.of(joinCheckpoint)).isEqualTo(joinBefore);
    }
  }

  // ---- helpers ----

  static final String HDFS =
      "org.apache.spark.sql.execution.streaming.state.HDFSBackedStateStoreProvider";
  static final String ROCKSDB =
      "org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider";
  static final String ROCKSDB_CHANGELOG =
      "spark.sql.streaming.stateStore.rocksdb.changelogCheckpointing.enabled";

  private static String providerClass(String name) {
    return name.equals("rocksdb") ? ROCKSDB : HDFS;
  }

  private record Cli(int exit, String out, String err) {}

  private static Cli cli(String... args) {
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    ByteArrayOutputStream err = new ByteArrayOutputStream();
    int exit =
        new StateShiftCli(
                new PrintStream(out, true, StandardCharsets.UTF_8),
                new PrintStream(err, true, StandardCharsets.UTF_8))
            .run(args);
    return new Cli(
        exit, out.toString(StandardCharsets.UTF_8), err.toString(StandardCharsets.UTF_8));
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
          w.writeFlush(spark, input, ALL_FILES);
          w.run(
              spark,
              input,
              dir.resolve("checkpoint"),
              dir.resolve("sink"),
              StateStores.HDFS.withPartitions(2));
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

  private static final Pattern ROCKSDB_VERSION =
      Pattern.compile("(\\d+)(_[^.]*)?\\.(zip|changelog)");
  private static final Pattern HDFS_VERSION = Pattern.compile("(\\d+)\\.(delta|snapshot)");

  /**
   * The state versions after {@code version} in the folders of partition 0 of operator 0 are the
   * files of {@code provider} only, and there are some: the restarted query ran on it.
   */
  static void assertNewVersionsWrittenBy(Path checkpoint, long version, String provider) {
    Map<String, Long> newer = new TreeMap<>();
    try (Stream<Path> files = Files.walk(checkpoint.resolve("state/0/0"))) {
      files
          .filter(Files::isRegularFile)
          .forEach(
              f -> {
                String name = f.getFileName().toString();
                for (Pattern p : List.of(ROCKSDB_VERSION, HDFS_VERSION)) {
                  Matcher m = p.matcher(name);
                  if (m.matches() && Long.parseLong(m.group(1)) > version) {
                    newer.put(checkpoint.relativize(f).toString(), Long.parseLong(m.group(1)));
                  }
                }
              });
    } catch (java.io.IOException e) {
      throw new java.io.UncheckedIOException(e);
    }
    Pattern own = provider.equals(ROCKSDB) ? ROCKSDB_VERSION : HDFS_VERSION;
    assertThat(newer).isNotEmpty();
    assertThat(newer.keySet())
        .allSatisfy(
            f -> assertThat(own.matcher(Path.of(f).getFileName().toString()).matches()).isTrue());
  }

  private static Map<String, String> withoutStateshift(Map<String, String> digest) {
    Map<String, String> out = new TreeMap<>(digest);
    out.keySet().removeIf(k -> k.startsWith("_stateshift"));
    return out;
  }

  private static String readText(Path file) {
    try {
      return Files.readString(file);
    } catch (java.io.IOException e) {
      throw new java.io.UncheckedIOException(e);
    }
  }
}
