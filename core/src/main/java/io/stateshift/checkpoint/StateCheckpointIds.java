package io.stateshift.checkpoint;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.stateshift.checkpoint.spi.SparkLines;
import java.io.Serializable;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * State checkpoint format v2 ({@code spark.sql.streaming.stateStore.checkpointFormatVersion=2}):
 * each commit log entry names, per operator, partition and store, the unique id of the state
 * version that batch committed ({@code stateUniqueIds}), and RocksDB names its files {@code
 * <version>_<id>.zip} / {@code .changelog}. A version can only be loaded by that id, and a batch's
 * commit must name the ids of the files it wrote. Format v1 has no ids.
 */
public final class StateCheckpointIds implements Serializable {
  public static final String FORMAT_VERSION_CONF =
      "spark.sql.streaming.stateStore.checkpointFormatVersion";
  private static final ObjectMapper JSON = new ObjectMapper();

  /** operator id -> [partition][store position] -> unique id, as the commit records it. */
  private final Map<Long, String[][]> ids;

  private StateCheckpointIds(Map<Long, String[][]> ids) {
    this.ids = ids;
  }

  /**
   * The ids a commit log entry records, or null for format v1 (no {@code stateUniqueIds}).
   *
   * @throws IllegalArgumentException if the field is there but not the shape Spark writes
   */
  static StateCheckpointIds fromCommit(JsonNode commit) {
    JsonNode node = commit.get("stateUniqueIds");
    if (node == null || node.isNull() || (node.isObject() && node.isEmpty())) {
      return null;
    }
    if (!node.isObject()) {
      throw new IllegalArgumentException("stateUniqueIds is not an object");
    }
    Map<Long, String[][]> out = new LinkedHashMap<>();
    for (Map.Entry<String, JsonNode> op : node.properties()) {
      JsonNode partitions = op.getValue();
      if (!partitions.isArray()) {
        throw new IllegalArgumentException(
            "stateUniqueIds of operator " + op.getKey() + " is not an array");
      }
      String[][] perPartition = new String[partitions.size()][];
      for (int p = 0; p < partitions.size(); p++) {
        JsonNode stores = partitions.get(p);
        if (!stores.isArray() || stores.isEmpty()) {
          throw new IllegalArgumentException(
              "stateUniqueIds of operator "
                  + op.getKey()
                  + " partition "
                  + p
                  + " is not a non-empty array");
        }
        perPartition[p] = new String[stores.size()];
        for (int s = 0; s < stores.size(); s++) {
          perPartition[p][s] = stores.get(s).asText();
        }
      }
      out.put(Long.parseLong(op.getKey()), perPartition);
    }
    return new StateCheckpointIds(out);
  }

  /** The partition count the ids of an operator cover, or -1 when the operator has none. */
  public int partitionsOf(long operatorId) {
    String[][] op = ids.get(operatorId);
    return op == null ? -1 : op.length;
  }

  /**
   * The unique id of the state version one store of one partition committed, or null. The store's
   * position in the array is Spark's own (stream-stream joins keep four stores in a fixed order).
   */
  public String idOf(long operatorId, int partition, String storeName) {
    String[][] op = ids.get(operatorId);
    if (op == null || partition >= op.length) {
      return null;
    }
    int position = storePosition(storeName);
    return position < op[partition].length ? op[partition][position] : null;
  }

  /** Where a store's id sits in a partition's array, as the Spark line reads it. */
  static int storePosition(String storeName) {
    return SparkLines.get().checkpointIdPosition(storeName);
  }

  /**
   * The text of the repartition's commit: the base commit with its {@code stateUniqueIds} replaced
   * by the ids of the newly written versions; everything else (watermark, sink metadata) is kept as
   * it is, and so is the version line, except that commit log version 1, which cannot carry ids,
   * becomes version 2.
   *
   * @param newIds operator id -> store name -> the id written for each new partition
   */
  public static String commitWithIds(
      String baseCommitText, Map<Long, Map<String, String[]>> newIds) {
    int lineBreak = baseCommitText.indexOf('\n');
    String versionLine = baseCommitText.substring(0, lineBreak);
    try {
      ObjectNode commit = (ObjectNode) JSON.readTree(baseCommitText.substring(lineBreak + 1));
      ObjectNode unique = JSON.createObjectNode();
      for (Map.Entry<Long, Map<String, String[]>> op : newIds.entrySet()) {
        int partitions = op.getValue().values().iterator().next().length;
        int positions = 0;
        for (String store : op.getValue().keySet()) {
          positions = Math.max(positions, storePosition(store) + 1);
        }
        ArrayNode perPartition = unique.putArray(Long.toString(op.getKey()));
        for (int p = 0; p < partitions; p++) {
          String[] row = new String[positions];
          for (Map.Entry<String, String[]> store : op.getValue().entrySet()) {
            row[storePosition(store.getKey())] = store.getValue()[p];
          }
          ArrayNode stores = perPartition.addArray();
          for (String id : row) {
            if (id == null) {
              throw new IllegalStateException(
                  "operator "
                      + op.getKey()
                      + " partition "
                      + p
                      + " has no checkpoint id for every store position");
            }
            stores.add(id);
          }
        }
      }
      commit.set("stateUniqueIds", unique);
      // Spark's commit log version 1 cannot carry ids (its reader drops them): version 2 can
      return (versionLine.trim().equals("v1") ? "v2" : versionLine)
          + "\n"
          + JSON.writeValueAsString(commit);
    } catch (java.io.IOException e) {
      throw new IllegalStateException(e);
    }
  }

  /**
   * The text of a commit in state checkpoint format v1: the base commit without its {@code
   * stateUniqueIds}, commit log version 2 (format v2's) as version 1; everything else is kept as it
   * is.
   */
  public static String commitWithoutIds(String baseCommitText) {
    int lineBreak = baseCommitText.indexOf('\n');
    String versionLine = baseCommitText.substring(0, lineBreak);
    try {
      ObjectNode commit = (ObjectNode) JSON.readTree(baseCommitText.substring(lineBreak + 1));
      commit.remove("stateUniqueIds");
      // version 2 is format v2's commit; version 3 (with sink metadata) serves either format
      return (versionLine.trim().equals("v2") ? "v1" : versionLine)
          + "\n"
          + JSON.writeValueAsString(commit);
    } catch (java.io.IOException e) {
      throw new IllegalStateException(e);
    }
  }

  /** The operators the ids cover. */
  List<Long> operatorIds() {
    return List.copyOf(ids.keySet());
  }
}
