package io.stateshift.checkpoint;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.stateshift.StateShiftException;
import io.stateshift.StateShiftException.Reason;
import io.stateshift.checkpoint.spi.SparkLines;
import java.util.ArrayList;
import java.util.List;
import java.util.NavigableSet;
import java.util.Optional;
import java.util.TreeSet;
import org.apache.hadoop.fs.FileStatus;
import org.apache.hadoop.fs.Path;

/**
 * A read-only view of a streaming checkpoint: query id, offset and commit logs, and the stateful
 * operators. Loading validates everything a repartition relies on, so problems surface before any
 * write, with the reason and the fix.
 */
public final class Checkpoint {
  private static final ObjectMapper JSON = new ObjectMapper();

  private final CheckpointFiles files;
  private final String queryId;
  private final NavigableSet<Long> offsetBatches;
  private final NavigableSet<Long> commitBatches;

  private Checkpoint(
      CheckpointFiles files,
      String queryId,
      NavigableSet<Long> offsetBatches,
      NavigableSet<Long> commitBatches) {
    this.files = files;
    this.queryId = queryId;
    this.offsetBatches = offsetBatches;
    this.commitBatches = commitBatches;
  }

  public static Checkpoint load(CheckpointFiles files) {
    Path root = files.root();
    boolean exists;
    try {
      exists = files.exists(root); // the first request to the store: credentials fail here
    } catch (java.io.UncheckedIOException e) {
      if (e.getCause() instanceof java.nio.file.AccessDeniedException) {
        throw files.accessDenied(e.getCause());
      }
      throw e;
    }
    if (!exists) {
      throw new StateShiftException(
          Reason.CHECKPOINT_NOT_FOUND,
          "Checkpoint location "
              + root
              + " does not exist. Pass the checkpointLocation option of "
              + "the stopped query.");
    }
    if (!files.isDirectory(root)) {
      throw new StateShiftException(
          Reason.NOT_A_CHECKPOINT,
          root + " is a file, not a checkpoint folder. Pass the checkpointLocation folder.");
    }
    Path metadata = files.path("metadata");
    boolean hasOffsets = files.isDirectory(files.path("offsets"));
    if (!files.exists(metadata) && hasOffsets) {
      throw corrupt(
          files,
          "its 'metadata' file (the query id) is missing, though its 'offsets' " + "log is there",
          "Restore the 'metadata' file, or the whole checkpoint, from a backup.");
    }
    if (!files.exists(metadata) || !hasOffsets) {
      throw new StateShiftException(
          Reason.NOT_A_CHECKPOINT,
          root
              + " is not a streaming checkpoint ("
              + (hasOffsets ? "no 'metadata' file" : "no 'offsets' folder")
              + "). Pass the checkpointLocation of a Structured "
              + "Streaming query.");
    }
    String queryId;
    try {
      JsonNode node = JSON.readTree(files.readText(metadata));
      queryId = node.get("id").asText();
    } catch (Exception e) {
      throw corrupt(
          files,
          "its 'metadata' file is not the JSON Spark writes ({\"id\":...})",
          "Restore the 'metadata' file, or the whole checkpoint, from a backup.");
    }
    NavigableSet<Long> offsets = batchIds(files, "offsets");
    NavigableSet<Long> commits = batchIds(files, "commits");
    return new Checkpoint(files, queryId, offsets, commits);
  }

  private static NavigableSet<Long> batchIds(CheckpointFiles files, String log) {
    NavigableSet<Long> ids = new TreeSet<>();
    for (FileStatus status : files.list(files.path(log))) {
      String name = status.getPath().getName();
      if (name.startsWith(".") || status.isDirectory()) {
        continue; // temporary files of an interrupted log write; Spark ignores them as well
      }
      try {
        ids.add(Long.parseLong(name));
      } catch (NumberFormatException e) {
        throw corrupt(
            files,
            "its " + log + " log holds a file named '" + name + "', which is not a batch id",
            "Move that file out of the '"
                + log
                + "' folder: "
                + "Spark writes only files named by batch id there.");
      }
    }
    return ids;
  }

  public static final String RESTORE = "Restore the checkpoint from a backup.";
  private static final String RESTORE_OR_REMOVE =
      "Restore the checkpoint from a backup, or "
          + "remove the damaged file if it is the newest log entry and was never committed.";

  public static StateShiftException corrupt(CheckpointFiles files, String what) {
    return corrupt(files, what, RESTORE_OR_REMOVE);
  }

  /** A refusal of a damaged checkpoint, naming what is damaged and how to repair it. */
  public static StateShiftException corrupt(CheckpointFiles files, String what, String fix) {
    return new StateShiftException(
        Reason.CORRUPT_CHECKPOINT,
        "Checkpoint " + files.root() + " is damaged: " + what + ". " + fix);
  }

  /** The text of a checkpoint file; a file that cannot be read (checksum error, I/O) is damage. */
  private String readChecked(Path path, String fix) {
    try {
      return files.readText(path);
    } catch (java.io.UncheckedIOException e) {
      throw corrupt(
          files,
          files.relativize(path) + " cannot be read (" + e.getCause().getMessage() + ")",
          fix);
    }
  }

  /** How to repair a damaged offset log entry: a committed one is needed, only a backup helps. */
  private String offsetsFix(long batchId) {
    return batchId <= lastCommittedBatch() ? RESTORE : RESTORE_OR_REMOVE;
  }

  public CheckpointFiles files() {
    return files;
  }

  public String queryId() {
    return queryId;
  }

  /** The newest batch with an offset log entry, or -1. */
  public long lastPlannedBatch() {
    return offsetBatches.isEmpty() ? -1 : offsetBatches.last();
  }

  /** The newest batch with a commit log entry, or -1. */
  public long lastCommittedBatch() {
    return commitBatches.isEmpty() ? -1 : commitBatches.last();
  }

  public OffsetLogEntry offsets(long batchId) {
    Path path = files.path("offsets/" + batchId);
    if (!files.exists(path)) {
      throw corrupt(files, "offsets/" + batchId + " is missing", offsetsFix(batchId));
    }
    String text = readChecked(path, offsetsFix(batchId));
    try {
      return OffsetLogEntry.parse(text);
    } catch (IllegalArgumentException e) {
      throw corrupt(
          files, "offsets/" + batchId + " cannot be read: " + e.getMessage(), offsetsFix(batchId));
    }
  }

  /** The text of a commit file after validating that Spark can read it. */
  public String commitText(long batchId) {
    Path path = files.path("commits/" + batchId);
    if (!files.exists(path)) {
      throw corrupt(files, "commits/" + batchId + " is missing");
    }
    String text = readChecked(path, RESTORE_OR_REMOVE);
    int lineBreak = text.indexOf('\n');
    if (text.isEmpty() || lineBreak < 0) {
      throw corrupt(files, "commits/" + batchId + " is empty or truncated");
    }
    String version = text.substring(0, lineBreak);
    if (!version.matches("v[1-3]")) {
      throw corrupt(
          files,
          "commits/"
              + batchId
              + " has an unknown version line '"
              + version
              + "' (Spark 4.2 writes v1 to v3)");
    }
    try {
      JsonNode node = JSON.readTree(text.substring(lineBreak + 1));
      if (node == null || !node.isObject()) {
        throw new IllegalArgumentException();
      }
      StateCheckpointIds.fromCommit(node); // format v2: the ids must be readable too
    } catch (StateShiftException e) {
      throw e;
    } catch (Exception e) {
      throw corrupt(files, "commits/" + batchId + " is not valid JSON (truncated or damaged)");
    }
    return text;
  }

  /**
   * The state checkpoint ids a commit records (state checkpoint format v2), or null when the
   * checkpoint uses format v1.
   */
  public StateCheckpointIds checkpointIds(long batchId) {
    String text = commitText(batchId);
    try {
      return StateCheckpointIds.fromCommit(JSON.readTree(text.substring(text.indexOf('\n') + 1)));
    } catch (Exception e) {
      throw corrupt(
          files,
          "commits/"
              + batchId
              + " records stateUniqueIds Spark cannot read ("
              + e.getMessage()
              + ")");
    }
  }

  /** The stateful operators found under {@code state/}, in operator id order. */
  public List<StatefulOperator> operators() {
    List<StatefulOperator> out = new ArrayList<>();
    List<Long> ids = new ArrayList<>();
    for (FileStatus status : files.list(files.path("state"))) {
      String name = status.getPath().getName();
      if (status.isDirectory() && name.matches("\\d+")) {
        ids.add(Long.parseLong(name));
      }
    }
    ids.sort(Long::compare);
    for (long id : ids) {
      out.add(readOperator(id));
    }
    return out;
  }

  /** The operators, or none when the state folder cannot be read (used while undoing). */
  public List<StatefulOperator> operatorsQuietly() {
    try {
      return operators();
    } catch (RuntimeException e) {
      return List.of();
    }
  }

  private StatefulOperator readOperator(long id) {
    Optional<Path> v2 = latestV2Metadata(id);
    Path v1 = files.path("state/" + id + "/_metadata/metadata");
    Path chosen;
    int version;
    if (v2.isPresent()) {
      chosen = v2.get();
      version = 2;
    } else if (files.exists(v1)) {
      chosen = v1;
      version = 1;
    } else {
      return SparkLines.get().deriveOperator(files, id);
    }
    ObjectNode node = readMetadataJson(chosen);
    try {
      JsonNode info = node.get("operatorInfo");
      String name = info.get("operatorName").asText();
      List<StatefulOperator.Store> stores = new ArrayList<>();
      int partitions = -1;
      for (JsonNode store : (ArrayNode) node.get("stateStoreInfo")) {
        stores.add(
            new StatefulOperator.Store(
                store.get("storeName").asText(), store.get("numColsPrefixKey").asInt()));
        partitions = store.get("numPartitions").asInt();
      }
      return new StatefulOperator(id, name, List.copyOf(stores), partitions, version);
    } catch (RuntimeException e) {
      throw corrupt(
          files, files.relativize(chosen) + " lacks operatorInfo or stateStoreInfo", RESTORE);
    }
  }

  public Optional<Path> latestV2Metadata(long operatorId) {
    long best = -1;
    for (FileStatus status : files.list(files.path("state/" + operatorId + "/_metadata/v2"))) {
      String name = status.getPath().getName();
      if (name.matches("\\d+")) {
        long batch = Long.parseLong(name);
        if (batch <= lastCommittedBatch() && batch > best) {
          best = batch;
        }
      }
    }
    return best < 0
        ? Optional.empty()
        : Optional.of(files.path("state/" + operatorId + "/_metadata/v2/" + best));
  }

  public ObjectNode readMetadataJson(Path path) {
    String text = readChecked(path, RESTORE);
    int lineBreak = text.indexOf('\n');
    try {
      if (lineBreak < 0 || !text.substring(0, lineBreak).matches("v[12]")) {
        throw new IllegalArgumentException();
      }
      return (ObjectNode) JSON.readTree(text.substring(lineBreak + 1));
    } catch (Exception e) {
      throw corrupt(
          files, files.relativize(path) + " is not operator metadata Spark can read", RESTORE);
    }
  }

  /** The operator metadata text with every store's numPartitions set to {@code partitions}. */
  public String metadataWithPartitions(Path path, int partitions) {
    return metadataWithPartitions(files.readText(path), partitions, path);
  }

  /** The same for metadata text kept elsewhere (the journal); {@code origin} names it in errors. */
  public String metadataWithPartitions(String text, int partitions, Path origin) {
    int lineBreak = text.indexOf('\n');
    String versionLine = lineBreak < 0 ? "" : text.substring(0, lineBreak);
    ObjectNode node;
    try {
      if (!versionLine.matches("v[12]")) {
        throw new IllegalArgumentException();
      }
      node = (ObjectNode) JSON.readTree(text.substring(lineBreak + 1));
    } catch (Exception e) {
      throw corrupt(
          files, files.relativize(origin) + " is not operator metadata Spark can read", RESTORE);
    }
    for (JsonNode store : (ArrayNode) node.get("stateStoreInfo")) {
      ((ObjectNode) store).put("numPartitions", partitions);
    }
    try {
      return versionLine + "\n" + JSON.writeValueAsString(node);
    } catch (Exception e) {
      throw new IllegalStateException(e);
    }
  }
}
