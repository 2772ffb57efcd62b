package io.stateshift;

import java.util.List;

/**
 * What an edit would delete ({@link EditState#preview()}): the entries its predicate matches, per
 * store and partition, and up to five of their keys as JSON.
 */
public record EditPreview(
    RepartitionPlan plan,
    long operatorId,
    String deleteWhere,
    List<Matches> matches,
    List<String> sampleKeys) {

  /** The entries matched in one partition of one store. */
  public record Matches(String store, int partition, long rows) {}

  /** Entries matched in every store together. */
  public long rows() {
    return matches.stream().mapToLong(Matches::rows).sum();
  }

  @Override
  public String toString() {
    StringBuilder out =
        new StringBuilder(
            String.format(
                "Edit of %s, operator %d: delete where %s%n",
                plan.checkpoint(), operatorId, deleteWhere));
    out.append(
        String.format("  %,d entries match, at batch %d:%n", rows(), plan.lastCommittedBatch()));
    java.util.Map<String, Long> byStore = new java.util.TreeMap<>();
    matches.forEach(m -> byStore.merge(m.store(), m.rows(), Long::sum));
    byStore.forEach(
        (store, rows) -> {
          out.append(String.format("    store %s: %,d (", store, rows));
          out.append(
              String.join(
                  ", ",
                  matches.stream()
                      .filter(m -> m.store().equals(store))
                      .map(m -> "partition " + m.partition() + ": " + m.rows())
                      .toList()));
          out.append(")\n");
        });
    if (!sampleKeys.isEmpty()) {
      out.append("  keys, for example:\n");
      sampleKeys.forEach(k -> out.append("    ").append(k).append('\n'));
    }
    return out.toString();
  }
}
