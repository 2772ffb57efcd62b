package io.stateshift.checkpoint;

import com.fasterxml.jackson.databind.DeserializationFeature;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * One file of the offset log: a version line, the batch metadata JSON (watermark, timestamp and the
 * confs Spark pins for the query's lifetime) and the source offsets, which are kept verbatim.
 */
public final class OffsetLogEntry {
  public static final String SHUFFLE_PARTITIONS = "spark.sql.shuffle.partitions";
  public static final String PROVIDER_CLASS = "spark.sql.streaming.stateStore.providerClass";
  public static final String STRICT_DISTRIBUTION =
      "spark.sql.streaming.statefulOperator.useStrictDistribution";
  private static final ObjectMapper JSON = new ObjectMapper();
  private static final ObjectMapper STRICT_JSON =
      new ObjectMapper().enable(DeserializationFeature.FAIL_ON_TRAILING_TOKENS);

  private final String versionLine;
  private final ObjectNode metadata;
  private final String offsets;

  private OffsetLogEntry(String versionLine, ObjectNode metadata, String offsets) {
    this.versionLine = versionLine;
    this.metadata = metadata;
    this.offsets = offsets;
  }

  /** Parses the text of an offset file; throws IllegalArgumentException naming what is wrong. */
  static OffsetLogEntry parse(String text) {
    if (text.isEmpty()) {
      throw new IllegalArgumentException("the file is empty");
    }
    int firstBreak = text.indexOf('\n');
    if (firstBreak < 0) {
      throw new IllegalArgumentException("the file is truncated after its version line");
    }
    String versionLine = text.substring(0, firstBreak);
    if (!versionLine.equals("v1") && !versionLine.equals("v2")) {
      throw new IllegalArgumentException(
          "unknown offset log version '"
              + versionLine
              + "' (this stateshift reads v1 and v2, written by Spark 3.x and 4.x)");
    }
    int secondBreak = text.indexOf('\n', firstBreak + 1);
    String metadataLine =
        secondBreak < 0
            ? text.substring(firstBreak + 1)
            : text.substring(firstBreak + 1, secondBreak);
    String offsets = secondBreak < 0 ? "" : text.substring(secondBreak);
    JsonNode node;
    try {
      node = JSON.readTree(metadataLine);
    } catch (Exception e) {
      throw new IllegalArgumentException("its metadata line is not valid JSON");
    }
    if (!(node instanceof ObjectNode) || !(node.get("conf") instanceof ObjectNode)) {
      throw new IllegalArgumentException("its metadata line has no conf object");
    }
    checkSourceOffsets(versionLine, offsets);
    return new OffsetLogEntry(versionLine, (ObjectNode) node, offsets);
  }

  /**
   * The source offsets are copied verbatim into the repartition batch, so a damaged line would be
   * copied too and stop the restarted query: every source's line must be what Spark reads back, "-"
   * (no offset yet) or the source's JSON offset; in v2 prefixed by "sourceId:".
   */
  private static void checkSourceOffsets(String versionLine, String offsets) {
    // offsets is empty or starts with the line break that ends the metadata line
    List<String> lines = new ArrayList<>(Arrays.asList(offsets.split("\n", -1)));
    if (!lines.isEmpty()) {
      lines.remove(0);
    }
    if (!lines.isEmpty() && lines.get(lines.size() - 1).isEmpty()) {
      lines.remove(lines.size() - 1); // one trailing line break, as Spark's line reader allows
    }
    if (lines.isEmpty()) {
      throw new IllegalArgumentException(
          "it has no source offsets after its metadata line (the " + "file is truncated)");
    }
    for (int i = 0; i < lines.size(); i++) {
      String line = lines.get(i);
      int lineNumber = i + 3;
      if (versionLine.equals("v2")) {
        int colon = line.indexOf(':');
        if (colon < 0) {
          throw new IllegalArgumentException(
              "its source offset on line "
                  + lineNumber
                  + " lacks the 'sourceId:' prefix of the v2 format (the file is truncated or "
                  + "damaged)");
        }
        line = line.substring(colon + 1);
      }
      if (line.equals("-")) {
        continue;
      }
      try {
        JsonNode offset = STRICT_JSON.readTree(line);
        if (offset == null || offset.isMissingNode()) {
          throw new IllegalArgumentException();
        }
      } catch (Exception e) {
        throw new IllegalArgumentException(
            "its source offset on line "
                + lineNumber
                + " is not valid JSON (the file is truncated or damaged)");
      }
    }
  }

  public Map<String, String> conf() {
    Map<String, String> out = new LinkedHashMap<>();
    metadata.get("conf").properties().forEach(e -> out.put(e.getKey(), e.getValue().asText()));
    return out;
  }

  /** The number of state partitions this batch ran with, or -1 when it is not recorded. */
  public int shufflePartitions() {
    JsonNode value = metadata.get("conf").get(SHUFFLE_PARTITIONS);
    if (value == null) {
      return -1;
    }
    try {
      return Integer.parseInt(value.asText());
    } catch (NumberFormatException e) {
      return -1;
    }
  }

  public String providerClass() {
    JsonNode value = metadata.get("conf").get(PROVIDER_CLASS);
    return value == null ? null : value.asText();
  }

  /**
   * Each source's offset JSON in source order (the "sourceId:" prefix of v2 removed), or null for a
   * source without an offset yet ("-").
   */
  public List<String> sourceOffsets() {
    List<String> out = new ArrayList<>();
    String[] lines = offsets.split("\n");
    for (String line : lines) {
      if (line.isEmpty()) {
        continue;
      }
      if (versionLine.equals("v2")) {
        line = line.substring(line.indexOf(':') + 1);
      }
      out.add(line.equals("-") ? null : line);
    }
    return out;
  }

  /** When the batch was planned, in epoch milliseconds (0 when not recorded). */
  public long batchTimestampMs() {
    JsonNode value = metadata.get("batchTimestampMs");
    return value == null ? 0 : value.asLong();
  }

  public long batchWatermarkMs() {
    JsonNode value = metadata.get("batchWatermarkMs");
    return value == null ? 0 : value.asLong();
  }

  /**
   * The same entry with another partition count; everything else, offsets included, unchanged,
   * except that strict distribution is recorded as on: the repartitioned state sits where the
   * operator's full partition key puts it, and only strict distribution makes the restarted query
   * place its new rows the same way (without it, a query may place aggregation, dedup, session
   * window and flatMapGroupsWithState rows by a subset of the key, SPARK-38204).
   */
  public OffsetLogEntry withShufflePartitions(int partitions) {
    ObjectNode copy = metadata.deepCopy();
    ((ObjectNode) copy.get("conf")).put(SHUFFLE_PARTITIONS, Integer.toString(partitions));
    ((ObjectNode) copy.get("conf")).put(STRICT_DISTRIBUTION, "true");
    return new OffsetLogEntry(versionLine, copy, offsets);
  }

  /**
   * The same entry naming another state store provider: Spark sets the session's provider from the
   * offset log when a query restarts (OffsetSeqMetadata.setSessionConf), so the restarted query
   * opens its stores with this one.
   */
  public OffsetLogEntry withProviderClass(String providerClass) {
    ObjectNode copy = metadata.deepCopy();
    ((ObjectNode) copy.get("conf")).put(PROVIDER_CLASS, providerClass);
    return new OffsetLogEntry(versionLine, copy, offsets);
  }

  public String toText() {
    try {
      return versionLine + "\n" + JSON.writeValueAsString(metadata) + offsets;
    } catch (Exception e) {
      throw new IllegalStateException(e);
    }
  }
}
