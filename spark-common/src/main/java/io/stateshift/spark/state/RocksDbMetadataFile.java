package io.stateshift.spark.state;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.File;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.Set;
import org.apache.spark.sql.execution.streaming.state.RocksDBCheckpointMetadata;
import org.apache.spark.sql.execution.streaming.state.RocksDBCheckpointMetadata$;
import org.apache.spark.sql.execution.streaming.state.RocksDBLogFile;
import org.apache.spark.sql.execution.streaming.state.RocksDBSstFile;

/**
 * Reads the {@code metadata} file of a RocksDB version's zip. Spark's own reader (json4s) reflects
 * over Scala signatures on first use: 0.25-0.4 s on one thread, 0.8 s when a task's threads start
 * together, on the critical path of a restart from a prepared layout. Every field Spark 4.2 writes
 * (SST and log files, key counts, the column family mapping) is read here with Jackson into the
 * same object; any other shape, or anything unexpected, goes to Spark's reader, which also names
 * what is wrong.
 */
final class RocksDbMetadataFile {
  private static final ObjectMapper JSON = new ObjectMapper();
  private static final Set<String> TOP =
      Set.of(
          "sstFiles",
          "logFiles",
          "numKeys",
          "numInternalKeys",
          "columnFamilyMapping",
          "columnFamilyTypeMap",
          "maxColumnFamilyId");

  private RocksDbMetadataFile() {}

  static RocksDBCheckpointMetadata read(File file) {
    RocksDBCheckpointMetadata plain;
    try {
      plain = plain(Files.readString(file.toPath(), StandardCharsets.UTF_8));
    } catch (IOException e) {
      throw new UncheckedIOException("Cannot read " + file + ": " + e.getMessage(), e);
    }
    return plain != null ? plain : RocksDBCheckpointMetadata$.MODULE$.readFromFile(file);
  }

  /** The metadata in {@code text} if it has the shape Spark 4.2 writes, else null. */
  static RocksDBCheckpointMetadata plain(String text) {
    int lineEnd = text.indexOf('\n');
    if (lineEnd < 0 || !text.substring(0, lineEnd).equals("v1")) {
      return null;
    }
    JsonNode root;
    try {
      root = JSON.readTree(text.substring(lineEnd + 1));
    } catch (IOException e) {
      return null;
    }
    if (root == null || !root.isObject()) {
      return null;
    }
    for (Iterator<String> names = root.fieldNames(); names.hasNext(); ) {
      String name = names.next();
      if (!TOP.contains(name) && !root.get(name).isNull()) {
        return null; // a field of a later Spark: Spark's reader decides
      }
    }
    JsonNode numKeys = root.get("numKeys");
    JsonNode numInternalKeys = root.get("numInternalKeys");
    if (!integral(numKeys) || !integral(numInternalKeys)) {
      return null;
    }
    List<RocksDBSstFile> ssts = new ArrayList<>();
    List<RocksDBLogFile> logs = new ArrayList<>();
    if (!files(root.get("sstFiles"), "dfsSstFileName", false, ssts, logs)
        || !files(root.get("logFiles"), "dfsLogFileName", true, ssts, logs)) {
      return null;
    }
    scala.Option<scala.collection.Map<String, Object>> mapping =
        columnFamilies(root.get("columnFamilyMapping"), false);
    scala.Option<scala.collection.Map<String, Object>> types =
        columnFamilies(root.get("columnFamilyTypeMap"), true);
    JsonNode maxId = root.get("maxColumnFamilyId");
    scala.Option<Object> maxColumnFamilyId = ScalaBridge.none();
    if (maxId != null && !maxId.isNull()) {
      if (!isShort(maxId)) {
        return null;
      }
      maxColumnFamilyId = scala.Option.apply((Object) (short) maxId.longValue());
    }
    if (mapping == null || types == null || mapping.isDefined() != maxColumnFamilyId.isDefined()) {
      return null;
    }
    return new RocksDBCheckpointMetadata(
        ScalaBridge.list(ssts),
        ScalaBridge.list(logs),
        numKeys.longValue(),
        numInternalKeys.longValue(),
        mapping,
        types,
        maxColumnFamilyId);
  }

  /**
   * A map of column family names to ids (short) or, {@code flags}, to booleans; None when absent,
   * null when unexpected.
   */
  private static scala.Option<scala.collection.Map<String, Object>> columnFamilies(
      JsonNode node, boolean flags) {
    if (node == null || node.isNull()) {
      return ScalaBridge.none();
    }
    if (!node.isObject()) {
      return null;
    }
    java.util.Map<String, Object> out = new java.util.LinkedHashMap<>();
    for (java.util.Map.Entry<String, JsonNode> field : node.properties()) {
      JsonNode value = field.getValue();
      if (flags) {
        if (!value.isBoolean()) {
          return null;
        }
        out.put(field.getKey(), value.booleanValue());
      } else {
        if (!isShort(value)) {
          return null;
        }
        out.put(field.getKey(), (short) value.longValue());
      }
    }
    return scala.Option.apply(ScalaBridge.immutableMap(out));
  }

  /** Adds the entries of {@code array} (absent only for the log files); false if unexpected. */
  private static boolean files(
      JsonNode array,
      String dfsName,
      boolean logFiles,
      List<RocksDBSstFile> ssts,
      List<RocksDBLogFile> logs) {
    if (array == null || array.isNull()) {
      return logFiles; // Spark leaves out an empty list of log files
    }
    if (!array.isArray()) {
      return false;
    }
    for (JsonNode entry : array) {
      if (!entry.isObject() || entry.size() != 3) {
        return false;
      }
      JsonNode local = entry.get("localFileName");
      JsonNode dfs = entry.get(dfsName);
      JsonNode size = entry.get("sizeBytes");
      if (local == null || !local.isTextual() || dfs == null || !dfs.isTextual()) {
        return false;
      }
      if (!integral(size)) {
        return false;
      }
      if (logFiles) {
        logs.add(new RocksDBLogFile(local.textValue(), dfs.textValue(), size.longValue()));
      } else {
        ssts.add(new RocksDBSstFile(local.textValue(), dfs.textValue(), size.longValue()));
      }
    }
    return true;
  }

  /** A column family id: Spark keeps it as a short. */
  private static boolean isShort(JsonNode node) {
    return integral(node) && node.longValue() == (short) node.longValue();
  }

  private static boolean integral(JsonNode node) {
    return node != null && node.isIntegralNumber() && node.canConvertToLong();
  }
}
