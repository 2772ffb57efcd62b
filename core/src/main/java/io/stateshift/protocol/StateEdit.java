package io.stateshift.protocol;

import io.stateshift.RepartitionResult;
import java.util.List;

/**
 * What an edit deletes: the entries of one stateful operator ({@code operatorId}; null for the only
 * one) for which {@code deleteWhere}, a SQL predicate over {@code partition_id}, {@code key} and
 * {@code value}, is true.
 */
public record StateEdit(Long operatorId, String deleteWhere) {

  /** The command options that name this edit, as the journal records them. */
  public String options() {
    return (operatorId == null ? "" : "--operator " + operatorId + " ")
        + "--delete-where "
        + shellQuoted(deleteWhere);
  }

  /** What the edit did, for the history: the predicate and the counts, never a deleted value. */
  String describe(long operator, List<RepartitionResult.StoreMove> moves) {
    StringBuilder out =
        new StringBuilder("operator ")
            .append(operator)
            .append(": deleted where ")
            .append(deleteWhere)
            .append(':');
    for (RepartitionResult.StoreMove m : moves) {
      if (m.operatorId() == operator) {
        out.append(
            String.format(
                " %s %,d of %,d;", m.storeName(), m.rowsRead() - m.rowsWritten(), m.rowsRead()));
      }
    }
    out.setLength(out.length() - 1);
    return out.toString();
  }

  /** {@code text} in single quotes for a POSIX shell. */
  static String shellQuoted(String text) {
    return "'" + text.replace("'", "'\\''") + "'";
  }
}
