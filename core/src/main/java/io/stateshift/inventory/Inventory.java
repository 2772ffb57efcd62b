package io.stateshift.inventory;

import io.stateshift.StateShiftException;
import io.stateshift.checkpoint.CheckpointFiles;
import io.stateshift.checkpoint.SessionSettings;
import io.stateshift.config.StateShiftConf;
import io.stateshift.doctor.Doctor;
import io.stateshift.doctor.DoctorReport;
import io.stateshift.doctor.DoctorSettings;
import io.stateshift.doctor.Finding;
import io.stateshift.monitor.ProgressHistory;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Comparator;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import org.apache.hadoop.conf.Configuration;
import org.apache.spark.sql.SparkSession;

/**
 * The fleet view, read-only: {@code
 * StateShift.get(spark).inventory(List.of("s3a://bucket/checkpoints"))
 * .history("s3a://bucket/stream-history").run()}. Finds every checkpoint at or below the locations
 * ({@link CheckpointSearch}), runs the doctor on each, times its batches from the commit log
 * ({@link CommitTimes}) and the monitor's history, and adds the cost practice's recommendations.
 */
public final class Inventory {
  private final SparkSession spark;
  private final List<String> locations;
  private final List<String> histories = new ArrayList<>();
  private final Map<String, String> settings = new HashMap<>();
  private final Map<String, String> doctorSettings = new HashMap<>();
  private int cores = -1;

  public Inventory(SparkSession spark, List<String> locations) {
    this.spark = Objects.requireNonNull(spark, "spark");
    this.locations = List.copyOf(locations);
  }

  /** A progress history written by the monitor (a file or a folder of .jsonl files); repeatable. */
  public Inventory history(String location) {
    if (location != null && !location.isBlank()) {
      histories.add(location);
    }
    return this;
  }

  /** The cores each stream runs on, for the doctor's partition advice (default: the session's). */
  public Inventory cores(int cores) {
    if (cores < 1) {
      throw new StateShiftException(
          StateShiftException.Reason.INVALID_ARGUMENT,
          "cores must be at least 1, got " + cores + ".");
    }
    this.cores = cores;
    return this;
  }

  /**
   * A threshold: an inventory setting by its name without {@code spark.stateshift.inventory.}, or a
   * doctor setting by its full key ({@code spark.stateshift.doctor.largeStateBytes}).
   */
  public Inventory setting(String name, String value) {
    if (name.startsWith(DoctorSettings.PREFIX)) {
      new Doctor(spark, "").setting(name, value); // refuses an unknown name
      doctorSettings.put(name, value);
      return this;
    }
    String key =
        name.startsWith(StateShiftConf.INVENTORY_PREFIX)
            ? name
            : StateShiftConf.INVENTORY_PREFIX + name;
    boolean known = StateShiftConf.all().stream().anyMatch(s -> s.key().equals(key));
    if (!known) {
      throw new StateShiftException(
          StateShiftException.Reason.INVALID_ARGUMENT,
          "Unknown inventory setting '"
              + name
              + "'; settings are "
              + StateShiftConf.INVENTORY_PREFIX
              + "{idleShare, lightStateBytes, lightBusyShare, heavyStateBytes, heavyBusyShare}"
              + " and the doctor's "
              + DoctorSettings.PREFIX
              + "*.");
    }
    settings.put(key, value);
    return this;
  }

  public FleetReport run() {
    Configuration conf = SessionSettings.hadoopConf(spark);
    List<CheckpointSearch.Found> found = CheckpointSearch.find(locations, conf);
    Map<String, ProgressHistory> read = new LinkedHashMap<>();
    for (String h : histories) {
      read.put(h, ProgressHistory.read(h, conf));
    }
    CostPractice practice =
        new CostPractice(
            key -> settings.containsKey(key) ? settings.get(key) : spark.conf().get(key, null));
    List<FleetReport.Stream> streams = new ArrayList<>();
    Map<String, DoctorReport> reports = new HashMap<>();
    for (CheckpointSearch.Found f : found) {
      try {
        DoctorReport report = diagnose(f.location(), read);
        reports.put(f.name(), report);
        streams.add(row(f, report, read, conf));
      } catch (RuntimeException e) {
        String message = e instanceof StateShiftException ? e.getMessage() : e.toString();
        streams.add(unreadable(f, message));
      }
    }
    return new FleetReport(
        Instant.now().toString(), List.copyOf(streams), practice.recommend(streams, reports));
  }

  private DoctorReport diagnose(String location, Map<String, ProgressHistory> histories) {
    Doctor doctor = new Doctor(spark, location);
    if (cores > 0) {
      doctor.cores(cores);
    }
    doctorSettings.forEach(doctor::setting);
    String queryId =
        io.stateshift.checkpoint.Checkpoint.load(
                CheckpointFiles.at(location, SessionSettings.hadoopConf(spark)))
            .queryId();
    histories.entrySet().stream()
        .filter(e -> !e.getValue().ofQuery(queryId).batches().isEmpty())
        .findFirst()
        .ifPresent(e -> doctor.history(e.getKey()));
    return doctor.run();
  }

  private static FleetReport.Stream row(
      CheckpointSearch.Found found,
      DoctorReport report,
      Map<String, ProgressHistory> histories,
      Configuration conf) {
    CommitTimes times = CommitTimes.of(CheckpointFiles.at(found.location(), conf));
    List<ProgressHistory.Batch> batches = new ArrayList<>();
    histories.values().forEach(h -> batches.addAll(h.ofQuery(report.queryId()).batches()));
    Long trigger =
        batches.stream()
            .filter(b -> b.triggerIntervalMs() > 0)
            .reduce((a, b) -> b)
            .map(ProgressHistory.Batch::triggerIntervalMs)
            .orElse(null);
    long[] durations =
        batches.stream().mapToLong(ProgressHistory.Batch::durationMs).sorted().toArray();
    boolean stateful = report.stateStoreProvider() != null;
    List<String> operators = new ArrayList<>();
    long rows = 0;
    long bytes = 0;
    for (DoctorReport.StorePartitions store : report.storePartitions()) {
      String op = store.operatorId() + ":" + store.operatorName();
      if (!operators.contains(op)) {
        operators.add(op);
      }
      rows += Arrays.stream(store.rows()).sum();
      bytes += Arrays.stream(store.bytes()).sum();
    }
    Finding worst =
        report.findings().stream().max(Comparator.comparing(Finding::severity)).orElse(null);
    return new FleetReport.Stream(
        found.name(),
        report.checkpoint(),
        report.queryId(),
        report.stateStoreProvider(),
        stateful && report.partitions() > 0 ? report.partitions() : null,
        stateful && report.recommendedPartitions() > 0 ? report.recommendedPartitions() : null,
        stateful ? rows : null,
        stateful ? bytes : null,
        List.copyOf(operators),
        report.lastCommittedBatch() >= 0 ? report.lastCommittedBatch() : null,
        times.batches(),
        times.batchesPerHour(),
        times.idleShare(),
        times.medianBatchMs(),
        times.lastMs() == null ? null : Instant.ofEpochMilli(times.lastMs()).toString(),
        trigger,
        durations.length == 0 ? null : durations[durations.length / 2],
        durations.length == 0
            ? null
            : durations[
                Math.min(durations.length - 1, (int) Math.ceil(durations.length * 0.95) - 1)],
        durations.length,
        worst == null ? null : worst.severity().name(),
        worst == null ? null : worst.code() + ": " + worst.title(),
        report.findings().stream().map(Finding::code).toList(),
        null);
  }

  private static FleetReport.Stream unreadable(CheckpointSearch.Found found, String message) {
    return new FleetReport.Stream(
        found.name(),
        found.location(),
        null,
        null,
        null,
        null,
        null,
        null,
        List.of(),
        null,
        0,
        null,
        null,
        null,
        null,
        null,
        null,
        null,
        0,
        "ERROR",
        null,
        List.of(),
        message);
  }
}
