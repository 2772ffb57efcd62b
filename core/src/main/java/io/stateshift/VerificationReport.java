package io.stateshift;

import java.util.List;

/**
 * The result of verifying a checkpoint's state layout.
 *
 * @param checkpoint the qualified checkpoint location
 * @param partitions the partition count the offset log records, or -1 when unreadable
 * @param rowsChecked state rows read and checked
 * @param problems each problem found, precisely; empty when the checkpoint is sound
 */
public record VerificationReport(
    String checkpoint, int partitions, long rowsChecked, List<String> problems) {

  public boolean ok() {
    return problems.isEmpty();
  }

  @Override
  public String toString() {
    StringBuilder out = new StringBuilder();
    out.append(
        String.format(
            "checkpoint %s: %d partitions, %,d state rows checked%n",
            checkpoint, partitions, rowsChecked));
    if (problems.isEmpty()) {
      out.append("OK: every key is in its partition, row counts match, all state files exist\n");
    } else {
      out.append(problems.size()).append(" problem(s):\n");
      problems.forEach(p -> out.append("  - ").append(p).append('\n'));
    }
    return out.toString();
  }
}
