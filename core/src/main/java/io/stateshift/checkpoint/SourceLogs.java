package io.stateshift.checkpoint;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.TreeMap;
import org.apache.hadoop.fs.FileStatus;
import org.apache.hadoop.fs.Path;

/**
 * Reads what a checkpoint records about its sources: the file source's log under {@code
 * sources/<i>/} (one file per source batch, every tenth compacted into {@code <batch>.compact}
 * holding all entries so far, each entry tagged with its batch id) and the Kafka source's initial
 * offsets ({@code sources/<i>/0}).
 */
public final class SourceLogs {
  private static final ObjectMapper JSON = new ObjectMapper();

  /** One file the file source took in, with the source batch that took it. */
  public record FileEntry(String path, long sourceBatch) {}

  private SourceLogs() {}

  /** The source's offset JSON is the file source's: {"logOffset":N}. */
  public static boolean isFileSourceOffset(JsonNode offset) {
    return offset != null && offset.isObject() && offset.size() == 1 && offset.has("logOffset");
  }

  /** Kafka's offset JSON: {"topic":{"0":123,"1":456}}, every value a number. */
  public static boolean isKafkaOffset(JsonNode offset) {
    if (offset == null || !offset.isObject() || offset.isEmpty()) {
      return false;
    }
    for (Iterator<JsonNode> topics = offset.elements(); topics.hasNext(); ) {
      JsonNode partitions = topics.next();
      if (!partitions.isObject()) {
        return false;
      }
      for (Iterator<JsonNode> p = partitions.elements(); p.hasNext(); ) {
        if (!p.next().isNumber()) {
          return false;
        }
      }
    }
    return true;
  }

  /** Sum of a Kafka offset's per-partition positions minus those of {@code before}. */
  public static long kafkaOffsetsBetween(JsonNode before, JsonNode after) {
    long total = 0;
    for (Map.Entry<String, JsonNode> topic : after.properties()) {
      for (Map.Entry<String, JsonNode> partition : topic.getValue().properties()) {
        JsonNode start =
            before == null ? null : before.path(topic.getKey()).get(partition.getKey());
        long from = start == null || start.asLong() < 0 ? 0 : start.asLong();
        total += Math.max(0, partition.getValue().asLong() - from);
      }
    }
    return total;
  }

  /** Kafka's starting offsets for source {@code index}, when the checkpoint kept them. */
  public static Optional<JsonNode> kafkaInitialOffsets(CheckpointFiles files, int index) {
    Path path = files.path("sources/" + index + "/0");
    if (!files.exists(path)) {
      return Optional.empty();
    }
    String text = files.readText(path);
    int brace = text.indexOf('{'); // the file starts with a marker byte and a version line
    try {
      JsonNode node = brace < 0 ? null : JSON.readTree(text.substring(brace));
      return isKafkaOffset(node) ? Optional.of(node) : Optional.empty();
    } catch (Exception e) {
      return Optional.empty();
    }
  }

  /**
   * The files the file source {@code index} took in, in source batches {@code (afterBatch,
   * upToBatch]}, read from the newest compact file at or below {@code upToBatch} when it covers the
   * range, and the per-batch files after it.
   */
  public static List<FileEntry> fileEntries(
      CheckpointFiles files, int index, long afterBatch, long upToBatch) {
    Path dir = files.path("sources/" + index);
    TreeMap<Long, Path> batchFiles = new TreeMap<>();
    for (FileStatus status : files.list(dir)) {
      String name = status.getPath().getName();
      if (name.matches("\\d+(\\.compact)?")) {
        batchFiles.put(Long.parseLong(name.replace(".compact", "")), status.getPath());
      }
    }
    List<FileEntry> out = new ArrayList<>();
    // The newest compact file in range holds every entry up to its batch.
    Long compact = null;
    for (Map.Entry<Long, Path> e :
        batchFiles.subMap(afterBatch, false, upToBatch, true).descendingMap().entrySet()) {
      if (e.getValue().getName().endsWith(".compact")) {
        compact = e.getKey();
        break;
      }
    }
    long from = afterBatch;
    if (compact != null) {
      for (FileEntry entry : read(files, batchFiles.get(compact))) {
        if (entry.sourceBatch() > afterBatch && entry.sourceBatch() <= compact) {
          out.add(entry);
        }
      }
      from = compact;
    }
    for (Path path : batchFiles.subMap(from, false, upToBatch, true).values()) {
      out.addAll(read(files, path));
    }
    return out;
  }

  /** Files per source batch, for every source batch up to {@code upToBatch}. */
  public static Map<Long, Integer> filesPerSourceBatch(
      CheckpointFiles files, int index, long upToBatch) {
    Map<Long, Integer> out = new HashMap<>();
    for (FileEntry entry : fileEntries(files, index, -1, upToBatch)) {
      out.merge(entry.sourceBatch(), 1, Integer::sum);
    }
    return out;
  }

  private static List<FileEntry> read(CheckpointFiles files, Path path) {
    List<FileEntry> out = new ArrayList<>();
    String[] lines = files.readText(path).split("\n");
    for (int i = 1; i < lines.length; i++) { // line 0 is the version, "v1"
      if (lines[i].isBlank()) {
        continue;
      }
      try {
        JsonNode node = JSON.readTree(lines[i]);
        out.add(new FileEntry(node.path("path").asText(), node.path("batchId").asLong()));
      } catch (Exception e) {
        // a damaged entry does not count; the doctor measures, it does not validate the log
      }
    }
    return out;
  }
}
