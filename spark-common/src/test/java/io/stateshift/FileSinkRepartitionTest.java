package io.stateshift;

import static org.apache.spark.sql.functions.col;
import static org.apache.spark.sql.functions.concat_ws;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.stateshift.doctor.DoctorReport;
import io.stateshift.doctor.Finding;
import io.stateshift.protocol.FailPoints;
import io.stateshift.testing.CheckpointDigest;
import io.stateshift.testing.ChildJvm;
import io.stateshift.testing.LineApis;
import io.stateshift.testing.SessionConf;
import io.stateshift.testing.SparkTestSession;
import io.stateshift.testing.StateStores;
import io.stateshift.testing.StatefulQueries;
import io.stateshift.testing.StreamRun;
import io.stateshift.testing.TestSets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.stream.Stream;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.streaming.StreamingQuery;
import org.apache.spark.sql.streaming.Trigger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * Spark's file sink keeps a log of its own keyed by batch id ({@code <output>/_spark_metadata}),
 * compacted every few batches; compaction and every batch read of the output need an entry for each
 * batch id. A query repartitioned (by the command, on demand, after a crash, rolled back, or by
 * Spark's built-in runner and then repaired) runs on past two compactions, and its output, read
 * back with {@code spark.read}, equals the uninterrupted run's.
 */
class FileSinkRepartitionTest {
  /** Small, so the restarted query passes two compactions within a few batches. */
  static final int COMPACT_INTERVAL = 2;

  static final int FIRST_FILES = 3;
  static final int MORE_FILES = 3;
  static final int ROWS_PER_FILE = 200;
  static final int DEVICES = 40;

  private static final Map<String, List<String>> ORACLES = new ConcurrentHashMap<>();
  private final SparkSession spark = SparkTestSession.get();

  @TempDir Path tmp;

  @BeforeEach
  void smallCompactInterval() {
    spark
        .conf()
        .set(
            "spark.sql.streaming.fileSink.log.compactInterval", Integer.toString(COMPACT_INTERVAL));
  }

  @AfterEach
  void defaults() {
    spark.conf().unset("spark.sql.streaming.fileSink.log.compactInterval");
  }

  /** Every store with three formats; csv and text too under -Pextended. */
  static Stream<Arguments> formatsAndStores() {
    return TestSets.subset(
        List.of(
            Arguments.of("parquet", StateStores.HDFS),
            Arguments.of("parquet", StateStores.ROCKSDB_CHANGELOG),
            Arguments.of("json", StateStores.ROCKSDB),
            Arguments.of("csv", StateStores.HDFS),
            Arguments.of("orc", StateStores.ROCKSDB_CHANGELOG),
            Arguments.of("text", StateStores.HDFS)),
        i -> i % 2 == 0);
  }

  /** The command, with the sink on record (the test session's queries run the extension). */
  @ParameterizedTest(name = "{0} sink on {1}: command 4 -> 8")
  @MethodSource("formatsAndStores")
  void repartitionedByTheCommand(String format, StateStores store) {
    Case c = new Case(format, store);
    c.runFirst(4);
    RepartitionResult result =
        StateShift.get(spark)
            .repartitionState(c.checkpoint())
            .toPartitions(8)
            .assumeStopped()
            .execute();
    // The sink's log has the repartition's batch before the query runs again.
    assertThat(c.sinkLogEntries()).contains(Long.toString(result.batchId()));
    c.runRestAndCheck(store.withPartitions(4));
  }

  /** The sink named explicitly, none on record: the entry is written all the same. */
  @Test
  void repartitionedWithTheSinkNamed() throws Exception {
    Case c = new Case("parquet", StateStores.HDFS);
    c.runFirst(4);
    Files.delete(c.root.resolve("checkpoint/_stateshift/file-sink"));
    RepartitionResult result =
        StateShift.get(spark)
            .repartitionState(c.checkpoint())
            .toPartitions(3)
            .fileSink(c.out().toString())
            .assumeStopped()
            .execute();
    assertThat(c.sinkLogEntries()).contains(Long.toString(result.batchId()));
    assertThat(StateShift.get(spark).verify(c.checkpoint(), List.of(c.out().toString())).problems())
        .isEmpty();
    c.runRestAndCheck(StateStores.HDFS.withPartitions(4));
  }

  /** The on-demand path at restart: the setting alone, with a compaction right after. */
  @Test
  void repartitionedOnDemand() {
    Case c = new Case("parquet", StateStores.HDFS);
    c.runFirst(8);
    Map<String, String> conf = new LinkedHashMap<>(StateStores.HDFS.withPartitions(8));
    conf.put(StateShiftExtensions.STATE_PARTITIONS, "6");
    c.runRestAndCheck(conf);
  }

  /** Rolled back: the entry goes with the batch, so the sink writes the real batch N+1. */
  @Test
  void rolledBack() {
    Case c = new Case("parquet", StateStores.ROCKSDB_CHANGELOG);
    c.runFirst(4);
    RepartitionResult result =
        StateShift.get(spark)
            .repartitionState(c.checkpoint())
            .toPartitions(8)
            .assumeStopped()
            .execute();
    String entry = Long.toString(result.batchId());
    assertThat(c.sinkLogEntries()).contains(entry);
    StateShift.get(spark).rollbackRepartition(c.checkpoint(), true);
    assertThat(c.sinkLogEntries()).doesNotContain(entry, entry + ".compact");
    c.runRestAndCheck(StateStores.ROCKSDB_CHANGELOG.withPartitions(4));
  }

  /**
   * Killed after the sink's entry was written and before the commit: the next start (with the
   * extension) finishes the attempt, and the output is whole.
   */
  @Test
  void killedAfterTheSinkEntryThenFinished() throws Exception {
    Case c = new Case("json", StateStores.HDFS);
    c.runFirst(4);
    int exit =
        ChildJvm.runCli(
            c.root.resolve("child.log"),
            List.of(
                "-D" + FailPoints.PROPERTY + "=" + FailPoints.SINK_LOG,
                "-Dspark.stateshift.lock.leaseMs=1500"),
            "repartition",
            "--checkpoint",
            c.checkpoint(),
            "--partitions",
            "7",
            "--assume-stopped");
    assertThat(exit).as("exit code; log: %s", c.root.resolve("child.log")).isEqualTo(137);
    assertThat(Files.exists(c.root.resolve("checkpoint/_stateshift/journal"))).isTrue();
    Thread.sleep(1600); // the dead holder's lock lease expires
    c.runRestAndCheck(StateStores.HDFS.withPartitions(4));
    assertThat(c.lastRunInstances()).containsOnly(7L);
  }

  /**
   * Spark's built-in runner leaves the gap: verify and the doctor explain it and name the fix, the
   * repair fills it, and the query then runs on with whole output.
   */
  @Test
  @Tag("builtin-runner") // Spark 4.2's own runner
  void builtInRunnersGapFoundAndRepaired() throws Exception {
    Case c = new Case("parquet", StateStores.ROCKSDB);
    c.runFirst(4);
    Path recorded = c.root.resolve("checkpoint/_stateshift/file-sink");
    assertThat(recorded).exists();
    LineApis.builtInRepartition(spark, c.checkpoint(), 8);
    long repartitionBatch = Long.parseLong(c.lastOffsetsEntry());
    assertThat(c.sinkLogEntries()).doesNotContain(Long.toString(repartitionBatch));

    VerificationReport report = StateShift.get(spark).verify(c.checkpoint());
    assertThat(report.problems())
        .anySatisfy(
            p ->
                assertThat(p)
                    .contains("batch " + repartitionBatch + " is a repartition batch")
                    .contains("stateshift repair-sink-log"));
    DoctorReport doctor = StateShift.get(spark).doctor(c.checkpoint()).run();
    assertThat(doctor.findings())
        .filteredOn(f -> f.code().equals("FILE_SINK_LOG_GAP"))
        .singleElement()
        .satisfies(
            (Finding f) ->
                assertThat(f.fix())
                    .contains("repair-sink-log --checkpoint")
                    .contains("--file-sink"));

    // The command line, as a user runs it after the doctor's advice.
    java.io.ByteArrayOutputStream printed = new java.io.ByteArrayOutputStream();
    int exit =
        new io.stateshift.cli.StateShiftCli(
                new java.io.PrintStream(printed, true),
                new java.io.PrintStream(new java.io.ByteArrayOutputStream(), true))
            .run(
                new String[] {
                  "repair-sink-log",
                  "--checkpoint",
                  c.checkpoint(),
                  "--file-sink",
                  c.out().toString(),
                  "--json"
                });
    assertThat(exit).isZero();
    com.fasterxml.jackson.databind.JsonNode json =
        new com.fasterxml.jackson.databind.ObjectMapper().readTree(printed.toString());
    assertThat(json.get("ok").asBoolean()).isTrue();
    assertThat(json.get("filled").toString()).isEqualTo("[" + repartitionBatch + "]");
    assertThat(json.get("unfillable").size()).isZero();
    // Repairing again finds nothing to do.
    SinkLogRepair again = StateShift.get(spark).repairSinkLog(c.checkpoint(), c.out().toString());
    assertThat(again.filled()).isEmpty();
    assertThat(again.unfillable()).isEmpty();
    assertThat(StateShift.get(spark).verify(c.checkpoint()).problems()).isEmpty();
    c.runRestAndCheck(StateStores.ROCKSDB.withPartitions(4));
  }

  /** Without the repair, a restart with the extension fills the gap before its first batch. */
  @Test
  @Tag("builtin-runner") // Spark 4.2's own runner
  void builtInRunnersGapFilledAtRestart() {
    Case c = new Case("parquet", StateStores.ROCKSDB);
    c.runFirst(4);
    // An increase: after a decrease the built-in runner leaves the dropped partition folders
    // behind, which verify reports as damage of its own.
    LineApis.builtInRepartition(spark, c.checkpoint(), 6);
    c.runRestAndCheck(StateStores.ROCKSDB.withPartitions(4));
  }

  /** A folder that is no file sink's output is refused, with the checkpoint unchanged. */
  @Test
  void aFolderThatIsNoFileSinkIsRefused() throws Exception {
    Case c = new Case("parquet", StateStores.HDFS);
    c.runFirst(4);
    Path notASink = Files.createDirectories(c.root.resolve("not-a-sink"));
    Map<String, String> before = CheckpointDigest.of(c.root.resolve("checkpoint"));
    assertThatThrownBy(
            () ->
                StateShift.get(spark)
                    .repartitionState(c.checkpoint())
                    .toPartitions(8)
                    .fileSink(notASink.toString())
                    .assumeStopped()
                    .execute())
        .isInstanceOf(StateShiftException.class)
        .hasMessageContaining("is not the output folder of a file sink")
        .satisfies(
            e ->
                assertThat(((StateShiftException) e).reason())
                    .isEqualTo(StateShiftException.Reason.INVALID_ARGUMENT));
    assertThat(CheckpointDigest.of(c.root.resolve("checkpoint"))).isEqualTo(before);
  }

  /** One query with a file sink: its input, checkpoint and output under the test's folder. */
  private final class Case {
    final String format;
    final StateStores store;
    final Path root;
    final StreamRun run;
    private List<Long> lastInstances = List.of();

    Case(String format, StateStores store) {
      this.format = format;
      this.store = store;
      this.root = tmp.resolve(format + "-" + store);
      this.run = new StreamRun(spark, root.resolve("input"));
    }

    String checkpoint() {
      return root.resolve("checkpoint").toString();
    }

    Path out() {
      return root.resolve("out");
    }

    void runFirst(int partitions) {
      for (int i = 0; i < FIRST_FILES; i++) {
        run.writeEvents(i, ROWS_PER_FILE, DEVICES);
      }
      runQuery(run, root.resolve("checkpoint"), out(), store.withPartitions(partitions));
    }

    /** More input, the restart, two compactions, then the output against the oracle. */
    void runRestAndCheck(Map<String, String> conf) {
      for (int i = FIRST_FILES; i < FIRST_FILES + MORE_FILES; i++) {
        run.writeEvents(i, ROWS_PER_FILE, DEVICES);
      }
      run.writeFlush(FIRST_FILES + MORE_FILES);
      long before = latestSinkBatch();
      lastInstances = runQuery(run, root.resolve("checkpoint"), out(), conf);
      long compactions =
          sinkLogEntries().stream()
              .filter(n -> n.endsWith(".compact"))
              .mapToLong(n -> Long.parseLong(n.substring(0, n.indexOf('.'))))
              .filter(id -> id > before)
              .count();
      assertThat(compactions).as("compactions after the restart").isGreaterThanOrEqualTo(2);
      assertThat(readBack(out())).containsExactlyElementsOf(oracle(format));
      assertThat(StateShift.get(spark).verify(checkpoint()).problems()).isEmpty();
    }

    List<Long> lastRunInstances() {
      return lastInstances;
    }

    long latestSinkBatch() {
      return sinkLogEntries().stream()
          .mapToLong(n -> Long.parseLong(n.replace(".compact", "")))
          .max()
          .orElse(-1);
    }

    List<String> sinkLogEntries() {
      try (Stream<Path> files = Files.list(out().resolve("_spark_metadata"))) {
        return files
            .map(p -> p.getFileName().toString())
            .filter(n -> !n.startsWith("."))
            .sorted()
            .toList();
      } catch (java.io.IOException e) {
        throw new java.io.UncheckedIOException(e);
      }
    }

    String lastOffsetsEntry() {
      try (Stream<Path> files = Files.list(root.resolve("checkpoint/offsets"))) {
        return files
            .map(p -> p.getFileName().toString())
            .filter(n -> !n.startsWith("."))
            .max(java.util.Comparator.comparingLong(Long::parseLong))
            .orElseThrow();
      } catch (java.io.IOException e) {
        throw new java.io.UncheckedIOException(e);
      }
    }

    /** Runs the query to the end of its input; returns the state store instances it reported. */
    private List<Long> runQuery(
        StreamRun input, Path checkpoint, Path out, Map<String, String> conf) {
      Runnable restoreSettings = SessionConf.set(spark, conf);
      try {
        Dataset<Row> events =
            spark
                .readStream()
                .schema(StreamRun.EVENT_SCHEMA)
                .option("maxFilesPerTrigger", 1)
                .json(input.inputLocation());
        StreamingQuery query =
            asFormat(StatefulQueries.WINDOWED_COUNT.apply(events))
                .writeStream()
                .format(format)
                .outputMode("append")
                .option("checkpointLocation", checkpoint.toString())
                .option("path", out.toString())
                .trigger(Trigger.AvailableNow())
                .start();
        query.awaitTermination();
        StreamRun.awaitQueryEvents(spark);
        return StreamRun.stateInstances(List.of(query.recentProgress()));
      } catch (Exception e) {
        throw new IllegalStateException(e);
      } finally {
        restoreSettings.run();
      }
    }

    /** csv and text hold one string column; the other formats keep the query's columns. */
    private Dataset<Row> asFormat(Dataset<Row> rows) {
      return switch (format) {
        case "text", "csv" ->
            rows.select(
                concat_ws(
                        "|",
                        col("window_start").cast("string"),
                        col("window_end").cast("string"),
                        col("device"),
                        col("count").cast("string"))
                    .as("value"));
        default -> rows;
      };
    }

    /** The output read back the way users read it, as sorted strings. */
    private List<String> readBack(Path out) {
      Dataset<Row> rows =
          format.equals("csv")
              ? spark.read().schema("value STRING").csv(out.toString())
              : spark.read().format(format).load(out.toString());
      return rows.collectAsList().stream().map(Row::toString).sorted().toList();
    }

    /** The same query over all the input, on a fresh checkpoint and output, in one run. */
    private List<String> oracle(String format) {
      return ORACLES.computeIfAbsent(
          format,
          f -> {
            Path dir = tmp.resolve("oracle-" + f);
            StreamRun all = new StreamRun(spark, dir.resolve("input"));
            for (int i = 0; i < FIRST_FILES + MORE_FILES; i++) {
              all.writeEvents(i, ROWS_PER_FILE, DEVICES);
            }
            all.writeFlush(FIRST_FILES + MORE_FILES);
            runQuery(
                all,
                dir.resolve("checkpoint"),
                dir.resolve("out"),
                StateStores.HDFS.withPartitions(5));
            List<String> rows = readBack(dir.resolve("out"));
            assertThat(rows).isNotEmpty();
            return rows;
          });
    }
  }
}
