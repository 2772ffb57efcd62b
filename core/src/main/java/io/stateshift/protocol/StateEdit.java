package io.stateshift.protocol;

import io.stateshift.RepartitionResult;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.types.StructType;

/**
 * What an edit changes in the state of one stateful operator ({@code operatorId}; null for the only
 * one): it deletes the entries for which {@code deleteWhere}, a SQL predicate over {@code
 * partition_id}, {@code key} and {@code value}, is true (null: none); writes {@code upsertRows} (a
 * {@code key} and a {@code value} struct; null: none), each replacing the entry with the same key,
 * {@code upsertSource} naming where they came from; and, for an evolution, rewrites every value
 * into {@code valueSchema} (null: kept), old fields carried by name, new ones from {@code fills}
 * (SQL expressions over {@code key} and the old {@code value}), where {@code keySchema}, the new
 * query's key, must be the state's.
 */
public record StateEdit(
    Long operatorId,
    String deleteWhere,
    String upsertSource,
    Dataset<Row> upsertRows,
    StructType keySchema,
    StructType valueSchema,
    Map<String, String> fills) {

  public StateEdit {
    fills =
        fills == null
            ? Map.of()
            : java.util.Collections.unmodifiableMap(new LinkedHashMap<>(fills));
  }

  public StateEdit(Long operatorId, String deleteWhere, String upsertSource, Dataset<Row> rows) {
    this(operatorId, deleteWhere, upsertSource, rows, null, null, null);
  }

  /** An evolution of the values of one operator's state to {@code valueSchema}. */
  public static StateEdit evolution(
      Long operatorId, StructType keySchema, StructType valueSchema, Map<String, String> fills) {
    return new StateEdit(operatorId, null, null, null, keySchema, valueSchema, fills);
  }

  public boolean evolves() {
    return valueSchema != null;
  }

  /** The command and options that name this change, as the journal records them. */
  public String options() {
    List<String> out = new ArrayList<>();
    out.add(evolves() ? "evolve" : "edit");
    if (operatorId != null) {
      out.add("--operator " + operatorId);
    }
    if (deleteWhere != null) {
      out.add("--delete-where " + shellQuoted(deleteWhere));
    }
    if (upsertRows != null) {
      out.add("--upsert-from " + shellQuoted(upsertSource == null ? "<rows>" : upsertSource));
    }
    if (evolves()) {
      out.add("--value-schema " + shellQuoted(valueSchema.toDDL()));
      fills.forEach((column, expr) -> out.add("--fill " + shellQuoted(column + "=" + expr)));
    }
    return String.join(" ", out);
  }

  /** What the change did, for the history: what it was asked and the counts, never a value. */
  String describe(long operator, List<RepartitionResult.StoreMove> moves) {
    List<String> what = new ArrayList<>();
    if (deleteWhere != null) {
      what.add("deleted where " + deleteWhere);
    }
    if (upsertRows != null) {
      what.add("upserted from " + (upsertSource == null ? "a Dataset" : upsertSource));
    }
    if (evolves()) {
      what.add(
          "values evolved to "
              + valueSchema.toDDL()
              + (fills.isEmpty() ? "" : ", filled " + fills));
    }
    StringBuilder out =
        new StringBuilder("operator ")
            .append(operator)
            .append(": ")
            .append(String.join(", ", what));
    for (RepartitionResult.StoreMove m : moves) {
      if (m.operatorId() == operator) {
        out.append(
            String.format("; %s %,d -> %,d entries", m.storeName(), m.rowsRead(), m.rowsWritten()));
      }
    }
    return out.toString();
  }

  /** {@code text} in single quotes for a POSIX shell. */
  static String shellQuoted(String text) {
    return "'" + text.replace("'", "'\\''") + "'";
  }
}
