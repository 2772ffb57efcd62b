package io.stateshift.monitor;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FileStatus;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;

/**
 * The progress history the monitor writes ({@code spark.stateshift.monitor.history}): one JSON line
 * per event, {@code {"event":"progress","triggerIntervalMs":..,"backlog":..,"progress":{..}}} with
 * Spark's own progress JSON inside. Read by the doctor and the report.
 */
public final class ProgressHistory {
  private static final ObjectMapper JSON = new ObjectMapper();

  /** One micro-batch as the history recorded it. */
  public record Batch(
      String queryId,
      String runId,
      String name,
      long batchId,
      long timestampMs,
      long durationMs,
      long triggerIntervalMs,
      long inputRows,
      double inputRowsPerSecond,
      double processedRowsPerSecond,
      Map<String, Long> stateRows,
      long watermarkDelayMs,
      double backlog,
      Map<String, Long> stateBytes) {}

  private final List<Batch> batches;

  private ProgressHistory(List<Batch> batches) {
    this.batches = batches;
  }

  public List<Batch> batches() {
    return batches;
  }

  /** Only the batches of one query (the id in the checkpoint's metadata file). */
  public ProgressHistory ofQuery(String queryId) {
    return new ProgressHistory(batches.stream().filter(b -> b.queryId().equals(queryId)).toList());
  }

  /** Reads a history file, or every {@code .jsonl} file below a folder, on any Hadoop path. */
  public static ProgressHistory read(String location, Configuration conf) {
    List<Batch> out = new ArrayList<>();
    try {
      Path path = new Path(location);
      FileSystem fs = path.getFileSystem(conf);
      if (!fs.exists(path)) {
        throw new io.stateshift.StateShiftException(
            io.stateshift.StateShiftException.Reason.INVALID_ARGUMENT,
            "History location "
                + location
                + " does not exist. Pass the folder set as "
                + StreamMonitor.PREFIX
                + "history.");
      }
      List<Path> files = new ArrayList<>();
      FileStatus status = fs.getFileStatus(path);
      if (status.isFile()) {
        files.add(path);
      } else {
        collect(fs, path, files);
      }
      for (Path file : files) {
        String text;
        try (var in = fs.open(file)) {
          text = new String(in.readAllBytes(), java.nio.charset.StandardCharsets.UTF_8);
        }
        for (String line : text.split("\n")) {
          Batch batch = parse(line);
          if (batch != null) {
            out.add(batch);
          }
        }
      }
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
    out.sort(Comparator.comparingLong(Batch::timestampMs).thenComparingLong(Batch::batchId));
    return new ProgressHistory(List.copyOf(out));
  }

  /** The .jsonl files below a folder (listStatus: no per-file permission lookups). */
  private static void collect(FileSystem fs, Path dir, List<Path> out) throws IOException {
    for (FileStatus status : fs.listStatus(dir)) {
      if (status.isDirectory()) {
        collect(fs, status.getPath(), out);
      } else if (status.getPath().getName().endsWith(".jsonl")) {
        out.add(status.getPath());
      }
    }
  }

  /** One history line, or null when it is not a progress event (or is cut short). */
  static Batch parse(String line) {
    if (line.isBlank()) {
      return null;
    }
    JsonNode node;
    try {
      node = JSON.readTree(line);
    } catch (IOException e) {
      return null; // the last line of a history being written may be incomplete
    }
    if (!"progress".equals(node.path("event").asText()) || !node.has("progress")) {
      return null;
    }
    JsonNode p = node.get("progress");
    Map<String, Long> stateRows = new LinkedHashMap<>();
    Map<String, Long> stateBytes = new LinkedHashMap<>();
    int index = 0;
    for (JsonNode op : p.path("stateOperators")) {
      String key = index++ + ":" + op.path("operatorName").asText();
      stateRows.put(key, op.path("numRowsTotal").asLong());
      // RocksDB's SST files are its state's size; its memoryUsedBytes is the cache's
      long sst = op.path("customMetrics").path("rocksdbSstFileSize").asLong(0);
      stateBytes.put(key, sst > 0 ? sst : op.path("memoryUsedBytes").asLong());
    }
    return new Batch(
        p.path("id").asText(),
        p.path("runId").asText(),
        p.path("name").isNull() ? null : p.path("name").asText(null),
        p.path("batchId").asLong(),
        parseTime(p.path("timestamp").asText()),
        p.path("durationMs").path("triggerExecution").asLong(),
        node.path("triggerIntervalMs").asLong(0),
        p.path("numInputRows").asLong(),
        p.path("inputRowsPerSecond").asDouble(0),
        p.path("processedRowsPerSecond").asDouble(0),
        stateRows,
        watermarkDelayMs(p.path("eventTime")),
        node.path("backlog").asDouble(0),
        stateBytes);
  }

  /** Event-time lag behind the newest event: max event time minus the watermark, or -1. */
  static long watermarkDelayMs(JsonNode eventTime) {
    if (!eventTime.has("watermark") || !eventTime.has("max")) {
      return -1;
    }
    long watermark = parseTime(eventTime.get("watermark").asText());
    long max = parseTime(eventTime.get("max").asText());
    return watermark <= 0 || max <= 0 ? -1 : Math.max(0, max - watermark);
  }

  static long parseTime(String iso) {
    try {
      return Instant.parse(iso).toEpochMilli();
    } catch (RuntimeException e) {
      return 0;
    }
  }

  /** The operator keys ("0:stateStoreSave") the history mentions, in first-seen order. */
  public List<String> operators() {
    List<String> out = new ArrayList<>();
    for (Batch b : batches) {
      for (Iterator<String> it = b.stateRows().keySet().iterator(); it.hasNext(); ) {
        String key = it.next();
        if (!out.contains(key)) {
          out.add(key);
        }
      }
    }
    return out;
  }
}
