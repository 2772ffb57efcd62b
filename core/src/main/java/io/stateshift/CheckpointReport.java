package io.stateshift;

import java.util.Arrays;
import java.util.List;
import java.util.Optional;

/**
 * The layout of a checkpoint: batches, provider, and per operator and store the rows and bytes in
 * each state partition, with skew and keys found outside the partition Spark would place them in.
 *
 * @param stateCheckpointFormat the state checkpoint format: 1, or 2 where the commit log names each
 *     state version by unique id (RocksDB only)
 * @param changelogCheckpointing for RocksDB, whether the last state version was written as a
 *     changelog (the query ran with changelog checkpointing on); empty for the HDFS-backed store
 */
public record CheckpointReport(
    String checkpoint,
    String queryId,
    long lastPlannedBatch,
    long lastCommittedBatch,
    String stateStoreProvider,
    int partitions,
    List<OperatorReport> operators,
    Optional<String> interruptedRepartition,
    int stateCheckpointFormat,
    Optional<Boolean> changelogCheckpointing) {

  /** A report without the store's format details (format 1, changelog unknown). */
  public CheckpointReport(
      String checkpoint,
      String queryId,
      long lastPlannedBatch,
      long lastCommittedBatch,
      String stateStoreProvider,
      int partitions,
      List<OperatorReport> operators,
      Optional<String> interruptedRepartition) {
    this(
        checkpoint,
        queryId,
        lastPlannedBatch,
        lastCommittedBatch,
        stateStoreProvider,
        partitions,
        operators,
        interruptedRepartition,
        1,
        Optional.empty());
  }

  /** One stateful operator; {@code supported} is false when its stores were not read. */
  public record OperatorReport(long id, String name, boolean supported, List<StoreReport> stores) {}

  /** Per-partition rows and key+value bytes of one store. */
  public record StoreReport(String name, long[] rows, long[] bytes, long misplacedKeys) {
    public long totalRows() {
      return Arrays.stream(rows).sum();
    }

    public long totalBytes() {
      return Arrays.stream(bytes).sum();
    }

    /** Largest partition divided by the mean partition, by rows; 1.0 is perfectly even. */
    public double skew() {
      long total = totalRows();
      if (total == 0 || rows.length == 0) {
        return 1.0;
      }
      long max = Arrays.stream(rows).max().orElse(0);
      return max / ((double) total / rows.length);
    }
  }

  /** The report as indented JSON, for machines (the CLI's --json). */
  public String toJson() {
    java.util.Map<String, Object> root = new java.util.LinkedHashMap<>();
    root.put("checkpoint", checkpoint);
    root.put("queryId", queryId);
    root.put("lastPlannedBatch", lastPlannedBatch);
    root.put("lastCommittedBatch", lastCommittedBatch);
    root.put("stateStoreProvider", stateStoreProvider);
    root.put("changelogCheckpointing", changelogCheckpointing.orElse(null));
    root.put("stateCheckpointFormat", stateCheckpointFormat);
    root.put("partitions", partitions);
    root.put("interruptedRepartition", interruptedRepartition.orElse(null));
    List<Object> ops = new java.util.ArrayList<>();
    for (OperatorReport op : operators) {
      java.util.Map<String, Object> o = new java.util.LinkedHashMap<>();
      o.put("id", op.id());
      o.put("name", op.name());
      o.put("supported", op.supported());
      List<Object> stores = new java.util.ArrayList<>();
      for (StoreReport s : op.stores()) {
        java.util.Map<String, Object> m = new java.util.LinkedHashMap<>();
        m.put("name", s.name());
        m.put("rows", s.totalRows());
        m.put("bytes", s.totalBytes());
        m.put("skew", s.skew());
        m.put("misplacedKeys", s.misplacedKeys());
        m.put("rowsPerPartition", s.rows());
        m.put("bytesPerPartition", s.bytes());
        stores.add(m);
      }
      o.put("stores", stores);
      ops.add(o);
    }
    root.put("operators", ops);
    try {
      return new com.fasterxml.jackson.databind.ObjectMapper()
          .writerWithDefaultPrettyPrinter()
          .writeValueAsString(root);
    } catch (com.fasterxml.jackson.core.JsonProcessingException e) {
      throw new IllegalStateException(e);
    }
  }

  @Override
  public String toString() {
    StringBuilder out = new StringBuilder();
    out.append("checkpoint:      ").append(checkpoint).append('\n');
    out.append("query id:        ").append(queryId).append('\n');
    out.append("last planned:    batch ").append(lastPlannedBatch).append('\n');
    out.append("last committed:  batch ").append(lastCommittedBatch).append('\n');
    out.append("state store:     ").append(stateStoreProvider);
    changelogCheckpointing.ifPresent(
        on -> out.append(on ? ", changelog checkpointing on" : ", changelog checkpointing off"));
    out.append(", state checkpoint format v").append(stateCheckpointFormat).append('\n');
    out.append("partitions:      ").append(partitions).append('\n');
    interruptedRepartition.ifPresent(r -> out.append("interrupted:     ").append(r).append('\n'));
    for (OperatorReport op : operators) {
      out.append(
          String.format(
              "operator %d (%s)%s%n",
              op.id(),
              op.name(),
              op.supported() ? "" : ": not read, this operator is not supported yet"));
      for (StoreReport store : op.stores()) {
        out.append(
            String.format(
                "  store %-26s %,d rows, %,d bytes, skew %.2f%s%n",
                store.name(),
                store.totalRows(),
                store.totalBytes(),
                store.skew(),
                store.misplacedKeys() == 0
                    ? ""
                    : ", " + store.misplacedKeys() + " MISPLACED KEYS"));
        for (int p = 0; p < store.rows().length; p++) {
          out.append(
              String.format(
                  "    partition %-4d %,12d rows %,14d bytes%n",
                  p, store.rows()[p], store.bytes()[p]));
        }
      }
    }
    return out.toString();
  }
}
