package io.stateshift.doctor.internal;

import io.stateshift.StateShiftException;
import io.stateshift.checkpoint.OffsetLogEntry;
import io.stateshift.checkpoint.StateLayout;
import io.stateshift.checkpoint.StateVersions;
import io.stateshift.checkpoint.StatefulOperator;
import io.stateshift.checkpoint.StoreSpec;
import io.stateshift.checkpoint.spi.SparkLines;
import io.stateshift.checkpoint.spi.StateCount;
import io.stateshift.config.StateShiftConf;
import io.stateshift.doctor.DoctorReport;
import io.stateshift.doctor.Severity;
import io.stateshift.monitor.ProgressHistory;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.TreeMap;
import org.apache.hadoop.fs.FileStatus;

/**
 * The doctor's checks of the state: its store provider, its partition count against its size and
 * the cores, skew between partitions, and growth that does not level off.
 */
final class StateChecks {
  private final Diagnosis d;
  static final String CHANGELOG_CONF =
      "spark.sql.streaming.stateStore.rocksdb.changelogCheckpointing.enabled";

  final List<DoctorReport.StorePartitions> storePartitions = new ArrayList<>();
  final List<DoctorReport.OperatorGrowth> growth = new ArrayList<>();
  String provider;
  int partitions = -1;
  int recommended = -1;

  StateChecks(Diagnosis d) {
    this.d = d;
  }

  void checkState(Optional<ProgressHistory> history) {
    StateLayout layout;
    try {
      layout = StateLayout.readForDiagnosis(d.spark, d.checkpoint);
    } catch (StateShiftException e) {
      switch (e.reason()) {
        case STATELESS_QUERY ->
            d.add(
                Severity.INFO,
                "STATELESS",
                "The query keeps no state",
                "no state/ folder",
                "Nothing to check about state.");
        case UNCOMMITTED_BATCH ->
            d.add(
                Severity.INFO,
                "NO_COMMITTED_BATCH",
                "The query has not committed a batch yet",
                e.getMessage(),
                "Run the query until it commits a batch, then run the doctor again.");
        default ->
            d.add(
                Severity.ERROR,
                "STATE_UNREADABLE",
                "The state cannot be read",
                e.getMessage(),
                "See the message; the query will fail the same way at restart.");
      }
      return;
    }
    provider = layout.provider();
    partitions = layout.partitions();
    checkLeftoverFolders(layout);
    List<StateCount> counts = SparkLines.get().countState(d.spark, layout);
    long totalRows = 0;
    long totalBytes = 0;
    for (StoreSpec spec : layout.stores()) {
      long[] rows = new long[partitions];
      long[] bytes = new long[partitions];
      for (StateCount c : counts) {
        if (c.slot() == spec.slot()) {
          rows[c.partition()] = c.rows();
          bytes[c.partition()] = c.bytes();
        }
      }
      storePartitions.add(
          new DoctorReport.StorePartitions(
              spec.operatorId(), spec.operatorName(), spec.storeName(), rows, bytes));
      totalRows += Arrays.stream(rows).sum();
      totalBytes += Arrays.stream(bytes).sum();
    }
    checkStoreProvider(layout, totalRows, totalBytes);
    checkPartitions(totalRows, totalBytes);
    checkGrowth(layout, history);
  }

  private void checkLeftoverFolders(StateLayout layout) {
    List<String> leftover = new ArrayList<>();
    for (StatefulOperator op : layout.operators()) {
      for (FileStatus child : d.files.list(d.files.path("state/" + op.id()))) {
        String name = child.getPath().getName();
        if (child.isDirectory() && name.matches("\\d+") && Integer.parseInt(name) >= partitions) {
          leftover.add("state/" + op.id() + "/" + name);
        }
      }
    }
    if (!leftover.isEmpty()) {
      d.add(
          Severity.WARNING,
          "LEFTOVER_PARTITION_FOLDERS",
          "State partition folders beyond the query's partition count were left behind",
          leftover.size()
              + " folder(s) beyond the "
              + partitions
              + " partitions the offset log "
              + "records: "
              + String.join(", ", leftover.subList(0, Math.min(8, leftover.size())))
              + (leftover.size() > 8 ? ", ..." : "")
              + " (typically left by a decrease with "
              + "Spark's built-in repartition, or a copied checkpoint)",
          "Spark ignores them, but tools that list partitions do not: move them out of state/ "
              + "while the query is stopped (stateshift keeps dropped folders under _stateshift/ "
              + "for this reason).");
    }
  }

  private void checkStoreProvider(StateLayout layout, long totalRows, long totalBytes) {
    if (!layout.rocksDb()) {
      String evidence =
          String.format(
              "HDFS-backed state store with %,d rows, %s of keys and "
                  + "values; it keeps every loaded version in executor heap (\"large\" is set at %s, "
                  + "spark.stateshift.doctor.largeStateBytes)",
              totalRows,
              Diagnosis.bytes(totalBytes),
              Diagnosis.bytes(d.settings.largeStateBytes()));
      if (totalBytes >= d.settings.largeStateBytes()) {
        d.add(
            Severity.WARNING,
            "HDFS_STORE_LARGE_STATE",
            "Large state on the HDFS-backed state store",
            evidence,
            "Switch to RocksDB ("
                + StateLayout.ROCKSDB_PROVIDER
                + ") in place, while the query is stopped: `./stateshift migrate --checkpoint "
                + d.files.root()
                + " --provider rocksdb` (Spark alone keeps the provider the checkpoint "
                + "started with); then set "
                + CHANGELOG_CONF
                + "=true on the query's session. Or at the next restart: with "
                + "StateShiftExtensions, set spark.sql.streaming.stateStore.providerClass to "
                + "RocksDB and "
                + StateShiftConf.MIGRATE_ENABLED.key()
                + "=true on the session.");
      } else {
        d.add(
            Severity.INFO, "STATE_STORE", "HDFS-backed state store, state is small", evidence, "");
      }
      return;
    }
    boolean changelog =
        "true"
                .equals(
                    d.safeOffsets(layout.lastCommitted())
                        .map(o -> o.conf().get(CHANGELOG_CONF))
                        .orElse(null))
            || hasChangelogFiles(layout);
    if (!changelog) {
      d.add(
          Severity.WARNING,
          "ROCKSDB_WITHOUT_CHANGELOG",
          "RocksDB state store without changelog checkpointing",
          "no .changelog files under "
              + layout.stores().get(0).dir(0)
              + ": every batch uploads "
              + "a snapshot zip per partition ("
              + Diagnosis.bytes(totalBytes)
              + " of state)",
          "Set "
              + CHANGELOG_CONF
              + "=true on the query's session; Spark switches an existing "
              + "checkpoint over at the next start, and each batch then writes only its "
              + "changes.");
    } else {
      d.add(
          Severity.INFO,
          "STATE_STORE",
          "RocksDB with changelog checkpointing",
          String.format("%,d rows, %s", totalRows, Diagnosis.bytes(totalBytes)),
          "");
    }
  }

  private boolean hasChangelogFiles(StateLayout layout) {
    if (layout.stores().isEmpty()) {
      return false;
    }
    for (FileStatus status : d.files.list(d.files.path(layout.stores().get(0).dir(0)))) {
      if (status.getPath().getName().endsWith(".changelog")) {
        return true;
      }
    }
    return false;
  }

  private void checkPartitions(long totalRows, long totalBytes) {
    long bySize =
        (totalBytes + d.settings.targetPartitionBytes() - 1) / d.settings.targetPartitionBytes();
    long wanted = Math.max(d.cores, bySize);
    recommended = (int) ((wanted + d.cores - 1) / d.cores * d.cores); // whole waves of tasks
    String line = "spark.sql.streaming.stateStore.partitions=" + recommended;
    String how =
        "With spark.sql.extensions=io.stateshift.StateShiftExtensions set "
            + line
            + " and restart the query, or run `./stateshift repartition --checkpoint "
            + d.files.root()
            + " --partitions "
            + recommended
            + "` while it is stopped.";
    String measured =
        String.format(
            "%d partitions, %,d rows, %s of state (%s per partition), "
                + "%d cores (from %s); target %s per partition",
            partitions,
            totalRows,
            Diagnosis.bytes(totalBytes),
            Diagnosis.bytes(partitions == 0 ? 0 : totalBytes / partitions),
            d.cores,
            d.coresSource,
            Diagnosis.bytes(d.settings.targetPartitionBytes()));
    if (partitions < d.cores) {
      d.add(
          Severity.WARNING,
          "TOO_FEW_PARTITIONS",
          "Fewer state partitions than cores: stateful work cannot use the cluster",
          measured + "; each batch runs only " + partitions + " stateful task(s) at a time",
          how);
    } else if (partitions > 4L * recommended) {
      d.add(
          Severity.WARNING,
          "TOO_MANY_PARTITIONS",
          "Many more state partitions than the state needs",
          measured
              + "; every batch opens and "
              + "commits "
              + partitions
              + " stores per operator, mostly tiny",
          how);
    } else if (bySize > partitions) {
      d.add(
          Severity.WARNING,
          "PARTITIONS_TOO_LARGE",
          "State partitions are larger than the target",
          measured,
          how);
    } else if (recommended == partitions) {
      d.add(
          Severity.INFO,
          "PARTITIONS",
          "Partition count suits the state and the " + d.cores + " cores assumed",
          measured,
          "");
    } else {
      d.add(
          Severity.INFO,
          "PARTITIONS",
          "Partition count works; "
              + recommended
              + " would fit the state and the "
              + d.cores
              + " cores assumed in whole waves of tasks",
          measured + "; recommended " + recommended,
          "Optional, if the query runs on "
              + d.cores
              + " cores (else give the doctor --cores): "
              + how);
    }
    for (DoctorReport.StorePartitions store : storePartitions) {
      long rows = Arrays.stream(store.rows()).sum();
      if (rows == 0 || store.rows().length == 0) {
        continue;
      }
      double mean = (double) rows / store.rows().length;
      long max = Arrays.stream(store.rows()).max().orElse(0);
      int hottest = 0;
      for (int p = 0; p < store.rows().length; p++) {
        if (store.rows()[p] == max) {
          hottest = p;
          break;
        }
      }
      double skew = max / mean;
      if (rows >= d.settings.skewMinRows() && skew >= d.settings.skewRatio()) {
        d.add(
            Severity.WARNING,
            "STATE_SKEW",
            String.format(
                "State of operator %d (%s) store %s is " + "skewed",
                store.operatorId(), store.operatorName(), store.storeName()),
            String.format(
                "largest partition %d holds %,d rows, %.1fx the mean of %,.1f (%d "
                    + "partitions, %,d rows; threshold %.1fx)",
                hottest, max, skew, mean, store.rows().length, rows, d.settings.skewRatio()),
            "Skew from few distinct keys evens out with more keys; skew from hot keys does not "
                + "move with the partition count: add a salt to the grouping key, or aggregate "
                + "in two steps. If there are only few keys, fewer partitions waste less.");
      }
    }
  }

  private void checkGrowth(StateLayout layout, Optional<ProgressHistory> history) {
    Map<String, TreeMap<Long, Long>> series = new LinkedHashMap<>();
    if (history.isPresent() && !history.get().batches().isEmpty()) {
      for (ProgressHistory.Batch b : history.get().batches()) {
        b.stateRows()
            .forEach(
                (op, rows) ->
                    series.computeIfAbsent(op, k -> new TreeMap<>()).put(b.batchId(), rows));
      }
    } else {
      series.putAll(StateVersions.rowsPerOperator(d.spark, layout, d.settings.growthMaxVersions()));
    }
    long watermark =
        d.safeOffsets(layout.lastCommitted()).map(OffsetLogEntry::batchWatermarkMs).orElse(0L);
    for (Map.Entry<String, TreeMap<Long, Long>> e : series.entrySet()) {
      List<Long> batches = new ArrayList<>(e.getValue().keySet());
      List<Long> rows = new ArrayList<>(e.getValue().values());
      String[] op = e.getKey().split(":", 2);
      growth.add(new DoctorReport.OperatorGrowth(Long.parseLong(op[0]), op[1], batches, rows));
      if (batches.size() < d.settings.growthMinPoints()
          || !keepsGrowing(batches, rows, d.settings.levelOffRatio())) {
        continue;
      }
      StringBuilder points = new StringBuilder();
      for (int i = 0; i < batches.size(); i++) {
        points
            .append(i == 0 ? "" : ", ")
            .append(String.format("batch %d: %,d", batches.get(i), rows.get(i)));
      }
      boolean noWatermark = watermark <= 0;
      d.add(
          Severity.WARNING,
          "STATE_GROWTH",
          "State of operator " + op[0] + " (" + op[1] + ") keeps growing without levelling off",
          "rows "
              + points
              + (noWatermark
                  ? "; the query has no event-time watermark " + "(batchWatermarkMs is 0)"
                  : "; watermark at " + java.time.Instant.ofEpochMilli(watermark)),
          noWatermark
              ? "Add .withWatermark(\"<event time column>\", \"<delay>\") before the stateful "
                  + "operator (and use dropDuplicatesWithinWatermark or a window in the key), so "
                  + "Spark can drop state that can no longer change."
              : "Tighten the watermark delay, or add an event-time window to the key: state "
                  + "older than the watermark is kept until it passes.");
    }
  }

  /**
   * True when rows never fall, rise at the end, and rise at least {@code ratio} times as fast per
   * batch over the newer half as over the older half: growth that is not levelling off.
   */
  public static boolean keepsGrowing(List<Long> batches, List<Long> rows, double ratio) {
    int n = rows.size();
    for (int i = 1; i < n; i++) {
      if (rows.get(i) < rows.get(i - 1)) {
        return false;
      }
    }
    if (n < 3 || rows.get(n - 1) <= rows.get(n - 2)) {
      return false;
    }
    int mid = n / 2;
    double older =
        (rows.get(mid) - rows.get(0)) / (double) Math.max(1, batches.get(mid) - batches.get(0));
    double newer =
        (rows.get(n - 1) - rows.get(mid))
            / (double) Math.max(1, batches.get(n - 1) - batches.get(mid));
    return newer > 0 && newer >= ratio * older;
  }
}
