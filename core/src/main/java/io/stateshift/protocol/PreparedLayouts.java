package io.stateshift.protocol;

import io.stateshift.checkpoint.CheckpointFiles;
import io.stateshift.checkpoint.ParallelSteps;
import io.stateshift.checkpoint.PreparedManifest;
import io.stateshift.checkpoint.StateLayout;
import io.stateshift.checkpoint.StoreSpec;
import io.stateshift.checkpoint.TailFiles;
import io.stateshift.config.StateShiftConf;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Optional;
import java.util.Set;
import org.apache.hadoop.fs.FileStatus;
import org.apache.hadoop.fs.Path;

/**
 * Whether a repartition can start from the checkpoint's prepared layout: the same query, stores and
 * schemas, the same old and new partition counts, a batch at or before the last committed one, its
 * files as the manifest recorded them, and every log of the batches since still there (the
 * HDFS-backed store's delta files, RocksDB's changelog files).
 */
final class PreparedLayouts {
  private PreparedLayouts() {}

  /** A prepared layout to use, or why the one on record is not used (both null: none). */
  record Choice(PreparedManifest manifest, String reason) {}

  static Choice choose(CheckpointFiles files, StateLayout layout, int target) {
    List<PreparedManifest> all = PreparedManifest.readAll(files);
    if (all.isEmpty()) {
      return new Choice(null, null);
    }
    PreparedManifest m = all.get(0);
    String why = unusable(files, layout, target, m);
    return why == null ? new Choice(m, null) : new Choice(null, why);
  }

  static final String ENCODING_FORMAT = "spark.sql.streaming.stateStore.encodingFormat";

  /**
   * Why the tail of the layout's stores with column families (transformWithState, a join in state
   * format 3) cannot be replayed onto a prepared layout, or null: only RocksDB's changelog of
   * UnsafeRow-encoded keys without row checksums is read (a checksum covers the column family id,
   * which differs between an old partition and a new one).
   */
  static String columnFamilyProblem(StateLayout layout) {
    if (layout.stores().stream().noneMatch(StoreSpec::hasColumnFamilies)) {
      return null;
    }
    if (!layout.rocksDb()) {
      return "a store with column families on the HDFS-backed state store";
    }
    if ("true".equalsIgnoreCase(layout.storeConf().get(ProviderMigration.ROW_CHECKSUM))) {
      return "row checksums (" + ProviderMigration.ROW_CHECKSUM + ") with column families";
    }
    if ("avro".equalsIgnoreCase(layout.storeConf().get(ENCODING_FORMAT))) {
      return "the Avro state encoding (" + ENCODING_FORMAT + ") with column families";
    }
    return null;
  }

  /** The compression codec the layout's state files are written with. */
  static String codec(StateLayout layout) {
    return layout.storeConf().getOrDefault(PreparedManifest.CODEC_CONF, "lz4");
  }

  private static String unusable(
      CheckpointFiles files, StateLayout layout, int target, PreparedManifest m) {
    String queryId = layout.checkpoint().queryId();
    if (!m.queryId().equals(queryId)) {
      return "it was prepared for query " + m.queryId() + ", the checkpoint's query is " + queryId;
    }
    if (m.toPartitions() != target) {
      return "it was prepared for " + m.toPartitions() + " partitions, not " + target;
    }
    if (m.fromPartitions() != layout.partitions()) {
      return "it was prepared from "
          + m.fromPartitions()
          + " partitions, the checkpoint now has "
          + layout.partitions();
    }
    if (m.preparedBatch() > layout.lastCommitted()) {
      return "it holds batch "
          + m.preparedBatch()
          + ", after the last committed batch "
          + layout.lastCommitted();
    }
    if (!m.provider().equals(layout.provider())) {
      return "it was prepared for the state store provider " + m.provider();
    }
    if (!m.compressionCodec().equals(codec(layout))) {
      return "it was written with the codec "
          + m.compressionCodec()
          + ", the checkpoint's is "
          + codec(layout);
    }
    String columnFamilies = columnFamilyProblem(layout);
    if (columnFamilies != null) {
      return "its tail is not replayed under " + columnFamilies;
    }
    if (m.stores().size() != layout.stores().size()) {
      return "the query's stateful operators changed since it was prepared";
    }
    // the changes of the batches since: the HDFS-backed store's deltas, RocksDB's changelogs
    String tail = PreparedManifest.tailSuffix(layout.rocksDb());
    TailFiles logs = TailFiles.of(layout, m.preparedBatch() + 2, layout.lastCommitted() + 1);
    for (StoreSpec spec : layout.stores()) {
      Optional<PreparedManifest.Store> store = m.store(spec);
      if (store.isEmpty()
          || !store.get().operatorName().equals(spec.operatorName())
          || !store.get().keySchema().equals(spec.keySchema().json())
          || !store.get().valueSchema().equals(spec.valueSchema().json())) {
        return "operator "
            + spec.operatorId()
            + " store "
            + spec.storeName()
            + " changed since it was prepared (operator or schema)";
      }
      for (int p = 0; p < target; p++) {
        int partition = p;
        Optional<PreparedManifest.PartitionFile> file =
            store.get().partitions().stream().filter(f -> f.partition() == partition).findFirst();
        if (file.isEmpty()) {
          return "it has no file for operator " + spec.operatorId() + " partition " + p;
        }
        Path path = files.path(file.get().file());
        if (length(files, path) != file.get().bytes()) { // -1 when missing
          return "its file " + file.get().file() + " is missing or changed";
        }
      }
    }
    // every old partition's logs since the prepared batch: a listing per folder, on a few threads
    List<int[]> folders = new ArrayList<>(); // store index, partition
    for (int s = 0; s < layout.stores().size(); s++) {
      for (int p = 0; p < layout.partitions(); p++) {
        folders.add(new int[] {s, p});
      }
    }
    String[] missing = new String[folders.size()];
    ParallelSteps.run(
        folders,
        StateShiftConf.DRIVER_IO_THREADS.onDriver(),
        "prepared",
        folder -> {
          StoreSpec spec = layout.stores().get(folder[0]);
          int p = folder[1];
          Set<String> names = new HashSet<>();
          for (FileStatus status : files.list(files.path(spec.dir(p)))) {
            names.add(status.getPath().getName());
          }
          for (long v = m.preparedBatch() + 2; v <= layout.lastCommitted() + 1; v++) {
            String name = logs.name(spec, p, v);
            if (name == null || !names.contains(name)) {
              missing[folder[0] * layout.partitions() + p] =
                  "the state file "
                      + spec.dir(p)
                      + "/"
                      + (name != null ? name : v + tail)
                      + " of batch "
                      + (v - 1)
                      + (layout.rocksDb()
                          ? " is not there (changelog checkpointing is off, or the store's"
                              + " maintenance removed it)"
                          : " is gone (the store's maintenance removes old files)");
              return;
            }
          }
        });
    for (String problem : missing) {
      if (problem != null) {
        return problem;
      }
    }
    return null;
  }

  private static long length(CheckpointFiles files, Path path) {
    try {
      return files.fs().getFileStatus(path).getLen();
    } catch (java.io.IOException e) {
      return -1;
    }
  }
}
