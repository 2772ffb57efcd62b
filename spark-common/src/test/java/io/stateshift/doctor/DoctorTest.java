package io.stateshift.doctor;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.stateshift.StateShift;
import io.stateshift.cli.StateShiftCli;
import io.stateshift.protocol.FailPoints;
import io.stateshift.testing.CheckpointDigest;
import io.stateshift.testing.LineApis;
import io.stateshift.testing.QueryRunner;
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
import java.util.Map;
import org.apache.commons.io.FileUtils;
import org.apache.spark.sql.SparkSession;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The doctor on checkpoints written by real queries that have each problem, and on a healthy one.
 * Every run is checked to leave the checkpoint byte for byte as it was.
 */
class DoctorTest {
  private final SparkSession spark = SparkTestSession.get();

  @TempDir Path tmp;

  /** Runs {@code files} one-file batches of {@code query}; returns the checkpoint. */
  private Path run(
      StatefulQueries query, Map<String, String> conf, int files, int rows, int devices) {
    StreamRun input = new StreamRun(spark, tmp.resolve("input"));
    for (int i = 0; i < files; i++) {
      input.writeEvents(i, rows, devices);
    }
    QueryRunner.runAvailable(
        spark,
        tmp.resolve("input"),
        query,
        tmp.resolve("checkpoint"),
        tmp.resolve("sink"),
        conf,
        1);
    return tmp.resolve("checkpoint");
  }

  /** Runs the doctor and checks it wrote nothing. */
  private DoctorReport doctor(Path checkpoint, int cores, Map<String, String> settings) {
    Map<String, String> before = CheckpointDigest.of(checkpoint);
    Doctor doctor = StateShift.get(spark).doctor(checkpoint.toString()).cores(cores);
    settings.forEach(doctor::setting);
    DoctorReport report = doctor.run();
    System.out.println(report);
    assertThat(CheckpointDigest.of(checkpoint))
        .as("checkpoint unchanged by the doctor")
        .isEqualTo(before);
    return report;
  }

  @Test
  void healthyQueryHasNothingAboveInfo() {
    Path checkpoint =
        run(
            StatefulQueries.WINDOWED_COUNT,
            StateStores.ROCKSDB_CHANGELOG.withPartitions(4),
            6,
            300,
            200);
    DoctorReport report = doctor(checkpoint, 2, Map.of("skewMinRows", "100"));
    assertThat(report.findings())
        .allSatisfy(f -> assertThat(f.severity()).as(f.toString()).isEqualTo(Severity.INFO));
    assertThat(report.exitCode()).isZero();
    assertThat(report.partitions()).isEqualTo(4);
    assertThat(report.recommendedPartitions()).isEqualTo(2);
    assertThat(report.stateGrowth())
        .singleElement()
        .satisfies(g -> assertThat(g.rows()).hasSizeGreaterThanOrEqualTo(4));
    assertThat(report.sourceBatches())
        .singleElement()
        .satisfies(s -> assertThat(s.sizes()).containsOnly(1L));
  }

  @Test
  void largeHdfsStateThatGrowsWithoutWatermark() {
    Path checkpoint = run(StatefulQueries.DEDUP, StateStores.HDFS.withPartitions(2), 5, 200, 30);
    DoctorReport report = doctor(checkpoint, 2, Map.of("largeStateBytes", "4096"));
    assertThat(report.findings())
        .extracting(Finding::code)
        .contains("HDFS_STORE_LARGE_STATE", "STATE_GROWTH");
    Finding growth = find(report, "STATE_GROWTH");
    assertThat(growth.severity()).isEqualTo(Severity.WARNING);
    assertThat(growth.evidence()).contains("no event-time watermark");
    assertThat(growth.fix()).contains("withWatermark");
    assertThat(find(report, "HDFS_STORE_LARGE_STATE").fix())
        .contains("RocksDBStateStoreProvider")
        .contains("stateshift migrate --checkpoint " + report.checkpoint() + " --provider rocksdb")
        .contains("spark.stateshift.migrate.enabled=true");
    assertThat(report.stateGrowth().get(0).rows()).isSorted().doesNotHaveDuplicates();
  }

  @Test
  @Tag("builtin-runner") // Spark 4.2's own runner leaves the folders
  void rocksDbWithoutChangelogFewRetainedBatchesAndLeftoverFolders() throws Exception {
    Map<String, String> conf = new HashMap<>(StateStores.ROCKSDB.withPartitions(4));
    conf.put("spark.sql.streaming.minBatchesToRetain", "2");
    Path checkpoint = run(StatefulQueries.WINDOWED_COUNT, conf, 5, 200, 30);
    DoctorReport report = doctor(checkpoint, 2, Map.of());
    assertThat(report.findings())
        .extracting(Finding::code)
        .contains("ROCKSDB_WITHOUT_CHANGELOG", "FEW_RETAINED_BATCHES")
        .doesNotContain("LEFTOVER_PARTITION_FOLDERS");
    assertThat(find(report, "ROCKSDB_WITHOUT_CHANGELOG").fix())
        .contains("changelogCheckpointing.enabled=true");

    // Spark's built-in repartition leaves the folders a decrease drops under state/.
    Path copy = tmp.resolve("copy");
    FileUtils.copyDirectory(checkpoint.toFile(), copy.toFile());
    LineApis.builtInRepartition(spark, copy.toString(), 2);
    DoctorReport after = doctor(copy, 2, Map.of());
    Finding leftover = find(after, "LEFTOVER_PARTITION_FOLDERS");
    assertThat(leftover.evidence()).contains("state/0/2", "state/0/3");
    assertThat(after.partitions()).isEqualTo(2);
  }

  @Test
  void tooFewPartitionsForTheCores() {
    Path checkpoint =
        run(StatefulQueries.GROUPED_COUNT, StateStores.HDFS.withPartitions(1), 3, 200, 50);
    DoctorReport report = doctor(checkpoint, 4, Map.of());
    Finding few = find(report, "TOO_FEW_PARTITIONS");
    assertThat(few.evidence()).contains("1 partitions").contains("4 cores");
    assertThat(few.fix()).contains("spark.sql.streaming.stateStore.partitions=4");
    assertThat(report.recommendedPartitions()).isEqualTo(4);
  }

  @Test
  void skewedAndTooManyPartitions() {
    Path checkpoint =
        run(StatefulQueries.GROUPED_COUNT, StateStores.HDFS.withPartitions(16), 3, 100, 5);
    DoctorReport report = doctor(checkpoint, 1, Map.of("skewMinRows", "1"));
    assertThat(report.findings())
        .extracting(Finding::code)
        .contains("STATE_SKEW", "TOO_MANY_PARTITIONS")
        .doesNotContain("STATE_GROWTH");
    long[] rows = report.storePartitions().get(0).rows();
    assertThat(rows).hasSize(16);
    assertThat(java.util.Arrays.stream(rows).sum()).isEqualTo(5);
    assertThat(find(report, "TOO_MANY_PARTITIONS").fix())
        .contains("spark.sql.streaming.stateStore.partitions=1");
  }

  @Test
  void bigFirstBatchOfFiles() {
    StreamRun input = new StreamRun(spark, tmp.resolve("input"));
    for (int i = 0; i < 12; i++) {
      input.writeEvents(i, 50, 20);
    }
    Map<String, String> conf = StateStores.HDFS.withPartitions(2);
    QueryRunner.runAvailable(
        spark,
        tmp.resolve("input"),
        StatefulQueries.WINDOWED_COUNT,
        tmp.resolve("checkpoint"),
        tmp.resolve("sink"),
        conf,
        0);
    for (int i = 12; i < 14; i++) { // then one file at a time
      input.writeEvents(i, 50, 20);
      QueryRunner.runAvailable(
          spark,
          tmp.resolve("input"),
          StatefulQueries.WINDOWED_COUNT,
          tmp.resolve("checkpoint"),
          tmp.resolve("sink"),
          conf,
          0);
    }
    DoctorReport report = doctor(tmp.resolve("checkpoint"), 2, Map.of());
    Finding burst = find(report, "SOURCE_BURST");
    assertThat(burst.title()).startsWith("Batch 0 of source 0 (file)");
    assertThat(burst.evidence()).contains("batch 0 took 12", "median of the other 2 batches is 1");
    assertThat(burst.fix()).contains("maxFilesPerTrigger");
    assertThat(report.sourceBatches().get(0).sizes()).containsExactly(12L, 1L, 1L);
  }

  @Test
  void unfinishedRepartitionIsAnErrorAndTheCliExitsWithOne() throws Exception {
    Path checkpoint =
        run(StatefulQueries.WINDOWED_COUNT, StateStores.HDFS.withPartitions(2), 2, 100, 20);
    // An I/O error right after the journal records the switch: the attempt is left unfinished.
    FailPoints.observe(
        point -> {
          if (point.equals("journal-switching")) {
            throw new java.io.UncheckedIOException(new java.io.IOException("injected I/O error"));
          }
        });
    try {
      StateShift.get(spark).repartitionState(checkpoint.toString()).toPartitions(3).execute();
    } catch (RuntimeException expected) {
      assertThat(expected).hasStackTraceContaining("injected I/O error");
    } finally {
      FailPoints.observe(null);
    }
    assertThat(checkpoint.resolve("_stateshift/journal")).exists();
    DoctorReport report = doctor(checkpoint, 2, Map.of());
    Finding unfinished = find(report, "UNFINISHED_REPARTITION");
    assertThat(unfinished.severity()).isEqualTo(Severity.ERROR);
    assertThat(unfinished.evidence()).contains("from 2 to 3 partitions", "SWITCHING");
    assertThat(unfinished.fix()).contains("--partitions 3");
    assertThat(report.exitCode()).isEqualTo(1);

    Map<String, String> before = CheckpointDigest.of(checkpoint);
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    int exit =
        new StateShiftCli(new PrintStream(out, true, StandardCharsets.UTF_8), System.err)
            .run(new String[] {"doctor", "--checkpoint", checkpoint.toString(), "--json"});
    assertThat(exit).isEqualTo(1);
    JsonNode json = new ObjectMapper().readTree(out.toString(StandardCharsets.UTF_8));
    assertThat(json.get("worst").asText()).isEqualTo("ERROR");
    assertThat(json.get("findings").findValuesAsText("code")).contains("UNFINISHED_REPARTITION");
    assertThat(CheckpointDigest.of(checkpoint)).isEqualTo(before);
  }

  /**
   * Two runs of one query alive at once leave no trace in the checkpoint itself (the loser of a log
   * write fails), but the history shows both reporting progress: two runs' progress lines,
   * interleaved in time, as two applications on one checkpoint would write them.
   */
  @Test
  void twoRunsReportingAtOnceInTheHistory() throws Exception {
    Path checkpoint =
        run(StatefulQueries.WINDOWED_COUNT, StateStores.HDFS.withPartitions(2), 2, 50, 10);
    String queryId =
        new ObjectMapper()
            .readTree(Files.readString(checkpoint.resolve("metadata")))
            .get("id")
            .asText();
    Path history = tmp.resolve("history");
    Files.createDirectories(history);
    StringBuilder lines = new StringBuilder();
    long start = 1_790_000_000_000L;
    for (int i = 0; i < 6; i++) {
      String run = i % 2 == 0 ? "run-a" : "run-b";
      lines.append(
          String.format(
              "{\"event\":\"progress\",\"triggerIntervalMs\":1000,"
                  + "\"progress\":{\"id\":\"%s\",\"runId\":\"%s\",\"batchId\":%d,"
                  + "\"timestamp\":\"%s\",\"numInputRows\":10,\"durationMs\":"
                  + "{\"triggerExecution\":200},\"stateOperators\":[]}}%n",
              queryId, run, i, java.time.Instant.ofEpochMilli(start + i * 1000L)));
    }
    Files.writeString(history.resolve("runs.jsonl"), lines);
    Map<String, String> before = CheckpointDigest.of(checkpoint);
    DoctorReport report =
        StateShift.get(spark)
            .doctor(checkpoint.toString())
            .cores(2)
            .history(history.toString())
            .run();
    assertThat(CheckpointDigest.of(checkpoint)).isEqualTo(before);
    Finding shared = find(report, "SHARED_CHECKPOINT");
    assertThat(shared.severity()).isEqualTo(Severity.ERROR);
    assertThat(shared.evidence()).contains("run-a", "run-b");
    assertThat(find(report, "BATCH_DURATION").evidence())
        .contains("0 of 6 batches took longer than the 1000 ms trigger interval");
  }

  @Test
  void notACheckpointIsBadInput() throws Exception {
    Files.createDirectories(tmp.resolve("empty"));
    ByteArrayOutputStream err = new ByteArrayOutputStream();
    int exit =
        new StateShiftCli(System.out, new PrintStream(err, true, StandardCharsets.UTF_8))
            .run(new String[] {"doctor", "--checkpoint", tmp.resolve("empty").toString()});
    assertThat(exit).isEqualTo(2);
    assertThat(err.toString(StandardCharsets.UTF_8)).contains("not a streaming checkpoint");
  }

  private static Finding find(DoctorReport report, String code) {
    return report.findings().stream()
        .filter(f -> f.code().equals(code))
        .findFirst()
        .orElseThrow(() -> new AssertionError("no " + code + " finding in:\n" + report));
  }
}
