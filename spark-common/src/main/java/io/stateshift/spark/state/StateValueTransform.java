package io.stateshift.spark.state;

import io.stateshift.StateShiftException;
import io.stateshift.StateShiftException.Reason;
import io.stateshift.checkpoint.StoreSpec;
import java.io.Serializable;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.catalyst.expressions.Attribute;
import org.apache.spark.sql.catalyst.expressions.Expression;
import org.apache.spark.sql.catalyst.expressions.GenericInternalRow;
import org.apache.spark.sql.catalyst.expressions.UnsafeProjection;
import org.apache.spark.sql.catalyst.expressions.UnsafeRow;
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan;
import org.apache.spark.sql.catalyst.plans.logical.Project;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.NullType;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;

/**
 * The rewrite of a store's values into a new value schema, for a changed query: each field of the
 * new schema is the old value's field of that name (of the same type, or one that widens safely
 * into it), or a SQL expression over {@code key} and the old {@code value}, or null where the field
 * is nullable and zero where it is a number that is not. Analyzed by Spark on the driver, evaluated
 * on the entries' binary rows in tasks.
 */
final class StateValueTransform implements Serializable {
  private final Expression value;
  private final List<Attribute> input;
  private final int fields;
  private transient UnsafeProjection compiled;
  private transient GenericInternalRow entry;

  private StateValueTransform(Expression value, List<Attribute> input, int fields) {
    this.value = value;
    this.input = input;
    this.fields = fields;
  }

  /** Checks and compiles the rewrite; refuses (bad input) what cannot be carried or filled. */
  static StateValueTransform compile(
      SparkSession spark, StoreSpec store, StructType target, Map<String, String> fills) {
    StructType old = store.valueSchema();
    for (String column : fills.keySet()) {
      if (target.getFieldIndex(column).isEmpty()) {
        throw refusal(store, target, "--fill names " + column + ", which the new value has not");
      }
    }
    List<String> parts = new ArrayList<>();
    for (StructField field : target.fields()) {
      String name = field.name();
      String type = field.dataType().sql();
      String source;
      if (fills.containsKey(name)) {
        DataType given = typeOf(spark, store, target, fills.get(name));
        if (!(given instanceof NullType) && !widens(given, field.dataType())) {
          throw refusal(
              store,
              target,
              "the fill of "
                  + name
                  + " is "
                  + given.simpleString()
                  + ", which does not widen safely to "
                  + field.dataType().simpleString());
        }
        source = "(" + fills.get(name) + ")";
      } else if (old.getFieldIndex(name).isDefined()) {
        DataType was = old.fields()[(Integer) old.getFieldIndex(name).get()].dataType();
        if (!widens(was, field.dataType())) {
          throw refusal(
              store,
              target,
              "value."
                  + name
                  + " is "
                  + was.simpleString()
                  + ", which does not widen safely to "
                  + field.dataType().simpleString()
                  + "; give --fill "
                  + name
                  + "=<expression> to compute it");
        }
        source = "value.`" + name + "`";
      } else if (field.nullable()) {
        source = "NULL";
      } else if (field.dataType() instanceof org.apache.spark.sql.types.NumericType) {
        source = "0";
      } else {
        throw refusal(
            store,
            target,
            "the new field "
                + name
                + " cannot be null and has no zero: give --fill "
                + name
                + "=<expression>");
      }
      parts.add("'" + name.replace("'", "\\'") + "', CAST(" + source + " AS " + type + ")");
    }
    LogicalPlan analyzed =
        analyze(store, target, spark, "named_struct(" + String.join(", ", parts) + ") AS value");
    if (!(analyzed instanceof Project project)) {
      throw refusal(store, target, "it is not a value");
    }
    // a NamedExpression is always an Expression; Java does not see the Scala self-type
    Expression named = (Expression) ScalaBridge.javaList(project.projectList()).get(0);
    return new StateValueTransform(
        named, ScalaBridge.javaList(project.child().output()), target.size());
  }

  /**
   * Checks a rewrite in place of the value fields named in {@code sets} for the entries {@code
   * where} selects (null: all), the value keeping its recorded schema: every field is the value's,
   * every expression's type widens safely to the field's (a literal NULL only where the field may
   * be null), {@code where} is a predicate; then compiles the rewrite as an evolution to the same
   * value.
   */
  static void checkSet(
      SparkSession spark, StoreSpec store, Map<String, String> sets, String where) {
    StructType value = store.valueSchema();
    java.util.Set<String> named = new java.util.HashSet<>();
    for (Map.Entry<String, String> set : sets.entrySet()) {
      String name = io.stateshift.protocol.StateEdit.valueField(set.getKey());
      if (value.getFieldIndex(name).isEmpty()) {
        throw setRefusal(store, "--set names " + set.getKey() + ", which the value has not");
      }
      if (!named.add(name)) {
        throw setRefusal(store, "--set names " + name + " twice");
      }
      StructField field = value.fields()[value.fieldIndex(name)];
      DataType given = typeOf(spark, store, value, set.getValue(), true);
      if (given instanceof NullType ? !field.nullable() : !widens(given, field.dataType())) {
        throw setRefusal(
            store,
            "the expression for "
                + name
                + " is "
                + given.simpleString()
                + ", which does not fit value."
                + name
                + " ("
                + field.dataType().simpleString()
                + (given instanceof NullType ? ", not null" : "")
                + ") without loss; the value keeps its recorded type, so cast the expression"
                + " where you mean to narrow it");
      }
    }
    if (where != null) {
      DataType type = typeOf(spark, store, value, where, true);
      if (!(type instanceof org.apache.spark.sql.types.BooleanType)) {
        throw setRefusal(
            store, "--where " + where + " is " + type.simpleString() + ", not a predicate");
      }
    }
    compile(spark, store, value, io.stateshift.protocol.StateEdit.setFills(value, sets, where));
  }

  /** The new value of an entry; the row is reused by the next call. */
  UnsafeRow apply(int partition, UnsafeRow key, UnsafeRow oldValue) {
    if (compiled == null) {
      compiled = UnsafeProjection.create(ScalaBridge.seq(List.of(value)), ScalaBridge.seq(input));
      compiled.initialize(0);
      entry = new GenericInternalRow(3);
    }
    entry.update(0, partition);
    entry.update(1, key);
    entry.update(2, oldValue);
    return compiled.apply(entry).getStruct(0, fields);
  }

  /** The same rewrite, compiled anew on its first use: a thread of its own may use it. */
  StateValueTransform copy() {
    return new StateValueTransform(value, input, fields);
  }

  private static DataType typeOf(
      SparkSession spark, StoreSpec store, StructType target, String expression) {
    return typeOf(spark, store, target, expression, false);
  }

  private static DataType typeOf(
      SparkSession spark, StoreSpec store, StructType target, String expression, boolean set) {
    LogicalPlan analyzed = analyze(store, target, spark, "(" + expression + ") AS filled", set);
    return ((Expression) ((Project) analyzed).projectList().head()).dataType();
  }

  private static LogicalPlan analyze(
      StoreSpec store, StructType target, SparkSession spark, String selectExpression) {
    return analyze(store, target, spark, selectExpression, false);
  }

  private static LogicalPlan analyze(
      StoreSpec store,
      StructType target,
      SparkSession spark,
      String selectExpression,
      boolean set) {
    try {
      return Plans.queryExecution(
              spark
                  .createDataFrame(List.<Row>of(), StateRows.schema(store))
                  .selectExpr(selectExpression))
          .analyzed();
    } catch (Exception e) { // AnalysisException, and the parser's ParseException
      String message = e.getMessage() == null ? "Spark cannot analyze it" : e.getMessage();
      String why = message.strip().lines().findFirst().orElse(message);
      throw set ? setRefusal(store, why) : refusal(store, target, why);
    }
  }

  private static boolean widens(DataType from, DataType to) {
    return from.sameType(to)
        || org.apache.spark.sql.catalyst.expressions.Cast$.MODULE$.canUpCast(from, to);
  }

  private static StateShiftException setRefusal(StoreSpec store, String why) {
    return new StateShiftException(
        Reason.INVALID_ARGUMENT,
        "The values of operator "
            + store.operatorId()
            + " store "
            + store.storeName()
            + " cannot be set: "
            + why
            + ". Its columns now: "
            + StatePredicate.columns(StateRows.schema(store))
            + ". The checkpoint was not changed.");
  }

  private static StateShiftException refusal(StoreSpec store, StructType target, String why) {
    return new StateShiftException(
        Reason.INVALID_ARGUMENT,
        "The state of operator "
            + store.operatorId()
            + " store "
            + store.storeName()
            + " cannot evolve to value "
            + target.toDDL()
            + ": "
            + why
            + ". Its columns now: "
            + StatePredicate.columns(StateRows.schema(store))
            + ". The checkpoint was not changed.");
  }
}
