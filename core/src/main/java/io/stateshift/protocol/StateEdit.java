package io.stateshift.protocol;

import io.stateshift.RepartitionResult;
import java.util.ArrayList;
import java.util.List;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;

/**
 * What an edit changes in the state of one stateful operator ({@code operatorId}; null for the only
 * one): it deletes the entries for which {@code deleteWhere}, a SQL predicate over {@code
 * partition_id}, {@code key} and {@code value}, is true (null: none), then writes {@code
 * upsertRows} (a {@code key} and a {@code value} struct; null: none), each replacing the entry with
 * the same key; {@code upsertSource} names where those rows came from.
 */
public record StateEdit(
    Long operatorId, String deleteWhere, String upsertSource, Dataset<Row> upsertRows) {

  public StateEdit(Long operatorId, String deleteWhere) {
    this(operatorId, deleteWhere, null, null);
  }

  /** The command options that name this edit, as the journal records them. */
  public String options() {
    List<String> out = new ArrayList<>();
    if (operatorId != null) {
      out.add("--operator " + operatorId);
    }
    if (deleteWhere != null) {
      out.add("--delete-where " + shellQuoted(deleteWhere));
    }
    if (upsertRows != null) {
      out.add("--upsert-from " + shellQuoted(upsertSource == null ? "<rows>" : upsertSource));
    }
    return String.join(" ", out);
  }

  /** What the edit did, for the history: what it was asked and the counts, never a value. */
  String describe(long operator, List<RepartitionResult.StoreMove> moves) {
    List<String> what = new ArrayList<>();
    if (deleteWhere != null) {
      what.add("deleted where " + deleteWhere);
    }
    if (upsertRows != null) {
      what.add("upserted from " + (upsertSource == null ? "a Dataset" : upsertSource));
    }
    StringBuilder out =
        new StringBuilder("operator ")
            .append(operator)
            .append(": ")
            .append(String.join(", ", what));
    for (RepartitionResult.StoreMove m : moves) {
      if (m.operatorId() == operator) {
        out.append(
            String.format(
                "; %s %,d -> %,d entries (%,d deleted)",
                m.storeName(),
                m.rowsRead(),
                m.rowsWritten(),
                Math.max(0, m.rowsRead() - m.rowsWritten())));
      }
    }
    return out.toString();
  }

  /** {@code text} in single quotes for a POSIX shell. */
  static String shellQuoted(String text) {
    return "'" + text.replace("'", "'\\''") + "'";
  }
}
