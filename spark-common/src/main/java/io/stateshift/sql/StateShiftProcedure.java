package io.stateshift.sql;

import io.stateshift.StateShiftException;
import java.util.Iterator;
import java.util.List;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.catalyst.expressions.GenericInternalRow;
import org.apache.spark.sql.catalyst.expressions.UnsafeArrayData;
import org.apache.spark.sql.connector.catalog.procedures.BoundProcedure;
import org.apache.spark.sql.connector.catalog.procedures.ProcedureParameter;
import org.apache.spark.sql.connector.catalog.procedures.UnboundProcedure;
import org.apache.spark.sql.connector.read.LocalScan;
import org.apache.spark.sql.connector.read.Scan;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.unsafe.types.UTF8String;

/**
 * A procedure with one parameter list and one result table. Spark checks, casts and orders the
 * arguments by {@link #parameters()} before {@link #call}; the work runs on the calling session.
 */
abstract class StateShiftProcedure implements UnboundProcedure, BoundProcedure {
  private final String name;
  private final String description;
  private final ProcedureParameter[] parameters;
  private final StructType output;

  StateShiftProcedure(
      String name, String description, StructType output, ProcedureParameter... parameters) {
    this.name = name;
    this.description = description;
    this.parameters = parameters;
    this.output = output;
  }

  /** The result rows, as Java values in the order of the output schema's columns. */
  abstract List<Object[]> run(SparkSession spark, Arguments args);

  @Override
  public String name() {
    return name;
  }

  @Override
  public String description() {
    return description;
  }

  /** One parameter list, whatever the arguments' types: binding needs nothing of them. */
  @Override
  public BoundProcedure bind(StructType inputType) {
    return this;
  }

  @Override
  public ProcedureParameter[] parameters() {
    return parameters.clone();
  }

  @Override
  public boolean isDeterministic() {
    return false; // they read (and some change) a checkpoint as it is at the time of the call
  }

  StructType output() {
    return output;
  }

  @Override
  public Iterator<Scan> call(InternalRow input) {
    // CALL runs while the statement is analyzed, on the thread of spark.sql(...), with the
    // calling session active.
    SparkSession spark = SparkSession.active();
    List<Object[]> rows;
    try {
      rows = run(spark, new Arguments(input));
    } catch (StateShiftException e) {
      // The reason leads the message, so a script can tell a refusal (checkpoint unchanged) from
      // a failure without the Java type; the CLI's own message follows unchanged.
      throw new StateShiftException(
          e.reason(),
          name
              + " "
              + (e.reason().isBadInput() ? "refused" : "failed")
              + " ["
              + e.reason()
              + "]: "
              + e.getMessage(),
          e);
    }
    InternalRow[] internal =
        rows.stream().map(StateShiftProcedure::toInternal).toArray(InternalRow[]::new);
    return List.<Scan>of(new Result(output, internal)).iterator();
  }

  private static InternalRow toInternal(Object[] values) {
    Object[] out = new Object[values.length];
    for (int i = 0; i < values.length; i++) {
      Object v = values[i];
      if (v instanceof String s) {
        out[i] = UTF8String.fromString(s);
      } else if (v instanceof long[] longs) {
        out[i] = UnsafeArrayData.fromPrimitiveArray(longs);
      } else if (v instanceof String[] strings) {
        Object[] utf8 = new Object[strings.length];
        for (int j = 0; j < strings.length; j++) {
          utf8[j] = UTF8String.fromString(strings[j]);
        }
        out[i] = new org.apache.spark.sql.catalyst.util.GenericArrayData(utf8);
      } else {
        out[i] = v; // null, Integer, Long, Boolean, Double: Spark's own representation
      }
    }
    return new GenericInternalRow(out);
  }

  /** The result table: computed on the driver, which is what Spark accepts from a procedure. */
  private record Result(StructType readSchema, InternalRow[] rows) implements LocalScan {
    @Override
    public StructType readSchema() {
      return readSchema;
    }

    @Override
    public InternalRow[] rows() {
      return rows;
    }

    @Override
    public String description() {
      return "stateshift procedure result";
    }
  }

  /** The arguments, by position in {@link #parameters()}, with nulls where none was given. */
  final class Arguments {
    private final InternalRow input;

    private Arguments(InternalRow input) {
      this.input = input;
    }

    String string(int index) {
      return input.isNullAt(index) ? null : input.getUTF8String(index).toString();
    }

    /** A string the call cannot do without; null or blank is refused as bad input. */
    String required(int index) {
      String value = string(index);
      if (value == null || value.isBlank()) {
        throw new StateShiftException(
            StateShiftException.Reason.INVALID_ARGUMENT,
            parameters[index].name()
                + " is empty: CALL ..."
                + name
                + "("
                + parameters[index].name()
                + " => '...').");
      }
      return value;
    }

    Integer integer(int index) {
      return input.isNullAt(index) ? null : input.getInt(index);
    }

    boolean flag(int index) {
      return !input.isNullAt(index) && input.getBoolean(index);
    }

    /** A map of strings, in its order; empty where none was given. */
    java.util.Map<String, String> map(int index) {
      java.util.Map<String, String> out = new java.util.LinkedHashMap<>();
      if (input.isNullAt(index)) {
        return out;
      }
      org.apache.spark.sql.catalyst.util.MapData map = input.getMap(index);
      for (int i = 0; i < map.numElements(); i++) {
        out.put(
            map.keyArray().getUTF8String(i).toString(),
            map.valueArray().isNullAt(i) ? null : map.valueArray().getUTF8String(i).toString());
      }
      return out;
    }
  }
}
