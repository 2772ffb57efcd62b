package io.stateshift.inventory;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.stateshift.StateShift;
import io.stateshift.StateShiftException;
import io.stateshift.cli.StateShiftCli;
import io.stateshift.inventory.FleetReport.Kind;
import io.stateshift.monitor.MonitorSettings;
import io.stateshift.monitor.StreamMonitor;
import io.stateshift.testing.CheckpointDigest;
import io.stateshift.testing.OperatorQueries;
import io.stateshift.testing.OperatorRun;
import io.stateshift.testing.QueryRunner;
import io.stateshift.testing.S3Server;
import io.stateshift.testing.SparkTestSession;
import io.stateshift.testing.StateStores;
import io.stateshift.testing.StatefulQueries;
import io.stateshift.testing.StreamRun;
import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.FileTime;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.stream.Stream;
import org.apache.spark.api.java.function.VoidFunction2;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.streaming.StreamingQuery;
import org.apache.spark.sql.streaming.Trigger;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The fleet view on a folder of real checkpoints of different shapes: a windowed count on RocksDB
 * with a monitor history, a deduplication on the HDFS-backed store, a stateless query and a
 * stream-stream join with one partition. The commit and offset log files' times are set to those of
 * streams that ran at different paces (the inventory reads the pace from them), so each
 * recommendation has a stream that earns it. Local, through the command line (text, JSON, HTML, bad
 * input), and on s3a.
 */
class InventoryTest {
  private static final ObjectMapper JSON = new ObjectMapper();
  private static final long HOUR = 3_600_000L;
  private static final SparkSession spark = SparkTestSession.get();

  @TempDir static Path tmp;
  private static Path fleet;
  private static Path history;
  private static long distinctEventIds;

  @BeforeAll
  static void runTheFleet() throws Exception {
    fleet = tmp.resolve("fleet");
    history = tmp.resolve("history");
    Path input = tmp.resolve("input");
    StreamRun events = new StreamRun(spark, input);
    for (int i = 0; i < 4; i++) {
      events.writeEvents(i, 200, 40);
    }
    distinctEventIds =
        spark
            .read()
            .schema(StreamRun.EVENT_SCHEMA)
            .json(input.toString())
            .select("eventId")
            .distinct()
            .count();

    // team-a/counts: windowed count on RocksDB, 4 partitions, watched by the monitor; ran a batch
    // an hour, 2 s each: idle 99.9 % of the time.
    StreamMonitor monitor =
        new StreamMonitor(
            MonitorSettings.defaultSettings()
                .with("idleTimeoutMs", "0")
                .with("metrics", "false")
                .with("history", history.toString())
                .with("triggerIntervalMs", "60000"));
    spark.streams().addListener(monitor);
    try {
      QueryRunner.runAvailable(
          spark,
          input,
          StatefulQueries.WINDOWED_COUNT,
          fleet.resolve("team-a/counts"),
          tmp.resolve("sinks/counts"),
          StateStores.ROCKSDB_CHANGELOG.withPartitions(4),
          1);
      spark.sparkContext().listenerBus().waitUntilEmpty();
    } finally {
      spark.streams().removeListener(monitor);
      monitor.close();
    }
    pace(fleet.resolve("team-a/counts"), HOUR, 2_000);

    // team-a/dedup: dropDuplicates on the HDFS-backed store, 2 partitions; busy 80 % of the time.
    QueryRunner.runAvailable(
        spark,
        input,
        StatefulQueries.DEDUP,
        fleet.resolve("team-a/dedup"),
        tmp.resolve("sinks/dedup"),
        StateStores.HDFS.withPartitions(2),
        1);
    pace(fleet.resolve("team-a/dedup"), 60_000, 48_000);

    // team-b/stateless: a projection; a batch every 10 minutes, 30 s each (busy 5 %).
    Path statelessSink = tmp.resolve("sinks/stateless");
    StreamingQuery stateless =
        spark
            .readStream()
            .schema(StreamRun.EVENT_SCHEMA)
            .option("maxFilesPerTrigger", 1)
            .json(input.toString())
            .select("device", "ts")
            .writeStream()
            .option("checkpointLocation", fleet.resolve("team-b/stateless").toString())
            .trigger(Trigger.AvailableNow())
            .foreachBatch(
                (VoidFunction2<Dataset<Row>, Long>)
                    (batch, id) ->
                        batch.write().mode("overwrite").parquet(statelessSink + "/" + id))
            .start();
    stateless.awaitTermination();
    pace(fleet.resolve("team-b/stateless"), 600_000, 30_000);

    // team-b/join: an inner stream-stream join on RocksDB with one state partition; busy 30 %.
    OperatorRun join = new OperatorRun(spark, tmp.resolve("join-input"));
    for (int i = 0; i < 3; i++) {
      join.writeEvents(i, 100, 20);
    }
    join.runAvailable(
        OperatorQueries.JOIN_INNER,
        fleet.resolve("team-b/join"),
        tmp.resolve("sinks/join"),
        StateStores.ROCKSDB_CHANGELOG.withPartitions(1));
    pace(fleet.resolve("team-b/join"), 100_000, 30_000);
    StreamRun.awaitQueryEvents(spark);

    // Not checkpoints: a folder of notes, and a sink's metadata folder.
    Files.createDirectories(fleet.resolve("team-b/notes"));
    Files.writeString(fleet.resolve("team-b/notes/README"), "not a checkpoint");
    Files.createDirectories(fleet.resolve("team-a/_spark_metadata/offsets"));
  }

  /**
   * Sets the times of the retained offset and commit log files as a stream that planned a batch
   * every {@code everyMs} and committed it {@code runMs} later, the last one an hour ago.
   */
  private static void pace(Path checkpoint, long everyMs, long runMs) throws Exception {
    List<Long> batches = new ArrayList<>();
    try (Stream<Path> commits = Files.list(checkpoint.resolve("commits"))) {
      commits
          .map(p -> p.getFileName().toString())
          .filter(n -> n.matches("\\d+"))
          .forEach(n -> batches.add(Long.parseLong(n)));
    }
    batches.sort(Long::compare);
    long start = System.currentTimeMillis() - HOUR - (batches.size() - 1) * everyMs - runMs;
    for (int i = 0; i < batches.size(); i++) {
      long planned = start + i * everyMs;
      String name = Long.toString(batches.get(i));
      Files.setLastModifiedTime(
          checkpoint.resolve("offsets").resolve(name), FileTime.fromMillis(planned));
      Files.setLastModifiedTime(
          checkpoint.resolve("commits").resolve(name), FileTime.fromMillis(planned + runMs));
    }
  }

  private static Inventory inventory(String... locations) {
    return StateShift.get(spark)
        .inventory(List.of(locations))
        .cores(2)
        .setting("spark.stateshift.doctor.largeStateBytes", "4096");
  }

  /** Every file's digest and modification time. */
  private static Map<String, String> snapshot(Path root) throws Exception {
    Map<String, String> out = new TreeMap<>(CheckpointDigest.of(root));
    try (Stream<Path> files = Files.walk(root)) {
      for (Path p : (Iterable<Path>) files::iterator) {
        out.put(root.relativize(p) + "@", Files.getLastModifiedTime(p).toString());
      }
    }
    return out;
  }

  @Test
  void rowsAndRecommendationsForAFolderOfCheckpoints() throws Exception {
    Map<String, String> before = snapshot(fleet);
    FleetReport report = inventory(fleet.toString()).history(history.toString()).run();
    System.out.println(report);
    assertThat(snapshot(fleet)).as("the fleet's files, unchanged").isEqualTo(before);

    assertThat(report.streams())
        .extracting(FleetReport.Stream::name)
        .containsExactly("team-a/counts", "team-a/dedup", "team-b/join", "team-b/stateless");
    assertThat(report.streams()).allSatisfy(s -> assertThat(s.error()).isNull());

    FleetReport.Stream counts = report.stream("team-a/counts");
    assertThat(counts.providerShortName()).isEqualTo("RocksDB");
    assertThat(counts.partitions()).isEqualTo(4);
    assertThat(counts.stateRows()).isPositive();
    assertThat(counts.stateBytes()).isPositive();
    assertThat(counts.operators()).singleElement().asString().startsWith("0:");
    assertThat(counts.retainedBatches()).isGreaterThanOrEqualTo(4);
    assertThat(counts.batchesPerHour()).isBetween(0.99, 1.0);
    assertThat(counts.idleShare()).isGreaterThan(0.99);
    assertThat(counts.medianBatchMs()).isEqualTo(2_000L);
    // from the monitor's history
    assertThat(counts.triggerIntervalMs()).isEqualTo(60_000L);
    assertThat(counts.historyBatches()).isGreaterThanOrEqualTo(4);
    assertThat(counts.batchDurationMsMedian()).isPositive();
    assertThat(counts.batchDurationMsP95()).isGreaterThanOrEqualTo(counts.batchDurationMsMedian());

    FleetReport.Stream dedup = report.stream("team-a/dedup");
    assertThat(dedup.providerShortName()).isEqualTo("HDFS");
    assertThat(dedup.partitions()).isEqualTo(2);
    assertThat(dedup.stateRows()).isEqualTo(distinctEventIds);
    assertThat(dedup.busyShare()).isBetween(0.8, 0.9); // 48 s of each 60 s, and the last batch
    assertThat(dedup.worstSeverity()).isEqualTo("WARNING");
    assertThat(dedup.worst()).startsWith("HDFS_STORE_LARGE_STATE: ");
    assertThat(dedup.findings()).contains("HDFS_STORE_LARGE_STATE");
    assertThat(dedup.triggerIntervalMs()).isNull(); // no history of it
    assertThat(dedup.batchDurationMsMedian()).isNull();

    FleetReport.Stream stateless = report.stream("team-b/stateless");
    assertThat(stateless.provider()).isNull();
    assertThat(stateless.partitions()).isNull();
    assertThat(stateless.stateRows()).isNull();
    assertThat(stateless.stateBytes()).isNull();
    assertThat(stateless.findings()).contains("STATELESS");
    assertThat(stateless.idleShare()).isBetween(0.9, 0.95);
    assertThat(stateless.batchesPerHour()).isBetween(5.5, 6.0); // 6 an hour, less the last run

    FleetReport.Stream join = report.stream("team-b/join");
    assertThat(join.partitions()).isEqualTo(1);
    assertThat(join.operators()).singleElement().asString().contains("symmetricHashJoin");
    assertThat(join.findings()).contains("TOO_FEW_PARTITIONS");
    assertThat(join.recommendedPartitions()).isEqualTo(2);

    // the cost practice
    assertThat(report.recommendations(Kind.SCHEDULE_AVAILABLE_NOW))
        .extracting(r -> r.streams().get(0))
        .containsExactly("team-a/counts", "team-b/stateless");
    FleetReport.Recommendation scheduled =
        report.recommendations(Kind.SCHEDULE_AVAILABLE_NOW).get(0);
    assertThat(scheduled.evidence()).contains("idle 99.9%").contains("median batch 2.0 s");
    assertThat(scheduled.action()).contains("Trigger.AvailableNow()").contains("every 1.0 h");

    FleetReport.Recommendation packed =
        report.recommendations(Kind.PACK_LIGHT_STREAMS).stream().findFirst().orElseThrow();
    assertThat(packed.streams()).containsExactly("team-a/counts", "team-b/stateless");
    assertThat(packed.evidence()).contains("team-b/stateless busy ").contains("%, no state");

    assertThat(report.recommendations(Kind.ISOLATE_HEAVY_STREAM))
        .singleElement()
        .satisfies(
            r -> {
              assertThat(r.streams()).containsExactly("team-a/dedup");
              assertThat(r.evidence()).contains("% of the time").contains("of the fleet's");
            });
    assertThat(report.recommendations(Kind.CHANGE_PARTITIONS))
        .singleElement()
        .satisfies(
            r -> {
              assertThat(r.streams()).containsExactly("team-b/join");
              assertThat(r.title()).contains("1 -> 2 state partitions");
              assertThat(r.action()).contains("--partitions 2");
            });
    assertThat(report.recommendations(Kind.MOVE_TO_ROCKSDB))
        .singleElement()
        .satisfies(
            r -> {
              assertThat(r.streams()).containsExactly("team-a/dedup");
              assertThat(r.action())
                  .contains("stateshift migrate --checkpoint")
                  .contains("rocksdb");
            });
  }

  /** Runs the command line in this JVM (on the shared session); returns exit code, out, err. */
  private static String[] cli(String... args) {
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    ByteArrayOutputStream err = new ByteArrayOutputStream();
    int code =
        new StateShiftCli(
                new PrintStream(out, true, StandardCharsets.UTF_8),
                new PrintStream(err, true, StandardCharsets.UTF_8))
            .run(args);
    return new String[] {
      Integer.toString(code),
      out.toString(StandardCharsets.UTF_8),
      err.toString(StandardCharsets.UTF_8)
    };
  }

  @Test
  void commandLineTextJsonAndPage() throws Exception {
    Map<String, String> before = snapshot(fleet);
    Path page = tmp.resolve("pages/fleet.html");
    String[] json =
        cli(
            "inventory",
            fleet.resolve("team-a").toString(),
            fleet.resolve("team-b/join").toString(),
            "--history",
            history.toString(),
            "--cores",
            "2",
            "--conf",
            "spark.stateshift.doctor.largeStateBytes=4096",
            "--json",
            "--out",
            page.toString());
    assertThat(json[0]).as(json[2]).isEqualTo("0");
    JsonNode root = JSON.readTree(json[1]);
    assertThat(root.path("command").asText()).isEqualTo("inventory");
    assertThat(root.path("ok").asBoolean()).isTrue();
    List<String> names = new ArrayList<>();
    root.path("streams").forEach(s -> names.add(s.path("name").asText()));
    assertThat(names).containsExactly("counts", "dedup", "join");
    JsonNode dedup = root.path("streams").get(1);
    assertThat(dedup.path("stateRows").asLong()).isEqualTo(distinctEventIds);
    assertThat(dedup.has("triggerIntervalMs")).isTrue();
    assertThat(dedup.get("triggerIntervalMs").isNull()).as("null, not -1").isTrue();
    assertThat(root.path("streams").get(0).path("triggerIntervalMs").asLong()).isEqualTo(60_000L);
    List<String> kinds = new ArrayList<>();
    root.path("recommendations").forEach(r -> kinds.add(r.path("kind").asText()));
    assertThat(kinds)
        .contains("SCHEDULE_AVAILABLE_NOW", "ISOLATE_HEAVY_STREAM", "CHANGE_PARTITIONS")
        .contains("MOVE_TO_ROCKSDB");

    String html = Files.readString(page);
    assertThat(html)
        .contains("<tr class=\"stream\" data-stream=\"counts\">")
        .contains("data-stream=\"join\"")
        .contains("data-kind=\"MOVE_TO_ROCKSDB\"")
        .contains("<svg id=\"bytes\"")
        .doesNotContain("<script src")
        .doesNotContain("http://")
        .doesNotContain("https://");
    assertThat(html.split("class=\"bar\"", -1))
        .hasSize(7); // a bar per stream in each of the two charts

    String[] text = cli("inventory", fleet.toString(), "--cores", "2");
    assertThat(text[0]).as(text[2]).isEqualTo("0");
    assertThat(text[1])
        .contains("team-a/counts")
        .contains("RocksDB")
        .contains("SCHEDULE_AVAILABLE_NOW")
        .contains("4 stream(s)");
    assertThat(snapshot(fleet)).as("the fleet's files, unchanged").isEqualTo(before);
  }

  @Test
  @Tag("sql-procedures")
  void sqlProcedureReturnsARowPerStream() {
    SparkSession sql = spark.newSession();
    sql.conf().set("spark.sql.catalog.stateshift", "io.stateshift.sql.StateShiftCatalog");
    sql.conf().set("spark.stateshift.doctor.largeStateBytes", "4096");
    List<Row> rows =
        sql.sql(
                "CALL stateshift.system.inventory_state(location => '"
                    + fleet
                    + "', history => '"
                    + history
                    + "', cores => 2)")
            .collectAsList();
    assertThat(rows)
        .extracting(r -> r.getString(r.fieldIndex("stream")))
        .containsExactly("team-a/counts", "team-a/dedup", "team-b/join", "team-b/stateless");
    Row stateless = rows.get(3);
    assertThat(stateless.isNullAt(stateless.fieldIndex("partitions"))).isTrue();
    assertThat(stateless.isNullAt(stateless.fieldIndex("state_rows"))).isTrue();
    Row counts = rows.get(0);
    assertThat(counts.getLong(counts.fieldIndex("trigger_interval_ms"))).isEqualTo(60_000L);
    assertThat(counts.getString(counts.fieldIndex("recommendations")))
        .isEqualTo("SCHEDULE_AVAILABLE_NOW,PACK_LIGHT_STREAMS");
    Row dedup = rows.get(1);
    assertThat(dedup.getString(dedup.fieldIndex("recommendations")))
        .isEqualTo("ISOLATE_HEAVY_STREAM,MOVE_TO_ROCKSDB");
    assertThat(dedup.getString(dedup.fieldIndex("provider")))
        .endsWith("HDFSBackedStateStoreProvider");
    Row join = rows.get(2);
    assertThat(join.getInt(join.fieldIndex("partitions"))).isEqualTo(1);
    assertThat(join.getString(join.fieldIndex("recommendations"))).isEqualTo("CHANGE_PARTITIONS");
  }

  /** A folder laid out as Spark lays out a checkpoint (only what the search looks at). */
  private static Path fakeCheckpoint(Path dir) throws Exception {
    Files.createDirectories(dir.resolve("offsets"));
    Files.createDirectories(dir.resolve("commits"));
    Files.writeString(dir.resolve("metadata"), "{\"id\":\"x\"}");
    return dir;
  }

  @Test
  void namesOfTheStreamsFound() throws Exception {
    Path root = tmp.resolve("names");
    Path orders = fakeCheckpoint(root.resolve("orders/checkpoint"));
    fakeCheckpoint(root.resolve("eu/payments"));
    fakeCheckpoint(root.resolve("us/payments"));
    fakeCheckpoint(root.resolve("eu/payments/state/0")); // inside a checkpoint: not searched
    fakeCheckpoint(root.resolve("_archive/old")); // a folder named _...: passed over
    fakeCheckpoint(root.resolve("a/b/c/d/e/f/g/too-deep"));
    assertThat(CheckpointSearch.findLocal(List.of(root.toString())))
        .extracting(CheckpointSearch.Found::name)
        .containsExactly("eu/payments", "orders/checkpoint", "us/payments");
    // given themselves: the folder's name, with its parent's where the name is generic; the
    // same name twice: the locations
    assertThat(
            CheckpointSearch.findLocal(
                List.of(
                    orders.toString(),
                    root.resolve("eu/payments").toString(),
                    root.resolve("us/payments").toString())))
        .extracting(CheckpointSearch.Found::name)
        .containsExactly(
            "orders/checkpoint",
            root.resolve("eu/payments").toString(),
            root.resolve("us/payments").toString());
    // through Hadoop's file system, the same names
    assertThat(
            CheckpointSearch.find(
                List.of(root.toString()), spark.sparkContext().hadoopConfiguration()))
        .extracting(CheckpointSearch.Found::name)
        .containsExactly("eu/payments", "orders/checkpoint", "us/payments");
  }

  @Test
  void anUnreadableCheckpointIsARowWithItsError() throws Exception {
    Path mixed = tmp.resolve("mixed");
    org.apache.commons.io.FileUtils.copyDirectory(
        fleet.resolve("team-b/stateless").toFile(), mixed.resolve("good").toFile());
    Path broken = fakeCheckpoint(mixed.resolve("broken"));
    Files.writeString(broken.resolve("metadata"), "not the JSON Spark writes");
    FleetReport report = inventory(mixed.toString()).run();
    assertThat(report.stream("good").error()).isNull();
    FleetReport.Stream row = report.stream("broken");
    assertThat(row.error()).contains("metadata");
    assertThat(row.worstSeverity()).isEqualTo("ERROR");
    assertThat(row.provider()).isNull();
    assertThat(row.stateRows()).isNull();
    assertThat(report.recommendations())
        .allSatisfy(r -> assertThat(r.streams()).doesNotContain("broken"));
    JsonNode json = JSON.readTree(report.toJson()).path("streams").get(0);
    assertThat(json.path("name").asText()).isEqualTo("broken");
    assertThat(json.get("partitions").isNull()).isTrue();
    assertThat(json.get("batchesPerHour").isNull()).isTrue();
    assertThat(report.toString()).contains("broken").contains("ERROR ");
  }

  @Test
  void badInputIsRefusedInOneLine() throws Exception {
    Path empty = Files.createDirectories(tmp.resolve("empty/a/b"));
    String[][] cases = {
      {"inventory", tmp.resolve("empty").toString()},
      {"inventory", tmp.resolve("no-such-folder").toString()},
      {"inventory", fleet.toString(), "--bogus"},
      {"inventory"},
      {"inventory", fleet.toString(), "--history", tmp.resolve("no-history").toString()},
      {"inventory", fleet.toString(), "--out", tmp.toString()},
    };
    for (String[] args : cases) {
      String[] result = cli(args);
      assertThat(result[0]).as(String.join(" ", args) + ": " + result[2]).isEqualTo("2");
      assertThat(result[2].lines().filter(l -> l.startsWith("error: ")).count())
          .as(result[2])
          .isEqualTo(1);
      assertThat(result[2]).doesNotContain("\tat ");
    }
    assertThat(cli("inventory", empty.toString())[2]).contains("No streaming checkpoint");
    assertThat(cli("inventory", fleet.toString(), "--bogus")[2]).contains("unknown option --bogus");
    String[] json = cli("inventory", tmp.resolve("no-such-folder").toString(), "--json");
    assertThat(JSON.readTree(json[1]).path("exitCode").asInt()).isEqualTo(2);
  }

  @Test
  void theSameFleetOnS3() throws Exception {
    S3Server s3 = S3Server.startForTestSession(tmp.resolve("s3"));
    try {
      for (String stream : List.of("team-a/counts", "team-a/dedup", "team-b/stateless")) {
        s3.upload(
            fleet.resolve(stream), "fleet/" + stream, spark.sparkContext().hadoopConfiguration());
      }
      FleetReport report = inventory(s3.uri("fleet")).run();
      System.out.println(report);
      assertThat(report.streams())
          .extracting(FleetReport.Stream::name)
          .containsExactly("team-a/counts", "team-a/dedup", "team-b/stateless");
      assertThat(report.streams())
          .allSatisfy(
              s -> {
                assertThat(s.error()).isNull();
                assertThat(s.checkpoint()).startsWith("s3a://");
                assertThat(s.retainedBatches()).isGreaterThanOrEqualTo(4);
              });
      FleetReport local = inventory(fleet.toString()).run();
      for (String name : List.of("team-a/counts", "team-a/dedup", "team-b/stateless")) {
        FleetReport.Stream remote = report.stream(name);
        FleetReport.Stream here = local.stream(name);
        assertThat(remote.provider()).isEqualTo(here.provider());
        assertThat(remote.partitions()).isEqualTo(here.partitions());
        assertThat(remote.stateRows()).isEqualTo(here.stateRows());
        assertThat(remote.queryId()).isEqualTo(here.queryId());
      }
      assertThat(report.recommendations(Kind.MOVE_TO_ROCKSDB))
          .singleElement()
          .satisfies(r -> assertThat(r.action()).contains("s3a://"));

      String[] json = cli("inventory", s3.uri("fleet"), "--cores", "2", "--json");
      assertThat(json[0]).as(json[2]).isEqualTo("0");
      assertThat(JSON.readTree(json[1]).path("streams")).hasSize(3);
      assertThat(cli("inventory", s3.uri("nothing-here"))[0]).isEqualTo("2");

      // a wrong secret key: refused as bad input, naming the settings to fix
      SparkSession wrongKey = spark.newSession();
      wrongKey.conf().set("fs.s3a.bucket." + s3.bucket() + ".secret.key", "not-the-secret");
      wrongKey.conf().set("fs.s3a.impl.disable.cache", "true");
      StateShiftException denied =
          org.junit.jupiter.api.Assertions.assertThrows(
              StateShiftException.class,
              () -> StateShift.get(wrongKey).inventory(List.of(s3.uri("fleet"))).run());
      assertThat(denied.reason().isBadInput()).isTrue();
      assertThat(denied.getMessage()).contains("access denied").contains("fs.s3a.secret.key");
    } finally {
      s3.closeForTestSession();
    }
  }
}
