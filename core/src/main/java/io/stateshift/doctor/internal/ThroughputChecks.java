package io.stateshift.doctor.internal;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.stateshift.checkpoint.OffsetLogEntry;
import io.stateshift.checkpoint.SourceLogs;
import io.stateshift.doctor.DoctorReport;
import io.stateshift.doctor.Severity;
import io.stateshift.monitor.ProgressHistory;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * The doctor's checks of how batches flow: a source batch far larger than the typical one, and
 * batches slower than the trigger interval (from a progress history).
 */
final class ThroughputChecks {
  private final Diagnosis d;
  private static final ObjectMapper JSON = new ObjectMapper();

  final List<DoctorReport.SourceBatches> sourceBatches = new ArrayList<>();

  ThroughputChecks(Diagnosis d) {
    this.d = d;
  }

  void checkSources() {
    List<Long> batches = d.retainedOffsetBatches();
    if (batches.isEmpty()) {
      return;
    }
    Map<Integer, List<JsonNode>> offsetsBySource = new HashMap<>();
    for (long batch : batches) {
      List<String> offsets =
          d.safeOffsets(batch).map(OffsetLogEntry::sourceOffsets).orElse(List.of());
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
                d.files,
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
                ? SourceLogs.kafkaInitialOffsets(d.files, source).orElse(null)
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
    if (max < d.settings.batchSizeRatio() * median) {
      return;
    }
    long cap = Math.max(1, 2 * median);
    d.add(
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
            d.settings.batchSizeRatio(),
            largest == 0 ? "first" : "catch-up"),
        "Cap each batch on the source: .option(\""
            + option
            + "\", "
            + cap
            + ")"
            + (kind.equals("file") ? " (or maxBytesPerTrigger)" : "")
            + ", so a backlog is worked off in batches of the usual size.");
  }

  void checkHistory(ProgressHistory history) {
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
      d.add(
          slow * 2 >= timed.size() ? Severity.ERROR : Severity.WARNING,
          "BATCHES_SLOWER_THAN_TRIGGER",
          "Batches take longer than the trigger interval: the stream falls behind",
          evidence,
          "Find the slow stage in durationMs (addBatch is the sink and stateful work); add cores "
              + "or state partitions, make the sink faster, or set a trigger interval the batches "
              + "fit in.");
    } else {
      d.add(Severity.INFO, "BATCH_DURATION", "Batches fit in the trigger interval", evidence, "");
    }
  }

  private static JsonNode json(String text) {
    try {
      return JSON.readTree(text);
    } catch (Exception e) {
      return null;
    }
  }
}
