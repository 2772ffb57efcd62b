package io.stateshift.spark.state;

import io.stateshift.StateShiftException;
import io.stateshift.StateShiftException.Reason;
import io.stateshift.checkpoint.StoreSpec;
import java.io.Serializable;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import org.apache.spark.api.java.JavaRDD;
import org.apache.spark.sql.Column;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.catalyst.expressions.UnsafeRow;
import org.apache.spark.sql.functions;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;

/**
 * Entries written into a store by an edit ({@code --upsert-from}): rows with a {@code key} and a
 * {@code value} struct, checked against the store's recorded schema (each field by name, its type
 * the same or one that widens safely into it) before anything is written, and converted to the
 * store's binary rows. An entry replaces the store's entry with the same key.
 */
final class StateUpsert implements Serializable {

  /** A key's binary form, compared by content. */
  record KeyBytes(byte[] bytes) implements Serializable {
    @Override
    public boolean equals(Object other) {
      return other instanceof KeyBytes k && Arrays.equals(bytes, k.bytes);
    }

    @Override
    public int hashCode() {
      return Arrays.hashCode(bytes);
    }

    @Override
    public String toString() {
      return bytes.length + " bytes";
    }
  }

  private StateUpsert() {}

  /**
   * The rows cast to the store's schema, or a refusal (bad input) that names the schema expected: a
   * missing or extra field, a type that does not widen safely, a key given twice.
   */
  static Dataset<Row> checked(SparkSession spark, StoreSpec store, Dataset<Row> rows) {
    StructType given = rows.schema();
    List<String> problems = new ArrayList<>();
    for (String part : List.of(StateRows.KEY, StateRows.VALUE)) {
      StructType expected = part.equals(StateRows.KEY) ? store.keySchema() : store.valueSchema();
      StructField field =
          Arrays.stream(given.fields()).filter(f -> f.name().equals(part)).findFirst().orElse(null);
      if (field == null || !(field.dataType() instanceof StructType struct)) {
        problems.add("no struct column '" + part + "'");
        continue;
      }
      for (StructField want : expected.fields()) {
        StructField have =
            Arrays.stream(struct.fields())
                .filter(f -> f.name().equals(want.name()))
                .findFirst()
                .orElse(null);
        if (have == null) {
          problems.add("no field " + part + "." + want.name());
        } else if (!widens(have.dataType(), want.dataType())) {
          problems.add(
              part
                  + "."
                  + want.name()
                  + " is "
                  + have.dataType().simpleString()
                  + ", which does not widen safely to "
                  + want.dataType().simpleString());
        }
      }
      for (StructField have : struct.fields()) {
        if (expected.getFieldIndex(have.name()).isEmpty()) {
          problems.add("a field " + part + "." + have.name() + " the state has not");
        }
      }
    }
    if (!problems.isEmpty()) {
      throw refusal(store, String.join("; ", problems));
    }
    Dataset<Row> cast =
        rows.select(
            cast(StateRows.KEY, store.keySchema()), cast(StateRows.VALUE, store.valueSchema()));
    long total = cast.count();
    if (total == 0) {
      throw refusal(store, "it has no rows");
    }
    long keys = cast.select(StateRows.KEY).distinct().count();
    if (keys != total) {
      throw refusal(store, (total - keys) + " of its keys are given more than once");
    }
    return cast;
  }

  /** The struct column {@code name} with its fields in the store's order and types. */
  private static Column cast(String name, StructType schema) {
    List<Column> fields = new ArrayList<>();
    for (StructField f : schema.fields()) {
      fields.add(functions.col(name + "." + f.name()).cast(f.dataType()).as(f.name()));
    }
    return functions.struct(fields.toArray(Column[]::new)).as(name);
  }

  private static boolean widens(DataType from, DataType to) {
    return from.sameType(to)
        || org.apache.spark.sql.catalyst.expressions.Cast$.MODULE$.canUpCast(from, to);
  }

  /** The entries as (key, value) binary rows, read by Spark tasks. */
  static JavaRDD<UnsafeRow[]> entries(Dataset<Row> checked) {
    int keyFields = ((StructType) checked.schema().fields()[0].dataType()).size();
    int valueFields = ((StructType) checked.schema().fields()[1].dataType()).size();
    return Plans.queryExecution(checked)
        .toRdd()
        .toJavaRDD()
        .map(
            (InternalRow row) ->
                new UnsafeRow[] {
                  unsafe(row.getStruct(0, keyFields)), unsafe(row.getStruct(1, valueFields))
                });
  }

  /** The keys of the entries, for the read side to leave the store's own entries of them out. */
  static Set<KeyBytes> keys(JavaRDD<UnsafeRow[]> entries) {
    return new HashSet<>(entries.map(e -> new KeyBytes(e[0].getBytes())).collect());
  }

  private static UnsafeRow unsafe(InternalRow row) {
    if (row instanceof UnsafeRow u) {
      return u.copy();
    }
    throw new IllegalStateException("expected a binary row, got " + row.getClass().getName());
  }

  private static StateShiftException refusal(StoreSpec store, String why) {
    return new StateShiftException(
        Reason.INVALID_ARGUMENT,
        "The entries to upsert do not fit operator "
            + store.operatorId()
            + " store "
            + store.storeName()
            + ": "
            + why
            + ". Give a key and a value struct as `stateshift state` shows them: "
            + StatePredicate.columns(new StructType().add(StateRows.KEY, store.keySchema()))
            + ", "
            + StatePredicate.columns(new StructType().add(StateRows.VALUE, store.valueSchema()))
            + ". The checkpoint was not changed.");
  }
}
