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
 * query's key, must be the state's; and, for a set, rewrites in place the value fields named in
 * {@code sets} (field -> SQL expression over {@code partition_id}, {@code key} and the old {@code
 * value}) of the entries for which {@code setWhere} is true (null: every entry), the value keeping
 * its recorded schema.
 */
public record StateEdit(
    Long operatorId,
    String deleteWhere,
    String upsertSource,
    Dataset<Row> upsertRows,
    StructType keySchema,
    StructType valueSchema,
    Map<String, String> fills,
    Map<String, String> sets,
    String setWhere) {

  public StateEdit {
    fills =
        fills == null
            ? Map.of()
            : java.util.Collections.unmodifiableMap(new LinkedHashMap<>(fills));
    sets =
        sets == null ? Map.of() : java.util.Collections.unmodifiableMap(new LinkedHashMap<>(sets));
  }

  public StateEdit(Long operatorId, String deleteWhere, String upsertSource, Dataset<Row> rows) {
    this(operatorId, deleteWhere, upsertSource, rows, null, null, null, null, null);
  }

  /** The same edit, that also rewrites value fields in place ({@code sets}) where setWhere is. */
  public StateEdit withSets(Map<String, String> sets, String setWhere) {
    return new StateEdit(
        operatorId,
        deleteWhere,
        upsertSource,
        upsertRows,
        keySchema,
        valueSchema,
        fills,
        sets,
        setWhere);
  }

  /** Whether this edit rewrites value fields in place. */
  public boolean rewritesValues() {
    return !sets.isEmpty();
  }

  /**
   * The fills that rewrite a value of schema {@code value} in place for {@code sets}: each set
   * field is its expression, cast to the field's recorded type, where {@code setWhere} is true
   * (null: everywhere), else the field as it was; the other fields are carried as they are. The
   * expressions' types are checked first ({@link
   * io.stateshift.checkpoint.spi.SparkLine#checkValueSet}): the cast only widens.
   */
  public static Map<String, String> setFills(
      org.apache.spark.sql.types.StructType value, Map<String, String> sets, String setWhere) {
    Map<String, String> out = new LinkedHashMap<>();
    sets.forEach(
        (column, expression) -> {
          String name = valueField(column);
          int index = value.getFieldIndex(name).isDefined() ? value.fieldIndex(name) : -1;
          String type = index < 0 ? "STRING" : value.fields()[index].dataType().sql();
          String computed = "CAST((" + expression + ") AS " + type + ")";
          out.put(
              name,
              setWhere == null
                  ? computed
                  : "CASE WHEN ("
                      + setWhere
                      + ") THEN "
                      + computed
                      + " ELSE value.`"
                      + name.replace("`", "``")
                      + "` END");
        });
    return out;
  }

  /** A set's field as named: {@code count}, or {@code value.count} as the state command shows. */
  public static String valueField(String column) {
    String name = column.strip();
    if (name.startsWith("value.")) {
      name = name.substring("value.".length());
    }
    if (name.length() > 1 && name.startsWith("`") && name.endsWith("`")) {
      name = name.substring(1, name.length() - 1).replace("``", "`");
    }
    return name;
  }

  /** An evolution of the values of one operator's state to {@code valueSchema}. */
  public static StateEdit evolution(
      Long operatorId, StructType keySchema, StructType valueSchema, Map<String, String> fills) {
    return new StateEdit(operatorId, null, null, null, keySchema, valueSchema, fills, null, null);
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
    sets.forEach((column, expr) -> out.add("--set " + shellQuoted(column + " = " + expr)));
    if (setWhere != null) {
      out.add("--where " + shellQuoted(setWhere));
    }
    return String.join(" ", out);
  }

  /** What the change did, for the history: what it was asked and the counts, never a value. */
  String describe(long operator, List<RepartitionResult.StoreMove> moves, long rewritten) {
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
    if (rewritesValues()) {
      long entries =
          rewritten >= 0 || setWhere != null
              ? rewritten
              : moves.stream()
                  .filter(m -> m.operatorId() == operator)
                  .mapToLong(RepartitionResult.StoreMove::rowsRead)
                  .sum();
      List<String> assignments = new ArrayList<>();
      sets.forEach((column, expr) -> assignments.add(column + " = " + expr));
      what.add(
          "set "
              + String.join(", ", assignments)
              + (setWhere == null ? "" : " where " + setWhere)
              + (entries < 0 ? "" : String.format(" (%,d entries rewritten)", entries)));
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
