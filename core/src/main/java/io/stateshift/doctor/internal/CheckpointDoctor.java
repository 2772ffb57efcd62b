package io.stateshift.doctor.internal;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.stateshift.StateShiftException;
import io.stateshift.checkpoint.Checkpoint;
import io.stateshift.checkpoint.CheckpointFiles;
import io.stateshift.checkpoint.OffsetLogEntry;
import io.stateshift.checkpoint.SessionSettings;
import io.stateshift.checkpoint.SourceLogs;
import io.stateshift.checkpoint.StateLayout;
import io.stateshift.checkpoint.StateVersions;
import io.stateshift.checkpoint.StatefulOperator;
import io.stateshift.checkpoint.StoreSpec;
import io.stateshift.checkpoint.spi.SinkLog;
import io.stateshift.checkpoint.spi.SparkLines;
import io.stateshift.checkpoint.spi.StateCount;
import io.stateshift.config.StateShiftConf;
import io.stateshift.doctor.DoctorReport;
import io.stateshift.doctor.DoctorSettings;
import io.stateshift.doctor.Finding;
import io.stateshift.doctor.Severity;
import io.stateshift.monitor.ProgressHistory;
import io.stateshift.protocol.RepartitionJournal;
import io.stateshift.protocol.SinkLogGaps;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.TreeMap;
import java.util.TreeSet;
import org.apache.hadoop.fs.FileStatus;
import org.apache.spark.sql.SparkSession;

/**
 * The doctor: reads a checkpoint (and a progress history, if given) without writing anything and
 * turns what it measures into findings, each with its evidence and its fix.
 */
public final class CheckpointDoctor {
  private static final ObjectMapper JSON = new ObjectMapper();
  static final String CHANGELOG_CONF =
      "spark.sql.streaming.stateStore.rocksdb.changelogCheckpointing.enabled";

  private final SparkSession spark;
  private final CheckpointFiles files;
  private final Checkpoint checkpoint;
  private final int cores;
  private String coresSource = "given";
  private final DoctorSettings settings;
  private final List<Finding> findings = new ArrayList<>();
  private final List<DoctorReport.StorePartitions> storePartitions = new ArrayList<>();
  private final List<DoctorReport.OperatorGrowth> growth = new ArrayList<>();
  private final List<DoctorReport.SourceBatches> sourceBatches = new ArrayList<>();
  private String provider;
  private int partitions = -1;
  private int recommended = -1;

  private CheckpointDoctor(
      SparkSession spark,
      CheckpointFiles files,
      Checkpoint checkpoint,
      int cores,
      DoctorSettings settings) {
    this.spark = spark;
    this.files = files;
    this.checkpoint = checkpoint;
    this.cores = cores;
    this.settings = settings;
  }

  public static DoctorReport diagnose(
      SparkSession spark,
      String location,
      int cores,
      String historyLocation,
      DoctorSettings settings) {
    return diagnose(spark, location, cores, "given", historyLocation, settings, List.of());
  }

  /** The same, with the output folders of the query's file sinks (the recorded one is added). */
  public static DoctorReport diagnose(
      SparkSession spark,
      String location,
      int cores,
      String coresSource,
      String historyLocation,
      DoctorSettings settings,
      List<String> fileSinks) {
    CheckpointFiles files = CheckpointFiles.at(location, SessionSettings.hadoopConf(spark));
    Checkpoint checkpoint = Checkpoint.load(files);
    CheckpointDoctor doctor = new CheckpointDoctor(spark, files, checkpoint, cores, settings);
    doctor.coresSource = coresSource;
    Optional<ProgressHistory> history =
        Optional.ofNullable(historyLocation)
            .map(h -> ProgressHistory.read(h, files.conf()).ofQuery(checkpoint.queryId()));
    doctor.checkHygiene(history);
    doctor.checkFileSinks(fileSinks);
    doctor.checkState(history);
    doctor.checkSources();
    history.ifPresent(doctor::checkHistory);
    return new DoctorReport(
        files.root().toString(),
        checkpoint.queryId(),
        checkpoint.lastCommittedBatch(),
        doctor.provider,
        doctor.partitions,
        doctor.recommended,
        cores,
        coresSource,
        List.copyOf(doctor.findings),
        List.copyOf(doctor.storePartitions),
        List.copyOf(doctor.growth),
        List.copyOf(doctor.sourceBatches));
  }

  private void add(Severity severity, String code, String title, String evidence, String fix) {
    findings.add(new Finding(severity, code, title, evidence, fix));
  }

  // ---- file sink logs
  // ----------------------------------------------------------------------------

  private void checkFileSinks(List<String> given) {
    String root = files.root().toString();
    for (SinkLog log : SinkLogGaps.logs(spark, files, given)) {
      List<SinkLogGaps.Gap> gaps = SinkLogGaps.find(checkpoint, log);
      if (gaps.isEmpty()) {
        continue;
      }
      List<String> evidence = gaps.stream().map(SinkLogGaps.Gap::explanation).toList();
      String output = new org.apache.hadoop.fs.Path(log.location()).getParent().toString();
      boolean fillable = gaps.stream().allMatch(SinkLogGaps.Gap::fillable);
      add(
          Severity.ERROR,
          "FILE_SINK_LOG_GAP",
          "The file sink's log lacks batches of this checkpoint: its output cannot be read and its "
              + "next compaction fails",
          log.location() + ": " + String.join("; ", evidence),
          fillable
              ? "Run `./stateshift repair-sink-log --checkpoint "
                  + root
                  + " --file-sink "
                  + output
                  + "` (it writes the empty entries of repartition batches), or start the query "
                  + "with spark.sql.extensions=io.stateshift.StateShiftExtensions, which does so "
                  + "before its first batch. Repartitions by stateshift that know the sink "
                  + "(--file-sink, or the sink on record) write the entry themselves."
              : "Restore the sink's "
                  + SinkLog.METADATA_DIR
                  + " folder from a backup; "
                  + "entries of batches that wrote output cannot be rebuilt from the checkpoint.");
    }
  }

  // ---- checkpoint hygiene ---------------------------------------------------------------------

  private void checkHygiene(Optional<ProgressHistory> history) {
    String root = files.root().toString();
    Optional<RepartitionJournal> journal = RepartitionJournal.read(files);
    journal.ifPresent(
        j ->
            add(
                Severity.ERROR,
                "UNFINISHED_REPARTITION",
                "A " + j.kind() + " of this checkpoint was interrupted",
                "_stateshift/journal: attempt "
                    + j.attemptId()
                    + " from "
                    + j.fromPartitions()
                    + " to "
                    + j.toPartitions()
                    + " partitions stopped in phase "
                    + j.phase()
                    + " (started "
                    + java.time.Instant.ofEpochMilli(j.startedAtMs())
                    + ")",
                "Run `"
                    + j.finishingCommand(root)
                    + "` to "
                    + (j.phase() == RepartitionJournal.Phase.STAGING
                        ? "undo it and repartition"
                        : "finish it")
                    + ", or start the query with spark.sql.extensions=io.stateshift.StateShiftExtensions, "
                    + "which finishes or undoes it first."));

    long planned = checkpoint.lastPlannedBatch();
    long committed = checkpoint.lastCommittedBatch();
    // the batch of an attempt past STAGING is the attempt's own, finished with it (above)
    boolean attemptsBatch =
        journal.isPresent()
            && journal.get().phase() != RepartitionJournal.Phase.STAGING
            && planned == journal.get().newBatch();
    if (planned > committed && !attemptsBatch) {
      add(
          Severity.INFO,
          "PENDING_BATCH",
          "The last planned batch was not committed",
          "offsets/" + planned + " exists, the last commit is commits/" + committed,
          "Nothing to do: the query re-runs batch "
              + planned
              + " with the same offsets when it "
              + "starts. (It stopped or failed during that batch.)");
    }

    List<String> temporary = new ArrayList<>();
    for (String log : List.of("offsets", "commits")) {
      for (FileStatus status : files.list(files.path(log))) {
        String name = status.getPath().getName();
        if (name.startsWith(".") && name.endsWith(".tmp")) {
          temporary.add(log + "/" + name);
        }
      }
    }
    List<String> backwards = new ArrayList<>();
    long previousTs = -1;
    long previousBatch = -1;
    for (long batch : retainedOffsetBatches()) {
      long ts = safeOffsets(batch).map(OffsetLogEntry::batchTimestampMs).orElse(0L);
      if (previousTs > 0 && ts > 0 && ts < previousTs) {
        backwards.add(
            "batch "
                + batch
                + " planned at "
                + java.time.Instant.ofEpochMilli(ts)
                + ", before batch "
                + previousBatch
                + " ("
                + java.time.Instant.ofEpochMilli(previousTs)
                + ")");
      }
      previousTs = ts;
      previousBatch = batch;
    }
    List<String> overlapping = history.map(CheckpointDoctor::overlappingRuns).orElse(List.of());
    if (!overlapping.isEmpty() || !backwards.isEmpty()) {
      List<String> evidence = new ArrayList<>(overlapping);
      evidence.addAll(backwards);
      add(
          overlapping.isEmpty() ? Severity.WARNING : Severity.ERROR,
          "SHARED_CHECKPOINT",
          "Two queries (or two runs of one) appear to write this checkpoint",
          String.join("; ", evidence),
          "Give every query its own checkpointLocation and make sure only one copy of a query "
              + "runs at a time (stop the old run before starting the new one, for example with "
              + "spark.sql.streaming.stopActiveRunOnRestart=true within one application).");
    } else if (!temporary.isEmpty()) {
      add(
          Severity.WARNING,
          "LEFTOVER_LOG_TEMP_FILES",
          "Temporary log files were left behind (a crash during a log write, or a second writer)",
          String.join(", ", temporary),
          "Make sure no other query uses this checkpoint; the files themselves are ignored by "
              + "Spark and can be deleted while the query is stopped.");
    }

    int retained = retainedCommitCount();
    if (committed + 1 > retained && retained < settings.minRetainedBatches()) {
      add(
          Severity.WARNING,
          "FEW_RETAINED_BATCHES",
          "Too few batches are retained to recover from a bad batch",
          retained
              + " committed batches are kept (batches "
              + (committed - retained + 1)
              + " to "
              + committed
              + " of "
              + (committed + 1)
              + "); fewer than "
              + settings.minRetainedBatches(),
          "Set spark.sql.streaming.minBatchesToRetain=100 (Spark's default) on the query's "
              + "session, so the state and logs of earlier batches are kept for rollback and "
              + "recovery.");
    }
  }

  /** Runs whose progress times overlap: two runs of the query were alive at the same time. */
  private static List<String> overlappingRuns(ProgressHistory history) {
    Map<String, long[]> spans = new LinkedHashMap<>();
    for (ProgressHistory.Batch b : history.batches()) {
      spans.merge(
          b.runId(),
          new long[] {b.timestampMs(), b.timestampMs()},
          (a, n) -> new long[] {Math.min(a[0], n[0]), Math.max(a[1], n[1])});
    }
    List<String> out = new ArrayList<>();
    List<Map.Entry<String, long[]>> runs = new ArrayList<>(spans.entrySet());
    for (int i = 0; i < runs.size(); i++) {
      for (int j = i + 1; j < runs.size(); j++) {
        long[] a = runs.get(i).getValue();
        long[] b = runs.get(j).getValue();
        if (a[0] < b[1] && b[0] < a[1]) {
          out.add(
              "runs "
                  + runs.get(i).getKey()
                  + " and "
                  + runs.get(j).getKey()
                  + " both reported progress between "
                  + java.time.Instant.ofEpochMilli(Math.max(a[0], b[0]))
                  + " and "
                  + java.time.Instant.ofEpochMilli(Math.min(a[1], b[1])));
        }
      }
    }
    return out;
  }

  private List<Long> retainedOffsetBatches() {
    TreeSet<Long> out = new TreeSet<>();
    for (FileStatus status : files.list(files.path("offsets"))) {
      String name = status.getPath().getName();
      if (name.matches("\\d+")) {
        out.add(Long.parseLong(name));
      }
    }
    return new ArrayList<>(out);
  }

  private int retainedCommitCount() {
    int count = 0;
    for (FileStatus status : files.list(files.path("commits"))) {
      if (status.getPath().getName().matches("\\d+")) {
        count++;
      }
    }
    return count;
  }

  private Optional<OffsetLogEntry> safeOffsets(long batch) {
    try {
      return Optional.of(checkpoint.offsets(batch));
    } catch (StateShiftException e) {
      return Optional.empty();
    }
  }

  // ---- state: store, partitions, growth -------------------------------------------------------

  private void checkState(Optional<ProgressHistory> history) {
    StateLayout layout;
    try {
      layout = StateLayout.readForDiagnosis(spark, checkpoint);
    } catch (StateShiftException e) {
      switch (e.reason()) {
        case STATELESS_QUERY ->
            add(
                Severity.INFO,
                "STATELESS",
                "The query keeps no state",
                "no state/ folder",
                "Nothing to check about state.");
        case UNCOMMITTED_BATCH ->
            add(
                Severity.INFO,
                "NO_COMMITTED_BATCH",
                "The query has not committed a batch yet",
                e.getMessage(),
                "Run the query until it commits a batch, then run the doctor again.");
        default ->
            add(
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
    List<StateCount> counts = SparkLines.get().countState(spark, layout);
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
      for (FileStatus child : files.list(files.path("state/" + op.id()))) {
        String name = child.getPath().getName();
        if (child.isDirectory() && name.matches("\\d+") && Integer.parseInt(name) >= partitions) {
          leftover.add("state/" + op.id() + "/" + name);
        }
      }
    }
    if (!leftover.isEmpty()) {
      add(
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
              totalRows, bytes(totalBytes), bytes(settings.largeStateBytes()));
      if (totalBytes >= settings.largeStateBytes()) {
        add(
            Severity.WARNING,
            "HDFS_STORE_LARGE_STATE",
            "Large state on the HDFS-backed state store",
            evidence,
            "Switch to RocksDB ("
                + StateLayout.ROCKSDB_PROVIDER
                + ") in place, while the query is stopped: `./stateshift migrate --checkpoint "
                + files.root()
                + " --provider rocksdb` (Spark alone keeps the provider the checkpoint "
                + "started with); then set "
                + CHANGELOG_CONF
                + "=true on the query's session. Or at the next restart: with "
                + "StateShiftExtensions, set spark.sql.streaming.stateStore.providerClass to "
                + "RocksDB and "
                + StateShiftConf.MIGRATE_ENABLED.key()
                + "=true on the session.");
      } else {
        add(Severity.INFO, "STATE_STORE", "HDFS-backed state store, state is small", evidence, "");
      }
      return;
    }
    boolean changelog =
        "true"
                .equals(
                    safeOffsets(layout.lastCommitted())
                        .map(o -> o.conf().get(CHANGELOG_CONF))
                        .orElse(null))
            || hasChangelogFiles(layout);
    if (!changelog) {
      add(
          Severity.WARNING,
          "ROCKSDB_WITHOUT_CHANGELOG",
          "RocksDB state store without changelog checkpointing",
          "no .changelog files under "
              + layout.stores().get(0).dir(0)
              + ": every batch uploads "
              + "a snapshot zip per partition ("
              + bytes(totalBytes)
              + " of state)",
          "Set "
              + CHANGELOG_CONF
              + "=true on the query's session; Spark switches an existing "
              + "checkpoint over at the next start, and each batch then writes only its "
              + "changes.");
    } else {
      add(
          Severity.INFO,
          "STATE_STORE",
          "RocksDB with changelog checkpointing",
          String.format("%,d rows, %s", totalRows, bytes(totalBytes)),
          "");
    }
  }

  private boolean hasChangelogFiles(StateLayout layout) {
    if (layout.stores().isEmpty()) {
      return false;
    }
    for (FileStatus status : files.list(files.path(layout.stores().get(0).dir(0)))) {
      if (status.getPath().getName().endsWith(".changelog")) {
        return true;
      }
    }
    return false;
  }

  private void checkPartitions(long totalRows, long totalBytes) {
    long bySize =
        (totalBytes + settings.targetPartitionBytes() - 1) / settings.targetPartitionBytes();
    long wanted = Math.max(cores, bySize);
    recommended = (int) ((wanted + cores - 1) / cores * cores); // whole waves of tasks
    String line = "spark.sql.streaming.stateStore.partitions=" + recommended;
    String how =
        "With spark.sql.extensions=io.stateshift.StateShiftExtensions set "
            + line
            + " and restart the query, or run `./stateshift repartition --checkpoint "
            + files.root()
            + " --partitions "
            + recommended
            + "` while it is stopped.";
    String measured =
        String.format(
            "%d partitions, %,d rows, %s of state (%s per partition), "
                + "%d cores (from %s); target %s per partition",
            partitions,
            totalRows,
            bytes(totalBytes),
            bytes(partitions == 0 ? 0 : totalBytes / partitions),
            cores,
            coresSource,
            bytes(settings.targetPartitionBytes()));
    if (partitions < cores) {
      add(
          Severity.WARNING,
          "TOO_FEW_PARTITIONS",
          "Fewer state partitions than cores: stateful work cannot use the cluster",
          measured + "; each batch runs only " + partitions + " stateful task(s) at a time",
          how);
    } else if (partitions > 4L * recommended) {
      add(
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
      add(
          Severity.WARNING,
          "PARTITIONS_TOO_LARGE",
          "State partitions are larger than the target",
          measured,
          how);
    } else if (recommended == partitions) {
      add(
          Severity.INFO,
          "PARTITIONS",
          "Partition count suits the state and the " + cores + " cores assumed",
          measured,
          "");
    } else {
      add(
          Severity.INFO,
          "PARTITIONS",
          "Partition count works; "
              + recommended
              + " would fit the state and the "
              + cores
              + " cores assumed in whole waves of tasks",
          measured + "; recommended " + recommended,
          "Optional, if the query runs on "
              + cores
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
      if (rows >= settings.skewMinRows() && skew >= settings.skewRatio()) {
        add(
            Severity.WARNING,
            "STATE_SKEW",
            String.format(
                "State of operator %d (%s) store %s is " + "skewed",
                store.operatorId(), store.operatorName(), store.storeName()),
            String.format(
                "largest partition %d holds %,d rows, %.1fx the mean of %,.1f (%d "
                    + "partitions, %,d rows; threshold %.1fx)",
                hottest, max, skew, mean, store.rows().length, rows, settings.skewRatio()),
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
      series.putAll(StateVersions.rowsPerOperator(spark, layout, settings.growthMaxVersions()));
    }
    long watermark =
        safeOffsets(layout.lastCommitted()).map(OffsetLogEntry::batchWatermarkMs).orElse(0L);
    for (Map.Entry<String, TreeMap<Long, Long>> e : series.entrySet()) {
      List<Long> batches = new ArrayList<>(e.getValue().keySet());
      List<Long> rows = new ArrayList<>(e.getValue().values());
      String[] op = e.getKey().split(":", 2);
      growth.add(new DoctorReport.OperatorGrowth(Long.parseLong(op[0]), op[1], batches, rows));
      if (batches.size() < settings.growthMinPoints()
          || !keepsGrowing(batches, rows, settings.levelOffRatio())) {
        continue;
      }
      StringBuilder points = new StringBuilder();
      for (int i = 0; i < batches.size(); i++) {
        points
            .append(i == 0 ? "" : ", ")
            .append(String.format("batch %d: %,d", batches.get(i), rows.get(i)));
      }
      boolean noWatermark = watermark <= 0;
      add(
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

  // ---- sources --------------------------------------------------------------------------------

  private void checkSources() {
    List<Long> batches = retainedOffsetBatches();
    if (batches.isEmpty()) {
      return;
    }
    Map<Integer, List<JsonNode>> offsetsBySource = new HashMap<>();
    for (long batch : batches) {
      List<String> offsets =
          safeOffsets(batch).map(OffsetLogEntry::sourceOffsets).orElse(List.of());
      for (int i = 0; i < offsets.size(); i++) {
        offsetsBySource
            .computeIfAbsent(i, k -> new ArrayList<>())
            .add(offsets.get(i) == null ? null : json(offsets.get(i)));
      }
    }
    for (Map.Entry<Integer, List<JsonNode>> e : offsetsBySource.entrySet()) {
      int source = e.getKey();
      List<JsonNode> offsets = e.getValue();
      JsonNode sample = offsets.stream().filter(o -> o != null).findFirst().orElse(null);
      List<Long> ids = new ArrayList<>();
      List<Long> sizes = new ArrayList<>();
      String kind;
      String unit;
      String option;
      if (SourceLogs.isFileSourceOffset(sample)) {
        kind = "file";
        unit = "files";
        option = "maxFilesPerTrigger";
        long lastLogOffset = offsets.get(0) == null ? -1 : offsets.get(0).get("logOffset").asLong();
        Map<Long, Integer> perSourceBatch =
            SourceLogs.filesPerSourceBatch(
                files,
                source,
                lastLogOffset < 0
                    ? 0
                    : offsets.get(offsets.size() - 1) == null
                        ? lastLogOffset
                        : offsets.get(offsets.size() - 1).get("logOffset").asLong());
        long previous = batches.get(0) == 0 ? -1 : Long.MIN_VALUE; // unknown before the first kept
        for (int i = 0; i < batches.size(); i++) {
          JsonNode offset = offsets.get(i);
          if (offset == null) {
            continue;
          }
          long logOffset = offset.get("logOffset").asLong();
          if (logOffset == previous) {
            continue; // a no-data batch (Spark runs them to advance the watermark)
          }
          if (previous != Long.MIN_VALUE) {
            long count = 0;
            for (long b = previous + 1; b <= logOffset; b++) {
              count += perSourceBatch.getOrDefault(b, 0);
            }
            ids.add(batches.get(i));
            sizes.add(count);
          }
          previous = logOffset;
        }
      } else if (SourceLogs.isKafkaOffset(sample)) {
        kind = "kafka";
        unit = "offsets";
        option = "maxOffsetsPerTrigger";
        JsonNode previous =
            batches.get(0) == 0
                ? SourceLogs.kafkaInitialOffsets(files, source).orElse(null)
                : offsets.get(0);
        for (int i = batches.get(0) == 0 ? 0 : 1; i < batches.size(); i++) {
          JsonNode offset = offsets.get(i);
          if (offset == null) {
            continue;
          }
          long size = SourceLogs.kafkaOffsetsBetween(previous, offset);
          previous = offset;
          if (size == 0 && i > 0) {
            continue; // a no-data batch
          }
          ids.add(batches.get(i));
          sizes.add(size);
        }
      } else {
        continue;
      }
      sourceBatches.add(new DoctorReport.SourceBatches(source, kind, unit, ids, sizes));
      checkBurst(source, kind, unit, option, ids, sizes);
    }
  }

  private void checkBurst(
      int source, String kind, String unit, String option, List<Long> ids, List<Long> sizes) {
    if (sizes.size() < 3) {
      return;
    }
    int largest = 0;
    for (int i = 1; i < sizes.size(); i++) {
      if (sizes.get(i) > sizes.get(largest)) {
        largest = i;
      }
    }
    List<Long> others = new ArrayList<>(sizes);
    others.remove(largest);
    others.sort(Long::compare);
    long median = Math.max(1, others.get(others.size() / 2));
    long max = sizes.get(largest);
    if (max < settings.batchSizeRatio() * median) {
      return;
    }
    long cap = Math.max(1, 2 * median);
    add(
        Severity.WARNING,
        "SOURCE_BURST",
        String.format(
            "Batch %d of source %d (%s) was %.0fx " + "the typical batch",
            ids.get(largest), source, kind, (double) max / median),
        String.format(
            "%s per batch: batch %d took %,d, the median of the other %d batches is "
                + "%,d (threshold %.0fx); a %s batch this size holds the first trigger (and its "
                + "state) for as long as it takes",
            unit,
            ids.get(largest),
            max,
            others.size(),
            median,
            settings.batchSizeRatio(),
            largest == 0 ? "first" : "catch-up"),
        "Cap each batch on the source: .option(\""
            + option
            + "\", "
            + cap
            + ")"
            + (kind.equals("file") ? " (or maxBytesPerTrigger)" : "")
            + ", so a backlog is worked off in batches of the usual size.");
  }

  // ---- progress history -----------------------------------------------------------------------

  private void checkHistory(ProgressHistory history) {
    List<ProgressHistory.Batch> timed =
        history.batches().stream().filter(b -> b.triggerIntervalMs() > 0).toList();
    if (timed.isEmpty()) {
      return;
    }
    long slow = timed.stream().filter(b -> b.durationMs() > b.triggerIntervalMs()).count();
    long[] durations =
        timed.stream().mapToLong(ProgressHistory.Batch::durationMs).sorted().toArray();
    long interval = timed.get(timed.size() - 1).triggerIntervalMs();
    String evidence =
        String.format(
            "%d of %d batches took longer than the %d ms trigger "
                + "interval; batch duration median %d ms, p95 %d ms, max %d ms",
            slow,
            timed.size(),
            interval,
            durations[durations.length / 2],
            durations[Math.min(durations.length - 1, (int) Math.ceil(durations.length * 0.95) - 1)],
            durations[durations.length - 1]);
    if (slow * 5 >= timed.size() && slow > 0) {
      add(
          slow * 2 >= timed.size() ? Severity.ERROR : Severity.WARNING,
          "BATCHES_SLOWER_THAN_TRIGGER",
          "Batches take longer than the trigger interval: the stream falls behind",
          evidence,
          "Find the slow stage in durationMs (addBatch is the sink and stateful work); add cores "
              + "or state partitions, make the sink faster, or set a trigger interval the batches "
              + "fit in.");
    } else {
      add(Severity.INFO, "BATCH_DURATION", "Batches fit in the trigger interval", evidence, "");
    }
  }

  private static JsonNode json(String text) {
    try {
      return JSON.readTree(text);
    } catch (Exception e) {
      return null;
    }
  }

  static String bytes(long bytes) {
    return io.stateshift.doctor.Sizes.bytes(bytes);
  }
}
