package io.stateshift.checkpoint;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.DeserializationFeature;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.Serializable;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Optional;
import org.apache.hadoop.fs.FileStatus;
import org.apache.hadoop.fs.Path;

/**
 * The record of a prepared layout: the state of committed batch {@code preparedBatch} (state
 * version {@code preparedBatch + 1}) written for {@code toPartitions} partitions under {@code
 * _stateshift/prepared/<id>/staged/state/...}, by {@code stateshift prepare}. It is written last,
 * after every file it names, so a folder without it is an unfinished prepare and never used.
 *
 * @param stores every store of the layout, with the prepared file, its bytes, rows and SHA-256 per
 *     new partition
 */
public record PreparedManifest(
    int format,
    String id,
    String queryId,
    long preparedBatch,
    int fromPartitions,
    int toPartitions,
    String provider,
    String compressionCodec,
    long createdAtMs,
    List<Store> stores)
    implements Serializable {

  public static final int FORMAT = 1;

  /** The folder of all prepared layouts, relative to the checkpoint. */
  public static final String DIR = "_stateshift/prepared";

  public static final String MANIFEST = "manifest.json";

  /** The compression codec setting of the state stores. */
  public static final String CODEC_CONF = "spark.sql.streaming.stateStore.compression.codec";

  private static final ObjectMapper JSON =
      new ObjectMapper().configure(DeserializationFeature.FAIL_ON_UNKNOWN_PROPERTIES, false);

  /**
   * One store of the prepared layout.
   *
   * @param keySchema the key schema as JSON, to find a query that changed since
   */
  public record Store(
      long operatorId,
      String operatorName,
      String storeName,
      String keySchema,
      String valueSchema,
      List<PartitionFile> partitions)
      implements Serializable {}

  /**
   * One new partition's prepared file.
   *
   * @param file relative to the checkpoint
   */
  public record PartitionFile(int partition, String file, long bytes, long rows, String sha256)
      implements Serializable {}

  /**
   * The suffix of the files that log each version's changes, from which a prepared layout's tail is
   * replayed: RocksDB's changelog files, the HDFS-backed store's delta files (one record format).
   */
  public static String tailSuffix(boolean rocksDb) {
    return rocksDb ? ".changelog" : ".delta";
  }

  /** The folder of the prepared layout {@code id}. */
  public static Path dir(CheckpointFiles files, String id) {
    return files.path(DIR + "/" + id);
  }

  /** Where the prepare writes state files, as a repartition's staging folder. */
  public static Path stagedDir(CheckpointFiles files, String id) {
    return new Path(dir(files, id), "staged");
  }

  /**
   * A prepared layout that turned out unusable while it was applied (a file missing, damaged, or
   * not what its manifest recorded): the repartition takes the full path instead.
   */
  public static final class Rejected extends RuntimeException {
    private static final long serialVersionUID = 1L;

    public Rejected(String message) {
      super(message);
    }

    public Rejected(String message, Throwable cause) {
      super(message, cause);
    }
  }

  /** Rows of every store and partition together. */
  public long rows() {
    return stores.stream()
        .flatMap(s -> s.partitions().stream())
        .mapToLong(PartitionFile::rows)
        .sum();
  }

  public String toJson() {
    try {
      return JSON.writerWithDefaultPrettyPrinter().writeValueAsString(this);
    } catch (JsonProcessingException e) {
      throw new IllegalStateException(e);
    }
  }

  public static PreparedManifest fromJson(String text) {
    try {
      return JSON.readValue(text, PreparedManifest.class);
    } catch (JsonProcessingException e) {
      throw new IllegalArgumentException("not a prepared layout manifest: " + e.getMessage(), e);
    }
  }

  /** The store of {@code spec} in this manifest, if it has one. */
  public Optional<Store> store(StoreSpec spec) {
    return stores.stream()
        .filter(s -> s.operatorId() == spec.operatorId() && s.storeName().equals(spec.storeName()))
        .findFirst();
  }

  /** Every complete prepared layout of the checkpoint, newest batch first. */
  public static List<PreparedManifest> readAll(CheckpointFiles files) {
    Path root = files.path(DIR);
    List<PreparedManifest> out = new ArrayList<>();
    if (!files.exists(root)) {
      return out;
    }
    for (FileStatus status : files.list(root)) {
      Path manifest = new Path(status.getPath(), MANIFEST);
      if (status.isDirectory() && files.exists(manifest)) {
        try {
          PreparedManifest m = fromJson(files.readText(manifest));
          if (m.format() == FORMAT && m.id().equals(status.getPath().getName())) {
            out.add(m);
          }
        } catch (RuntimeException unreadable) {
          // a damaged manifest is no prepared layout; the next prepare or cancel removes it
        }
      }
    }
    out.sort(
        Comparator.comparingLong(PreparedManifest::preparedBatch)
            .thenComparingLong(PreparedManifest::createdAtMs)
            .reversed());
    return out;
  }

  /** The newest complete prepared layout, if any. */
  public static Optional<PreparedManifest> latest(CheckpointFiles files) {
    return readAll(files).stream().findFirst();
  }
}
