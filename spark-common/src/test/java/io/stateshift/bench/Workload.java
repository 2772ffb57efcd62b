package io.stateshift.bench;

import static org.apache.spark.sql.functions.col;
import static org.apache.spark.sql.functions.window;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import java.util.concurrent.TimeoutException;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.streaming.StreamingQuery;
import org.apache.spark.sql.streaming.StreamingQueryException;
import org.apache.spark.sql.streaming.Trigger;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.StructType;

/**
 * The benchmark's input and queries. The input holds {@code 2 * keys} events in parquet files, one
 * file per micro-batch, built so that both shapes end with exactly {@code keys} state rows:
 *
 * <ul>
 *   <li>event {@code id} has {@code eventId = "e" + id % keys}: every event id occurs twice;
 *   <li>{@code device = "device-" + id % (keys / 2)} and an event time in one of two consecutive
 *       5-minute windows, {@code (id / (keys / 2)) % 2}: every (window, device) occurs twice.
 * </ul>
 *
 * All event times lie within 10 minutes, so the 10-minute watermark evicts nothing and the state
 * after the last batch is complete. With 4 files, the first two batches insert keys and the last
 * two update (windowed count) or re-see (dropDuplicates) all of them.
 */
final class Workload {
  static final StructType SCHEMA =
      new StructType()
          .add("eventId", DataTypes.StringType)
          .add("device", DataTypes.StringType)
          .add("ts", DataTypes.TimestampType);

  /** A 5-minute boundary, so the two windows are exactly the two event-time slices. */
  static final long T0 = 1_699_999_800L;

  private Workload() {}

  /** The stateful query shapes. */
  enum Shape {
    WINDOWED("windowed-count", "append"),
    DEDUP("dropDuplicates", "append"),
    /**
     * Stream-stream inner join of the input with itself on eventId, within 10 minutes of event
     * time. Each side keeps keyToNumValues (one row per eventId: {@code keys}) and
     * keyWithIndexToValue (one row per event: {@code 2 * keys}), so {@code 6 * keys} state rows in
     * 4 stores; {@code --keys 100000} is a join of 200k input rows per side.
     */
    JOIN("stream-stream-join", "append");

    final String label;
    final String outputMode;

    Shape(String label, String outputMode) {
      this.label = label;
      this.outputMode = outputMode;
    }

    Dataset<Row> apply(java.util.function.Supplier<Dataset<Row>> source) {
      return switch (this) {
        case WINDOWED ->
            source
                .get()
                .withWatermark("ts", "10 minutes")
                .groupBy(window(col("ts"), "5 minutes"), col("device"))
                .count();
        case DEDUP -> source.get().dropDuplicates("eventId");
        case JOIN -> {
          Dataset<Row> left =
              source
                  .get()
                  .select(col("eventId").as("lid"), col("device"), col("ts").as("lts"))
                  .withWatermark("lts", "10 minutes");
          Dataset<Row> right =
              source
                  .get()
                  .select(col("eventId").as("rid"), col("ts").as("rts"))
                  .withWatermark("rts", "10 minutes");
          yield left.join(
              right,
              org.apache.spark.sql.functions.expr(
                  "lid = rid AND rts >= lts - INTERVAL 10 MINUTES AND rts <= lts + INTERVAL 10 MINUTES"));
        }
      };
    }

    /** State rows after the whole input: see the class comment. */
    long stateRows(long keys) {
      return this == JOIN ? 6 * keys : keys;
    }

    static Shape parse(String s) {
      return switch (s.trim().toLowerCase(java.util.Locale.ROOT)) {
        case "windowed", "windowed-count", "window" -> WINDOWED;
        case "dedup", "dropduplicates", "dedupe" -> DEDUP;
        case "join", "stream-stream-join" -> JOIN;
        default ->
            throw new IllegalArgumentException("unknown shape '" + s + "' (windowed, dedup, join)");
      };
    }
  }

  /** The state store set-ups, as the session confs that select them. */
  enum Provider {
    ROCKSDB(
        "RocksDB",
        true,
        Map.of(
            "spark.sql.streaming.stateStore.providerClass",
            "org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider",
            "spark.sql.streaming.stateStore.rocksdb.changelogCheckpointing.enabled",
            "false")),
    ROCKSDB_CHANGELOG(
        "RocksDB+changelog",
        true,
        Map.of(
            "spark.sql.streaming.stateStore.providerClass",
            "org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider",
            "spark.sql.streaming.stateStore.rocksdb.changelogCheckpointing.enabled",
            "true")),
    HDFS(
        "HDFS",
        false,
        Map.of(
            "spark.sql.streaming.stateStore.providerClass",
            "org.apache.spark.sql.execution.streaming.state.HDFSBackedStateStoreProvider"));

    final String label;
    final boolean rocksDb;
    final Map<String, String> conf;

    Provider(String label, boolean rocksDb, Map<String, String> conf) {
      this.label = label;
      this.rocksDb = rocksDb;
      this.conf = conf;
    }

    String providerClass() {
      return conf.get("spark.sql.streaming.stateStore.providerClass");
    }

    static Provider parse(String s) {
      return switch (s.trim().toLowerCase(java.util.Locale.ROOT)) {
        case "rocksdb" -> ROCKSDB;
        case "rocksdb-changelog", "changelog" -> ROCKSDB_CHANGELOG;
        case "hdfs", "hdfs-backed" -> HDFS;
        default ->
            throw new IllegalArgumentException(
                "unknown provider '" + s + "' (rocksdb, rocksdb-changelog, hdfs)");
      };
    }
  }

  /** Writes the input for {@code keys} keys as {@code files} parquet files under {@code input}. */
  static void writeInput(SparkSession spark, Path input, long keys, int files) {
    if (keys < 2 || keys % 2 != 0) {
      throw new IllegalArgumentException("--keys must be even and at least 2, got " + keys);
    }
    long rows = 2 * keys;
    long devices = keys / 2;
    Path tmp = input.resolveSibling(input.getFileName() + "-tmp");
    try {
      Dirs.delete(input);
      Files.createDirectories(input);
      for (int f = 0; f < files; f++) {
        long start = rows * f / files;
        long end = rows * (f + 1) / files;
        Dirs.delete(tmp);
        spark
            .range(start, end, 1, 1)
            .selectExpr(
                "concat('e', id % " + keys + ") AS eventId",
                "concat('device-', id % " + devices + ") AS device",
                "timestamp_seconds("
                    + T0
                    + " + ((id div "
                    + devices
                    + ") % 2) * 300 + id % 300)"
                    + " AS ts")
            .write()
            .parquet(tmp.toString());
        try (var list = Files.list(tmp)) {
          Path part =
              list.filter(p -> p.getFileName().toString().endsWith(".parquet"))
                  .findFirst()
                  .orElseThrow();
          Files.move(part, input.resolve(String.format("events-%04d.parquet", f)));
        }
        Dirs.delete(tmp);
      }
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  /**
   * Writes one more input file, of {@code share x keys} events with the first ids of the input: for
   * the windowed count they update that many existing (window, device) keys and move no watermark.
   * Returns the file; delete it once the batch over it has run, so the other methods never see it.
   */
  static Path writeTail(SparkSession spark, Path input, long keys, double share) {
    long events = Math.max(1, Math.round(keys * share));
    Path file = input.resolve("events-tail-" + java.util.UUID.randomUUID() + ".parquet");
    writeEvents(spark, file, keys, 0, events);
    return file;
  }

  /**
   * Writes the events with the ids {@code start} to {@code end - 1} as one parquet file {@code
   * file}, by the input's formula: any id falls on an existing (window, device) key and an event
   * time within the input's 10 minutes, so they update the state of a query that read the whole
   * input and move no watermark.
   */
  static void writeEvents(SparkSession spark, Path file, long keys, long start, long end) {
    long devices = keys / 2;
    // beside the folder, not in it: a query may be reading the folder
    Path dir = file.getParent();
    Path tmp = dir.resolveSibling(dir.getFileName() + "-tail-tmp");
    try {
      Dirs.delete(tmp);
      spark
          .range(start, end, 1, 1)
          .selectExpr(
              "concat('e', id % " + keys + ") AS eventId",
              "concat('device-', id % " + devices + ") AS device",
              "timestamp_seconds("
                  + T0
                  + " + ((id div "
                  + devices
                  + ") % 2) * 300 + id % 300) AS ts")
          .write()
          .parquet(tmp.toString());
      try (var list = Files.list(tmp)) {
        Path part =
            list.filter(p -> p.getFileName().toString().endsWith(".parquet"))
                .findFirst()
                .orElseThrow();
        Files.move(part, file);
      }
      Dirs.delete(tmp);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  /**
   * Runs {@code shape} over every input file (one file per micro-batch, Trigger.AvailableNow) into
   * {@code checkpoint} with {@code partitions} state partitions and a no-op sink; returns the
   * query, terminated (its progress counts the batches run).
   */
  static StreamingQuery runQuery(
      SparkSession spark,
      Shape shape,
      Provider provider,
      Path input,
      Path checkpoint,
      int partitions) {
    provider.conf.forEach((k, v) -> spark.conf().set(k, v));
    spark.conf().set("spark.sql.shuffle.partitions", Integer.toString(partitions));
    try {
      StreamingQuery query =
          shape
              .apply(
                  () ->
                      spark
                          .readStream()
                          .schema(SCHEMA)
                          .option("maxFilesPerTrigger", 1)
                          .parquet(input.toString()))
              .writeStream()
              .format("noop")
              .outputMode(shape.outputMode)
              .option("checkpointLocation", checkpoint.toString())
              .trigger(Trigger.AvailableNow())
              .start();
      query.awaitTermination();
      return query;
    } catch (StreamingQueryException | TimeoutException e) {
      throw new IllegalStateException("query " + shape.label + " on " + checkpoint + " failed", e);
    }
  }
}
