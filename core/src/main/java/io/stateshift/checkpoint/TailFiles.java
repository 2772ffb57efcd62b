package io.stateshift.checkpoint;

import java.io.Serializable;
import java.util.HashMap;
import java.util.Map;

/**
 * The log files of the state versions after a prepared batch, from which its tail is replayed,
 * named as the checkpoint names them: {@code <v>.delta} (HDFS-backed), {@code <v>.changelog}
 * (RocksDB), or under state checkpoint format v2 {@code <v>_<id>.changelog}, the id being the one
 * the commit of batch {@code v - 1} records for the store's partition.
 */
public final class TailFiles implements Serializable {
  private static final long serialVersionUID = 1L;

  private final boolean rocksDb;

  /** Per version, the ids its batch's commit records; empty under format v1. */
  private final Map<Long, StateCheckpointIds> ids;

  private TailFiles(boolean rocksDb, Map<Long, StateCheckpointIds> ids) {
    this.rocksDb = rocksDb;
    this.ids = ids;
  }

  /** The names of versions {@code first..last} of the layout's stores. */
  public static TailFiles of(StateLayout layout, long first, long last) {
    Map<Long, StateCheckpointIds> ids = new HashMap<>();
    if (layout.checkpointIdsEnabled()) {
      for (long v = first; v <= last; v++) {
        ids.put(v, layout.checkpoint().checkpointIds(v - 1));
      }
    }
    return new TailFiles(layout.rocksDb(), ids);
  }

  /** The file name of version {@code version} of a store partition; null if its id is unknown. */
  public String name(StoreSpec spec, int partition, long version) {
    String suffix = PreparedManifest.tailSuffix(rocksDb);
    if (ids.isEmpty()) {
      return version + suffix;
    }
    StateCheckpointIds committed = ids.get(version);
    String id =
        committed == null ? null : committed.idOf(spec.operatorId(), partition, spec.storeName());
    return id == null ? null : version + "_" + id + suffix;
  }
}
