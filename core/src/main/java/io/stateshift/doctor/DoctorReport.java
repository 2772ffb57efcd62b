package io.stateshift.doctor;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * What the doctor found in a checkpoint (and its progress history), with the measurements the
 * findings rest on, so a report can chart them.
 */
public record DoctorReport(
    String checkpoint,
    String queryId,
    long lastCommittedBatch,
    String stateStoreProvider,
    int partitions,
    int recommendedPartitions,
    int cores,
    String coresSource,
    List<Finding> findings,
    List<StorePartitions> storePartitions,
    List<OperatorGrowth> stateGrowth,
    List<SourceBatches> sourceBatches) {

  /** Rows and key+value bytes in each state partition of one store. */
  public record StorePartitions(
      long operatorId, String operatorName, String storeName, long[] rows, long[] bytes) {}

  /** Total state rows of one operator at each batch (from the retained state versions). */
  public record OperatorGrowth(
      long operatorId, String operatorName, List<Long> batches, List<Long> rows) {}

  /** Input per batch of one source, as the offset and source logs record it. */
  public record SourceBatches(
      int sourceIndex, String kind, String unit, List<Long> batches, List<Long> sizes) {}

  /** The most severe finding's severity, INFO when there is none. */
  public Severity worst() {
    return findings.stream()
        .map(Finding::severity)
        .max(Comparator.naturalOrder())
        .orElse(Severity.INFO);
  }

  /** 0 when nothing is above a warning, 1 otherwise: the CLI's exit code. */
  public int exitCode() {
    return worst() == Severity.ERROR ? 1 : 0;
  }

  public List<Finding> findings(Severity severity) {
    return findings.stream().filter(f -> f.severity() == severity).toList();
  }

  public boolean has(String code) {
    return findings.stream().anyMatch(f -> f.code().equals(code));
  }

  public String toJson() {
    Map<String, Object> root = new LinkedHashMap<>();
    root.put("checkpoint", checkpoint);
    root.put("queryId", queryId);
    root.put("lastCommittedBatch", lastCommittedBatch);
    root.put("stateStoreProvider", stateStoreProvider);
    root.put("partitions", partitions);
    root.put("recommendedPartitions", recommendedPartitions);
    root.put("cores", cores);
    root.put("coresSource", coresSource);
    root.put("worst", worst().name());
    root.put("findings", findings);
    root.put("storePartitions", storePartitions);
    root.put("stateGrowth", stateGrowth);
    root.put("sourceBatches", sourceBatches);
    try {
      return new ObjectMapper().writerWithDefaultPrettyPrinter().writeValueAsString(root);
    } catch (JsonProcessingException e) {
      throw new IllegalStateException(e);
    }
  }

  @Override
  public String toString() {
    StringBuilder out = new StringBuilder();
    out.append("checkpoint:   ").append(checkpoint).append('\n');
    out.append("query id:     ").append(queryId).append('\n');
    out.append("committed:    batch ").append(lastCommittedBatch).append('\n');
    out.append("state store:  ")
        .append(stateStoreProvider == null ? "-" : shortName(stateStoreProvider))
        .append(", ")
        .append(partitions)
        .append(" partitions (recommended ")
        .append(recommendedPartitions)
        .append(" for ")
        .append(cores)
        .append(" cores)\n");
    out.append("cores:        ").append(cores).append(", from ").append(coresSource).append('\n');
    List<Finding> sorted = new ArrayList<>(findings);
    sorted.sort(Comparator.comparing(Finding::severity).reversed());
    out.append('\n');
    for (Finding f : sorted) {
      out.append(String.format("%-7s %s: %s%n", f.severity(), f.code(), f.title()));
      out.append("        evidence: ").append(f.evidence()).append('\n');
      if (f.fix() != null && !f.fix().isEmpty()) {
        out.append("        fix:      ").append(f.fix()).append('\n');
      }
    }
    long errors = findings(Severity.ERROR).size();
    long warnings = findings(Severity.WARNING).size();
    out.append(
        String.format(
            "%n%d error(s), %d warning(s), %d info.%n",
            errors, warnings, findings.size() - errors - warnings));
    return out.toString();
  }

  private static String shortName(String provider) {
    return provider.substring(provider.lastIndexOf('.') + 1);
  }
}
