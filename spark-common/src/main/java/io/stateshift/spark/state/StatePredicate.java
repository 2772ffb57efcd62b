package io.stateshift.spark.state;

import io.stateshift.StateShiftException;
import io.stateshift.StateShiftException.Reason;
import io.stateshift.checkpoint.StoreSpec;
import java.io.Serializable;
import java.util.ArrayList;
import java.util.List;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.catalyst.expressions.Attribute;
import org.apache.spark.sql.catalyst.expressions.BasePredicate;
import org.apache.spark.sql.catalyst.expressions.Expression;
import org.apache.spark.sql.catalyst.expressions.GenericInternalRow;
import org.apache.spark.sql.catalyst.expressions.UnsafeRow;
import org.apache.spark.sql.catalyst.plans.logical.Filter;
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;

/**
 * A SQL predicate over a store's entries ({@code partition_id}, {@code key}, {@code value}, as
 * {@link StateRows} shows them), analyzed by Spark on the driver against the store's recorded
 * schema and evaluated on the entries' own binary rows in tasks, without converting them.
 */
final class StatePredicate implements Serializable {
  private final String text;
  private final Expression condition;
  private final List<Attribute> input;
  private transient BasePredicate compiled;
  private transient GenericInternalRow entry;

  private StatePredicate(String text, Expression condition, List<Attribute> input) {
    this.text = text;
    this.condition = condition;
    this.input = input;
  }

  /**
   * Analyzes {@code text} against {@code store}'s entries; refuses (bad input) a predicate Spark
   * cannot resolve or that is not boolean, and with {@code keyOnly} one that reads the value.
   */
  static StatePredicate compile(SparkSession spark, StoreSpec store, String text, boolean keyOnly) {
    if (text == null || text.isBlank()) {
      throw refusal(store, "", "the predicate is empty", StateRows.schema(store));
    }
    // a join's or transformWithState's predicate is analyzed over partition and key alone, so
    // that naming anything else is refused as such
    StructType schema = keyOnly ? keyColumns(StateRows.schema(store)) : StateRows.schema(store);
    LogicalPlan analyzed;
    try {
      analyzed =
          Plans.queryExecution(spark.createDataFrame(List.<Row>of(), schema).where(text))
              .analyzed();
    } catch (Exception e) { // AnalysisException, and the parser's ParseException
      if (keyOnly && store.hasColumnFamilies()) {
        throw refusal(
            store,
            text,
            "entries of state in column families are chosen by partition_id and key (the"
                + " grouping key) only, so that a key loses all its state together (a"
                + " transformWithState key its variables, timers and TTL entries; a join key its"
                + " rows in all four stores); "
                + firstLine(e.getMessage()),
            schema);
      }
      if (keyOnly && text.matches("(?s).*\\bvalue\\b.*")) {
        throw refusal(
            store,
            text,
            "a join's entries are chosen by key only, so that all four of its stores lose the"
                + " same keys; name key fields only",
            schema);
      }
      throw refusal(store, text, firstLine(e.getMessage()), schema);
    }
    if (!(analyzed instanceof Filter filter)) {
      throw refusal(store, text, "it is not a predicate", schema);
    }
    List<Attribute> input = ScalaBridge.javaList(filter.child().output());
    return new StatePredicate(text, filter.condition(), input);
  }

  /** Whether the entry matches; in a task, with the predicate compiled once per task. */
  boolean matches(int partition, UnsafeRow key, UnsafeRow value) {
    if (compiled == null) {
      compiled =
          org.apache.spark.sql.catalyst.expressions.Predicate$.MODULE$.create(
              condition, ScalaBridge.seq(input));
      compiled.initialize(0);
      entry = new GenericInternalRow(3);
    }
    entry.update(0, partition);
    entry.update(1, key);
    entry.update(2, value);
    return compiled.eval(entry);
  }

  /** The same predicate, compiled anew on its first match: a thread of its own may use it. */
  StatePredicate copy() {
    return new StatePredicate(text, condition, input);
  }

  String text() {
    return text;
  }

  private static StructType keyColumns(StructType schema) {
    return new StructType(
        java.util.Arrays.stream(schema.fields())
            .filter(f -> f.name().equals(StateRows.PARTITION) || f.name().equals(StateRows.KEY))
            .toArray(StructField[]::new));
  }

  private static StateShiftException refusal(
      StoreSpec store, String text, String why, StructType schema) {
    return new StateShiftException(
        Reason.INVALID_ARGUMENT,
        "The predicate \""
            + text
            + "\" does not apply to operator "
            + store.operatorId()
            + " store "
            + store.storeName()
            + ": "
            + why
            + ". Its columns: "
            + columns(schema)
            + ". The checkpoint was not changed.");
  }

  /** The columns a predicate can name, with their types: {@code key.word string, ...}. */
  static String columns(StructType schema) {
    List<String> out = new ArrayList<>();
    for (StructField field : schema.fields()) {
      addColumns(out, field.name(), field.dataType());
    }
    return String.join(", ", out);
  }

  private static void addColumns(List<String> out, String name, DataType type) {
    if (type instanceof StructType struct && !name.contains(".")) {
      for (StructField field : struct.fields()) {
        addColumns(out, name + "." + field.name(), field.dataType());
      }
    } else {
      out.add(name + " " + type.simpleString());
    }
  }

  private static String firstLine(String message) {
    if (message == null) {
      return "Spark cannot analyze it";
    }
    String line = message.strip().lines().findFirst().orElse(message);
    return line.endsWith(".") ? line.substring(0, line.length() - 1) : line;
  }
}
