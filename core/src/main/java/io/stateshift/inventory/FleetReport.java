package io.stateshift.inventory;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.stateshift.doctor.Sizes;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * The fleet view: one row per stream found, and the cost practice's recommendations with the
 * numbers behind them. Values that could not be measured are null (a stateless query has no
 * partitions; batch duration and trigger need a monitor history).
 */
public record FleetReport(
    String generatedAt, List<Stream> streams, List<Recommendation> recommendations) {

  /**
   * One stream.
   *
   * @param name its path below the folder given (or its folder's name)
   * @param provider the state store provider class; null for a stateless query
   * @param operators the stateful operators, {@code <id>:<name>}
   * @param retainedBatches committed batches retained in the commit log
   * @param batchesPerHour from the commit log's times ({@link CommitTimes})
   * @param idleShare the share of the time between the first and last retained batch in which no
   *     batch ran
   * @param medianBatchMs median time from a batch's offset file to its commit file
   * @param lastBatchAt when the last retained batch was committed (ISO-8601)
   * @param triggerIntervalMs the trigger interval the monitor's history records (null: none)
   * @param historyBatches batches of this stream in the monitor's history
   * @param worstSeverity the severity of the doctor's most severe finding
   * @param worst that finding, {@code CODE: title}
   * @param findings the codes of all the doctor's findings
   * @param error why the checkpoint could not be read (then most values are null)
   */
  public record Stream(
      String name,
      String checkpoint,
      String queryId,
      String provider,
      Integer partitions,
      Integer recommendedPartitions,
      Long stateRows,
      Long stateBytes,
      List<String> operators,
      Long lastCommittedBatch,
      int retainedBatches,
      Double batchesPerHour,
      Double idleShare,
      Long medianBatchMs,
      String lastBatchAt,
      Long triggerIntervalMs,
      Long batchDurationMsMedian,
      Long batchDurationMsP95,
      int historyBatches,
      String worstSeverity,
      String worst,
      List<String> findings,
      String error) {

    /** The provider's short name: {@code RocksDB}, {@code HDFS}, or {@code -} when stateless. */
    public String providerShortName() {
      if (provider == null) {
        return "-";
      }
      String simple = provider.substring(provider.lastIndexOf('.') + 1);
      return simple.startsWith("RocksDB") ? "RocksDB" : simple.startsWith("HDFS") ? "HDFS" : simple;
    }

    /** The share of the time batches ran; null when unknown. */
    public Double busyShare() {
      return idleShare == null ? null : 1.0 - idleShare;
    }
  }

  /** What the cost practice advises. */
  public enum Kind {
    SCHEDULE_AVAILABLE_NOW,
    PACK_LIGHT_STREAMS,
    ISOLATE_HEAVY_STREAM,
    CHANGE_PARTITIONS,
    MOVE_TO_ROCKSDB
  }

  /** One recommendation: the streams it is for, the numbers it rests on, and what to do. */
  public record Recommendation(
      Kind kind, List<String> streams, String title, String evidence, String action) {}

  public Stream stream(String name) {
    return streams.stream()
        .filter(s -> s.name().equals(name))
        .findFirst()
        .orElseThrow(() -> new IllegalArgumentException("no stream " + name));
  }

  public List<Recommendation> recommendations(Kind kind) {
    return recommendations.stream().filter(r -> r.kind() == kind).toList();
  }

  /** The report as JSON (what {@code stateshift inventory --json} prints), null where unknown. */
  public String toJson() {
    Map<String, Object> root = new LinkedHashMap<>();
    root.put("generatedAt", generatedAt);
    root.put("streams", streams);
    root.put("recommendations", recommendations);
    try {
      return new ObjectMapper().writerWithDefaultPrettyPrinter().writeValueAsString(root);
    } catch (JsonProcessingException e) {
      throw new IllegalStateException(e);
    }
  }

  @Override
  public String toString() {
    List<String[]> rows = new ArrayList<>();
    rows.add(
        new String[] {
          "stream",
          "provider",
          "parts",
          "state rows",
          "state bytes",
          "batches/h",
          "idle",
          "trigger",
          "batch p50",
          "worst finding"
        });
    for (Stream s : streams) {
      rows.add(
          new String[] {
            s.name(),
            s.error() != null ? "?" : s.providerShortName(),
            s.partitions() == null ? "-" : s.partitions().toString(),
            s.stateRows() == null ? "-" : String.format("%,d", s.stateRows()),
            s.stateBytes() == null ? "-" : Sizes.bytes(s.stateBytes()),
            s.batchesPerHour() == null ? "-" : decimal(s.batchesPerHour()),
            s.idleShare() == null ? "-" : percent(s.idleShare()),
            s.triggerIntervalMs() == null ? "-" : millis(s.triggerIntervalMs()),
            s.batchDurationMsMedian() == null ? "-" : millis(s.batchDurationMsMedian()),
            s.error() != null
                ? "ERROR " + s.error()
                : s.worst() == null ? "-" : s.worstSeverity() + " " + s.worst()
          });
    }
    int[] width = new int[rows.get(0).length];
    for (String[] row : rows) {
      for (int i = 0; i < row.length - 1; i++) {
        width[i] = Math.max(width[i], row[i].length());
      }
    }
    StringBuilder out = new StringBuilder();
    for (String[] row : rows) {
      for (int i = 0; i < row.length; i++) {
        out.append(i == row.length - 1 ? row[i] : String.format("%-" + width[i] + "s  ", row[i]));
      }
      out.append('\n');
    }
    out.append('\n');
    if (recommendations.isEmpty()) {
      out.append("No recommendation: every stream suits how it runs.\n");
    }
    for (Recommendation r : recommendations) {
      out.append(r.kind()).append(": ").append(r.title()).append('\n');
      out.append("    streams:  ").append(String.join(", ", r.streams())).append('\n');
      out.append("    evidence: ").append(r.evidence()).append('\n');
      out.append("    action:   ").append(r.action()).append('\n');
    }
    out.append(
        String.format(
            "%n%d stream(s), %d recommendation(s).%n", streams.size(), recommendations.size()));
    return out.toString();
  }

  static String percent(double share) {
    return String.format(Locale.ROOT, "%.1f%%", share * 100);
  }

  static String decimal(double value) {
    return String.format(Locale.ROOT, value >= 100 ? "%.0f" : value >= 10 ? "%.1f" : "%.2f", value);
  }

  /** A duration: {@code 850 ms}, {@code 12.3 s}, {@code 4.0 min}, {@code 2.5 h}. */
  static String millis(long ms) {
    if (ms < 1_000) {
      return ms + " ms";
    }
    if (ms < 60_000) {
      return String.format(Locale.ROOT, "%.1f s", ms / 1000.0);
    }
    if (ms < 3_600_000) {
      return String.format(Locale.ROOT, "%.1f min", ms / 60_000.0);
    }
    return String.format(Locale.ROOT, "%.1f h", ms / 3_600_000.0);
  }
}
