package io.stateshift;

import java.util.List;

/**
 * What an edit would delete ({@link EditState#preview()}): the entries its predicate matches, per
 * store and partition, and up to five of their keys as JSON; for an upsert, the entries it writes
 * and how many of them replace an entry of the same key ({@code -1} without an upsert); for a set,
 * the entries it would rewrite ({@code null} without one).
 */
public record EditPreview(
    RepartitionPlan plan,
    long operatorId,
    String deleteWhere,
    List<Matches> matches,
    List<String> sampleKeys,
    long upsertRows,
    long upsertReplacing,
    Set set) {

  /** The preview of an edit without a set. */
  public EditPreview(
      RepartitionPlan plan,
      long operatorId,
      String deleteWhere,
      List<Matches> matches,
      List<String> sampleKeys,
      long upsertRows,
      long upsertReplacing) {
    this(plan, operatorId, deleteWhere, matches, sampleKeys, upsertRows, upsertReplacing, null);
  }

  /** The entries matched in one partition of one store. */
  public record Matches(String store, int partition, long rows) {}

  /**
   * A set: the value fields and their expressions, the predicate of the entries it rewrites (null:
   * all) and how many entries that is.
   */
  public record Set(java.util.Map<String, String> fields, String where, long rows) {}

  /** Entries matched in every store together. */
  public long rows() {
    return matches.stream().mapToLong(Matches::rows).sum();
  }

  @Override
  public String toString() {
    StringBuilder out =
        new StringBuilder(
            String.format(
                "Edit of %s, operator %d, at batch %d:%n",
                plan.checkpoint(), operatorId, plan.lastCommittedBatch()));
    if (upsertRows >= 0) {
      out.append(
          String.format(
              "  upsert %,d entries, %,d of them replacing an entry with the same key%n",
              upsertRows, upsertReplacing));
    }
    if (set != null) {
      List<String> assignments = new java.util.ArrayList<>();
      set.fields().forEach((column, expr) -> assignments.add(column + " = " + expr));
      out.append(
          String.format(
              "  set %s%s: %,d entries to rewrite%n",
              String.join(", ", assignments),
              set.where() == null ? "" : " where " + set.where(),
              set.rows()));
    }
    if (deleteWhere == null) {
      return out.toString();
    }
    out.append(String.format("  delete where %s: %,d entries match%n", deleteWhere, rows()));
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
