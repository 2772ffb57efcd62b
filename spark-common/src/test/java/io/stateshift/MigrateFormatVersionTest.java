package io.stateshift;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.stateshift.StateShiftException.Reason;
import io.stateshift.cli.StateShiftCli;
import io.stateshift.protocol.FailPoints;
import io.stateshift.testing.CheckpointDigest;
import io.stateshift.testing.ChildJvm;
import io.stateshift.testing.SparkTestSession;
import io.stateshift.testing.StateStores;
import io.stateshift.testing.StatefulQueries;
import io.stateshift.testing.StreamRun;
import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.stream.Stream;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.streaming.StreamingQueryProgress;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * The oracle for migrations of RocksDB's state checkpoint format ({@code checkpointFormatVersion}),
 * which Spark cannot switch at restart in either direction: a query stopped, migrated from v1 to v2
 * (with a partition change in the same pass) or from v2 to v1, and restarted with the new format in
 * its session writes exactly what it writes when run without interruption over the same input;
 * Spark's statestore reader finds every key in the partition Spark assigns it; commits/N+1 names
 * the new versions' ids under v2 and none under v1; the partition folders hold only version files
 * of the new format.
 */
@Tag("checkpoint-v2") // state checkpoint format v2, which Spark 3.5 lacks
class MigrateFormatVersionTest {
  static final String FORMAT = "spark.sql.streaming.stateStore.checkpointFormatVersion";
  private static final ObjectMapper JSON = new ObjectMapper();
  private static final StatefulQueries QUERY = StatefulQueries.WINDOWED_COUNT;

  private final SparkSession spark = SparkTestSession.get();

  @TempDir Path tmp;

  static Map<String, String> conf(int format, int partitions) {
    Map<String, String> conf =
        new HashMap<>(StateStores.ROCKSDB_CHANGELOG.withPartitions(partitions));
    conf.put(FORMAT, Integer.toString(format));
    conf.put("spark.sql.streaming.stateStore.minDeltasForSnapshot", "2");
    return conf;
  }

  @Test
  void formatV1ToV2WithAPartitionChangeWritesExactlyTheUninterruptedOutput() throws Exception {
    migrateAndContinue(1, 2, 4, 3);
  }

  @Test
  void formatV2ToV1WritesExactlyTheUninterruptedOutput() throws Exception {
    migrateAndContinue(2, 1, 4, 4);
  }

  private void migrateAndContinue(int fromFormat, int toFormat, int from, int to) throws Exception {
    StreamRun run = new StreamRun(spark, tmp.resolve("input"));
    Path checkpoint = tmp.resolve("checkpoint");
    Path sink = tmp.resolve("sink");
    for (int i = 0; i < 3; i++) {
      run.writeEvents(i, 300, 40);
    }
    run.runAvailable(QUERY, checkpoint, sink, conf(fromFormat, from));
    long base = lastCommit(checkpoint);
    assertThat(uniqueIds(checkpoint, base) != null).isEqualTo(fromFormat == 2);

    Cli dryRun =
        cli(
            "migrate",
            "--checkpoint",
            checkpoint.toString(),
            "--format-version",
            Integer.toString(toFormat),
            "--partitions",
            Integer.toString(to),
            "--dry-run",
            "--json");
    assertThat(dryRun.exit()).as(dryRun.err()).isZero();
    JsonNode plan = JSON.readTree(dryRun.out()).get("plan");
    assertThat(plan.get("checkpointFormatVersion").asInt()).isEqualTo(fromFormat);
    assertThat(plan.get("targetCheckpointFormatVersion").asInt()).isEqualTo(toFormat);
    // RocksDB's size includes the SST files its version zips name
    assertThat(plan.get("stateFiles").asLong()).isGreaterThan(2L * from);
    assertThat(plan.get("stateBytes").asLong()).isPositive();
    JsonNode work = plan.get("estimate").get("work");
    assertThat(plan.get("estimate").get("seconds").asDouble()).isPositive();
    assertThat(work.get("filesRead").asLong()).isEqualTo(plan.get("stateFiles").asLong());
    assertThat(work.get("filesWritten").asLong()).isEqualTo(2 * work.get("newStores").asLong());
    assertThat(JSON.readTree(dryRun.out()).get("sessionNotes").toString())
        .contains(FORMAT)
        .contains("state checkpoint format v" + toFormat);

    // a rollback returns to the old format byte for byte, the retired version files included
    Map<String, String> before = withoutStateshift(CheckpointDigest.of(checkpoint));
    RepartitionResult undone = migrate(checkpoint, toFormat, from, to);
    assertOnlyFormat(checkpoint, toFormat, to);
    assertThat(StateShift.get(spark).rollbackRepartition(checkpoint.toString()).repartitionBatch())
        .isEqualTo(undone.batchId());
    assertThat(withoutStateshift(CheckpointDigest.of(checkpoint))).isEqualTo(before);

    RepartitionResult result = migrate(checkpoint, toFormat, from, to);
    assertThat(result.plan().changesFormat()).isTrue();
    assertThat(result.plan().changesProvider()).isFalse();
    assertThat(result.stores())
        .allSatisfy(
            s -> {
              assertThat(s.rowsRead()).isPositive();
              assertThat(s.rowsWritten()).isEqualTo(s.rowsRead());
            });
    long batch = result.batchId();
    JsonNode ids = uniqueIds(checkpoint, batch);
    // Spark's commit log version follows the format: version 1 cannot carry ids
    assertThat(Files.readString(checkpoint.resolve("commits/" + batch)))
        .startsWith("v" + toFormat + "\n");
    if (toFormat == 2) {
      assertThat(ids).isNotNull();
      ids.properties().forEach(op -> assertThat(op.getValue().size()).isEqualTo(to));
    } else {
      assertThat(ids).isNull();
    }
    assertOnlyFormat(checkpoint, toFormat, to);

    spark.conf().set(FORMAT, Integer.toString(toFormat));
    try {
      StateAssertions.assertEveryKeyInItsSparkPartition(spark, checkpoint, batch, to);
    } finally {
      spark.conf().unset(FORMAT);
    }
    assertThat(StateShift.get(spark).verify(checkpoint.toString()).problems()).isEmpty();

    for (int i = 3; i < 6; i++) {
      run.writeEvents(i, 300, 40);
    }
    run.writeFlush(6);
    // the session names the new format: Spark does not record it in the checkpoint
    List<StreamingQueryProgress> progress =
        run.runAvailable(QUERY, checkpoint, sink, conf(toFormat, from));
    assertThat(progress).isNotEmpty();
    assertThat(StreamRun.stateInstances(progress)).containsOnly((long) to);
    assertThat(run.sinkRows(sink, QUERY)).containsExactlyElementsOf(oracle());
    long last = lastCommit(checkpoint);
    assertThat(last).isGreaterThan(batch);
    assertThat(uniqueIds(checkpoint, last) != null).isEqualTo(toFormat == 2);
  }

  /**
   * SIGKILL (in a separate JVM) during the switch, once per direction: from v1 to v2 with the new
   * files in place but no commits/N+1 yet, from v2 to v1 while the old format's files leave the
   * partition folders. The query restarted with StateShiftExtensions and the new format finishes
   * the attempt (never a mix of formats) and writes the uninterrupted output.
   */
  @ParameterizedTest(name = "SIGKILL at {2}: format v{0} -> v{1}")
  @CsvSource({"1, 2, published", "2, 1, " + FailPoints.RETIRED_FORMAT})
  void killedDuringTheSwitchIsFinishedInTheNewFormat(int fromFormat, int toFormat, String point)
      throws Exception {
    StreamRun run = new StreamRun(spark, tmp.resolve("input"));
    Path checkpoint = tmp.resolve("checkpoint");
    Path sink = tmp.resolve("sink");
    for (int i = 0; i < 3; i++) {
      run.writeEvents(i, 300, 40);
    }
    run.runAvailable(QUERY, checkpoint, sink, conf(fromFormat, 4));
    long base = lastCommit(checkpoint);
    int exit =
        ChildJvm.runCli(
            tmp.resolve("child.log"),
            List.of("-D" + FailPoints.PROPERTY + "=" + point),
            "migrate",
            "--checkpoint",
            checkpoint.toString(),
            "--format-version",
            Integer.toString(toFormat),
            "--partitions",
            "3",
            "--assume-stopped"); // the query just ran in this JVM, which a child cannot know
    assertThat(exit)
        .as("exit code; log: %s", Files.readString(tmp.resolve("child.log")))
        .isEqualTo(137);
    assertThat(checkpoint.resolve("_stateshift/journal")).exists();

    for (int i = 3; i < 6; i++) {
      run.writeEvents(i, 300, 40);
    }
    run.writeFlush(6);
    List<StreamingQueryProgress> progress =
        run.runAvailable(QUERY, checkpoint, sink, conf(toFormat, 4));
    assertThat(StreamRun.stateInstances(progress)).containsOnly(3L);
    assertThat(checkpoint.resolve("_stateshift/journal")).doesNotExist();
    assertThat(Files.readString(checkpoint.resolve("commits/" + (base + 1))))
        .startsWith("v" + toFormat + "\n");
    assertThat(uniqueIds(checkpoint, lastCommit(checkpoint)) != null).isEqualTo(toFormat == 2);
    assertThat(StateShift.get(spark).verify(checkpoint.toString()).problems()).isEmpty();
    assertThat(run.sinkRows(sink, QUERY)).containsExactlyElementsOf(oracle());
  }

  private RepartitionResult migrate(Path checkpoint, int toFormat, int from, int to) {
    var migration = StateShift.get(spark).migrateState(checkpoint.toString());
    migration.toFormatVersion(toFormat);
    if (to != from) {
      migration.toPartitions(to);
    }
    return migration.execute();
  }

  private static Map<String, String> withoutStateshift(Map<String, String> digest) {
    Map<String, String> out = new TreeMap<>(digest);
    out.keySet().removeIf(k -> k.startsWith("_stateshift"));
    return out;
  }

  /**
   * Migrations that change nothing, or that Spark could not run, are refused before anything is
   * written; the command line checks its options.
   */
  @Test
  void noOpAndImpossibleFormatMigrationsAreRefusedAndTheCheckpointIsUnchanged() {
    StreamRun run = new StreamRun(spark, tmp.resolve("input"));
    Path hdfs = tmp.resolve("hdfs");
    Path rocksDb = tmp.resolve("rocksdb");
    run.writeEvents(0, 100, 20);
    run.runAvailable(QUERY, hdfs, tmp.resolve("sink-hdfs"), StateStores.HDFS.withPartitions(2));
    run.runAvailable(QUERY, rocksDb, tmp.resolve("sink-rocksdb"), conf(1, 2));
    Map<String, String> hdfsBefore = CheckpointDigest.of(hdfs);
    Map<String, String> rocksDbBefore = CheckpointDigest.of(rocksDb);

    assertThatThrownBy(
            () ->
                StateShift.get(spark)
                    .migrateState(rocksDb.toString())
                    .toFormatVersion(1)
                    .toPartitions(3)
                    .execute())
        .isInstanceOfSatisfying(
            StateShiftException.class,
            e -> {
              assertThat(e.reason()).isEqualTo(Reason.SAME_PROVIDER);
              assertThat(e.getMessage())
                  .contains("state checkpoint format v1")
                  .contains("nothing to migrate");
            });
    assertThatThrownBy(() -> StateShift.get(spark).migrateState(rocksDb.toString()).plan())
        .isInstanceOfSatisfying(
            StateShiftException.class, e -> assertThat(e.getMessage()).contains("toFormatVersion"));
    assertThatThrownBy(
            () -> StateShift.get(spark).migrateState(rocksDb.toString()).toFormatVersion(3))
        .isInstanceOfSatisfying(
            StateShiftException.class, e -> assertThat(e.getMessage()).contains("pass 1 or 2"));
    Cli toV2OnHdfs =
        cli("migrate", "--checkpoint", hdfs.toString(), "--format-version", "2", "--json");
    assertThat(toV2OnHdfs.exit()).isEqualTo(2);
    assertThat(toV2OnHdfs.out()).contains("UNSUPPORTED_CHECKPOINT").contains("RocksDB only");
    Cli badValue =
        cli("migrate", "--checkpoint", rocksDb.toString(), "--format-version", "3", "--dry-run");
    assertThat(badValue.exit()).isEqualTo(2);
    assertThat(badValue.err() + badValue.out()).contains("takes 1 or 2, got '3'");
    Cli nothing = cli("migrate", "--checkpoint", rocksDb.toString(), "--dry-run");
    assertThat(nothing.exit()).isEqualTo(2);
    assertThat(nothing.err() + nothing.out()).contains("--format-version");

    assertThat(CheckpointDigest.of(hdfs)).isEqualTo(hdfsBefore);
    assertThat(CheckpointDigest.of(rocksDb)).isEqualTo(rocksDbBefore);
  }

  /** Every version file in the partition folders is named as {@code format} names them. */
  static void assertOnlyFormat(Path checkpoint, int format, int partitions) throws Exception {
    try (Stream<Path> walk = Files.walk(checkpoint.resolve("state"))) {
      List<String> versions =
          walk.filter(Files::isRegularFile)
              .filter(p -> !p.toString().contains("/SSTs/") && !p.toString().contains("_metadata"))
              .map(p -> p.getFileName().toString())
              .filter(n -> n.matches("\\d+(_[^.]+)?\\.(zip|changelog)"))
              .toList();
      assertThat(versions).isNotEmpty();
      assertThat(versions)
          .allSatisfy(
              n ->
                  assertThat(n.contains("_"))
                      .as("%s under format v%s", n, format)
                      .isEqualTo(format == 2));
    }
    try (Stream<Path> dirs = Files.list(checkpoint.resolve("state/0"))) {
      assertThat(dirs.map(p -> p.getFileName().toString()).filter(n -> n.matches("\\d+")))
          .hasSize(partitions);
    }
  }

  private static long lastCommit(Path checkpoint) throws Exception {
    try (var files = Files.list(checkpoint.resolve("commits"))) {
      return files
          .map(p -> p.getFileName().toString())
          .filter(n -> n.matches("\\d+"))
          .mapToLong(Long::parseLong)
          .max()
          .orElseThrow();
    }
  }

  static JsonNode uniqueIds(Path checkpoint, long batch) throws Exception {
    String text = Files.readString(checkpoint.resolve("commits/" + batch));
    JsonNode node = JSON.readTree(text.substring(text.indexOf('\n') + 1)).get("stateUniqueIds");
    return node == null || node.isNull() ? null : node;
  }

  /** The same query over the same files, uninterrupted (format v1, HDFS-backed store). */
  private List<String> oracle() {
    Path dir = tmp.resolve("oracle");
    StreamRun run = new StreamRun(spark, dir.resolve("input"));
    for (int i = 0; i < 6; i++) {
      run.writeEvents(i, 300, 40);
    }
    run.writeFlush(6);
    run.runAvailable(
        QUERY, dir.resolve("checkpoint"), dir.resolve("sink"), StateStores.HDFS.withPartitions(2));
    List<String> rows = run.sinkRows(dir.resolve("sink"), QUERY);
    assertThat(rows).isNotEmpty();
    return rows;
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
}
