package io.stateshift.checkpoint;

import io.stateshift.checkpoint.spi.SparkLines;
import io.stateshift.checkpoint.spi.StateCount;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.apache.hadoop.fs.FileStatus;
import org.apache.spark.sql.SparkSession;

/**
 * State rows per operator across the state versions a checkpoint still holds: the versions every
 * partition can load are found from file listings, then up to {@code maxVersions} of them (the
 * newest, and the rest spread evenly back to the oldest) are counted with the Spark line's state
 * count.
 */
public final class StateVersions {
  private static final Pattern STATE_FILE =
      Pattern.compile("(\\d+)(_[^.]*)?\\.(delta|snapshot|zip|changelog)");

  private StateVersions() {}

  /** Operator key ("0:stateStoreSave") to rows by batch id (state version minus one). */
  public static Map<String, TreeMap<Long, Long>> rowsPerOperator(
      SparkSession spark, StateLayout layout, int maxVersions) {
    Map<String, TreeMap<Long, Long>> out = new LinkedHashMap<>();
    if (layout.stores().isEmpty()) {
      return out;
    }
    List<Long> versions = pick(loadableVersions(layout), maxVersions);
    CheckpointFiles files = layout.checkpoint().files();
    for (long version : versions) {
      // Format v2 loads a version by the ids its batch committed; a purged commit: skip it.
      StateCheckpointIds ids = null;
      if (layout.checkpointIdsEnabled()) {
        if (!files.exists(files.path("commits/" + (version - 1)))) {
          continue;
        }
        ids = layout.checkpoint().checkpointIds(version - 1);
      }
      List<StateCount> counts = SparkLines.get().countState(spark, layout, version, ids);
      Map<String, Long> rows = new LinkedHashMap<>();
      for (StoreSpec spec : layout.stores()) {
        rows.putIfAbsent(spec.operatorId() + ":" + spec.operatorName(), 0L);
      }
      for (StateCount c : counts) {
        StoreSpec spec = layout.stores().get(c.slot());
        rows.merge(spec.operatorId() + ":" + spec.operatorName(), c.rows(), Long::sum);
      }
      rows.forEach((op, n) -> out.computeIfAbsent(op, k -> new TreeMap<>()).put(version - 1, n));
    }
    return out;
  }

  /**
   * Versions up to the last committed one that every partition of every store can load: a version
   * needs the newest snapshot (zip) at or below it, or none, plus every incremental file (delta,
   * changelog) after that.
   */
  static TreeSet<Long> loadableVersions(StateLayout layout) {
    CheckpointFiles files = layout.checkpoint().files();
    long newest = layout.lastCommitted() + 1;
    TreeSet<Long> common = null;
    for (StoreSpec spec : layout.stores()) {
      for (int p = 0; p < layout.partitions(); p++) {
        Set<Long> snapshots = new HashSet<>();
        Set<Long> increments = new HashSet<>();
        for (FileStatus status : files.list(files.path(spec.dir(p)))) {
          Matcher m = STATE_FILE.matcher(status.getPath().getName());
          if (m.matches()) {
            String kind = m.group(3);
            long v = Long.parseLong(m.group(1));
            boolean full = kind.equals("snapshot") || kind.equals("zip");
            (full ? snapshots : increments).add(v);
          }
        }
        TreeSet<Long> loadable = new TreeSet<>();
        boolean chainFromEmpty = true; // version 0 is the empty state
        for (long v = 1; v <= newest; v++) {
          if (snapshots.contains(v)) {
            chainFromEmpty = true;
            loadable.add(v);
          } else if (increments.contains(v) && chainFromEmpty) {
            loadable.add(v);
          } else {
            chainFromEmpty = false; // a gap: later versions need a later snapshot
          }
        }
        if (common == null) {
          common = loadable;
        } else {
          common.retainAll(loadable);
        }
      }
    }
    return common == null ? new TreeSet<>() : common;
  }

  /** The newest version and up to {@code max - 1} more, spread evenly back to the oldest. */
  static List<Long> pick(TreeSet<Long> versions, int max) {
    List<Long> all = new ArrayList<>(versions);
    if (all.size() <= max) {
      return all;
    }
    TreeSet<Long> chosen = new TreeSet<>();
    for (int i = 0; i < max; i++) {
      chosen.add(all.get((int) Math.round(i * (all.size() - 1) / (double) (max - 1))));
    }
    return new ArrayList<>(chosen);
  }
}
