package io.stateshift.sql;

import io.stateshift.EditPreview;
import io.stateshift.EditState;
import io.stateshift.EvolveState;
import io.stateshift.ReadState;
import io.stateshift.RepartitionResult;
import io.stateshift.StateShift;
import java.util.ArrayList;
import java.util.List;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.connector.catalog.procedures.ProcedureParameter;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.StructType;

/**
 * The procedures on state as data: {@code read_state}, {@code erase_state}, {@code upsert_state},
 * {@code set_state} and {@code evolve_state}. They call the public Java API ({@link ReadState},
 * {@link EditState}, {@link EvolveState}), so their checks and messages are the command line's.
 */
final class StateDataProcedures {
  private StateDataProcedures() {}

  private static final DataType STRING = Procedures.STRING;
  private static final DataType INT = Procedures.INT;
  private static final DataType BOOLEAN = Procedures.BOOLEAN;

  private static ProcedureParameter required(String name, DataType type, String comment) {
    return Procedures.required(name, type, comment);
  }

  private static ProcedureParameter optional(
      String name, DataType type, String defaultValue, String comment) {
    return Procedures.optional(name, type, defaultValue, comment);
  }

  private static final ProcedureParameter CHECKPOINT =
      required("checkpoint", STRING, "the query's checkpointLocation");
  private static final ProcedureParameter OPERATOR =
      optional("operator", INT, "NULL", "the stateful operator's id; NULL: the only one");
  private static final ProcedureParameter DRY_RUN =
      optional("dry_run", BOOLEAN, "false", "only report what would change");
  private static final ProcedureParameter ASSUME_STOPPED =
      optional("assume_stopped", BOOLEAN, "false", "the query is known to be stopped");

  /** One row per store of the edited operator: its entries before and after (null: not run). */
  private static final StructType CHANGE_ROWS =
      new StructType()
          .add("operator_id", DataTypes.LongType, false)
          .add("store_name", STRING, false)
          .add("entries_before", DataTypes.LongType, true)
          .add("entries_after", DataTypes.LongType, true)
          .add("matching", DataTypes.LongType, true)
          .add("batch_id", DataTypes.LongType, true);

  /**
   * {@code read_state(checkpoint, operator, store, where, limit)}: the entries of one store, key
   * and value as JSON (a procedure's columns cannot take each store's types; the Java API's
   * readState and the export command give them typed).
   */
  static final class ReadStateProcedure extends StateShiftProcedure {
    ReadStateProcedure() {
      super(
          "read_state",
          "The entries of one state store at the last committed batch: partition, key and value"
              + " (as JSON).",
          new StructType()
              .add("partition_id", INT, false)
              .add("key", STRING, false)
              .add("value", STRING, true),
          CHECKPOINT,
          OPERATOR,
          optional("store", STRING, "NULL", "the store's name; NULL: the operator's only one"),
          optional("where", STRING, "NULL", "a SQL predicate over partition_id, key and value"),
          optional("limit", INT, "1000", "at most this many entries"));
    }

    @Override
    List<Object[]> run(SparkSession spark, Arguments args) {
      ReadState read = StateShift.get(spark).readState(args.required(0));
      if (args.integer(1) != null) {
        read.operator(args.integer(1));
      }
      if (args.string(2) != null) {
        read.store(args.string(2));
      }
      if (args.string(3) != null) {
        read.where(args.string(3));
      }
      int limit = args.integer(4) == null ? 1000 : args.integer(4);
      List<Object[]> out = new ArrayList<>();
      Dataset<Row> rows = read.load();
      // a store with column families gives its values as JSON text already, and names each
      // entry's variable, family and kind beside its grouping key
      boolean families = rows.schema().getFieldIndex("kind").isDefined();
      for (Row row :
          rows.selectExpr(
                  "partition_id",
                  families
                      ? "to_json(named_struct('variable', variable, 'column_family', column_family,"
                          + " 'kind', kind, 'key', key, 'entry_key', entry_key))"
                      : "to_json(key)",
                  families ? "value" : "to_json(value)")
              .limit(limit)
              .collectAsList()) {
        out.add(new Object[] {row.getInt(0), row.getString(1), row.getString(2)});
      }
      return out;
    }
  }

  /** {@code erase_state(checkpoint, delete_where, operator, dry_run, assume_stopped)}. */
  static final class EraseState extends StateShiftProcedure {
    EraseState() {
      super(
          "erase_state",
          "Deletes the entries of one stateful operator for which delete_where is true"
              + " (dry_run => true: only counts them). One row per store.",
          CHANGE_ROWS,
          CHECKPOINT,
          required("delete_where", STRING, "a SQL predicate over partition_id, key and value"),
          OPERATOR,
          DRY_RUN,
          ASSUME_STOPPED);
    }

    @Override
    List<Object[]> run(SparkSession spark, Arguments args) {
      EditState edit =
          StateShift.get(spark).editState(args.required(0)).deleteWhere(args.required(1));
      if (args.integer(2) != null) {
        edit.operator(args.integer(2));
      }
      return change(edit, args.flag(3), args.flag(4));
    }
  }

  /** {@code upsert_state(checkpoint, source, operator, dry_run, assume_stopped)}. */
  static final class UpsertState extends StateShiftProcedure {
    UpsertState() {
      super(
          "upsert_state",
          "Writes entries (key and value structs) from a table or path into the state of one"
              + " stateful operator, each replacing the entry with the same key. One row per store.",
          CHANGE_ROWS,
          CHECKPOINT,
          required("source", STRING, "a table of the catalog, or a Delta, parquet or JSON path"),
          OPERATOR,
          DRY_RUN,
          ASSUME_STOPPED);
    }

    @Override
    List<Object[]> run(SparkSession spark, Arguments args) {
      EditState edit =
          StateShift.get(spark).editState(args.required(0)).upsertFrom(args.required(1));
      if (args.integer(2) != null) {
        edit.operator(args.integer(2));
      }
      return change(edit, args.flag(3), args.flag(4));
    }
  }

  /** {@code set_state(checkpoint, set, where, operator, dry_run, assume_stopped)}. */
  static final class SetState extends StateShiftProcedure {
    SetState() {
      super(
          "set_state",
          "Rewrites value fields of one stateful operator's state in place (set: field -> SQL"
              + " expression over partition_id, key and the old value) in the entries where is"
              + " true for (dry_run => true: only counts them). One row per store.",
          CHANGE_ROWS,
          CHECKPOINT,
          required(
              "set",
              DataTypes.createMapType(STRING, STRING),
              "value field -> SQL expression, for example map('count', 'value.count * 2')"),
          optional(
              "where",
              STRING,
              "NULL",
              "the entries to rewrite, a SQL predicate over partition_id, key and value; NULL:"
                  + " all"),
          OPERATOR,
          DRY_RUN,
          ASSUME_STOPPED);
    }

    @Override
    List<Object[]> run(SparkSession spark, Arguments args) {
      EditState edit = StateShift.get(spark).editState(args.required(0));
      args.map(1).forEach(edit::set);
      edit.where(args.string(2));
      if (args.integer(3) != null) {
        edit.operator(args.integer(3));
      }
      return change(edit, args.flag(4), args.flag(5));
    }
  }

  /** {@code evolve_state(checkpoint, value_schema, fills, operator, dry_run, assume_stopped)}. */
  static final class EvolveStateProcedure extends StateShiftProcedure {
    EvolveStateProcedure() {
      super(
          "evolve_state",
          "Rewrites the values of one stateful operator's state into value_schema for a changed"
              + " query; new fields from fills (field -> SQL expression). One row per store.",
          CHANGE_ROWS,
          CHECKPOINT,
          required("value_schema", STRING, "the new value, as DDL: 'count BIGINT, sum BIGINT'"),
          optional(
              "fills",
              DataTypes.createMapType(STRING, STRING),
              "NULL",
              "new field -> SQL expression over key and the old value, for example map('sum', '0')"),
          OPERATOR,
          DRY_RUN,
          ASSUME_STOPPED);
    }

    @Override
    List<Object[]> run(SparkSession spark, Arguments args) {
      EvolveState evolve =
          StateShift.get(spark).evolveState(args.required(0)).toValueSchema(args.required(1));
      args.map(2).forEach(evolve::fill);
      if (args.integer(3) != null) {
        evolve.operator(args.integer(3));
      }
      if (args.flag(5)) {
        evolve.assumeStopped();
      }
      if (args.flag(4)) {
        var plan = evolve.plan();
        return List.<Object[]>of(
            new Object[] {-1L, "(all)", null, null, null, plan.lastCommittedBatch()});
      }
      return rows(evolve.execute());
    }
  }

  private static List<Object[]> change(EditState edit, boolean dryRun, boolean assumeStopped) {
    if (assumeStopped) {
      edit.assumeStopped();
    }
    if (dryRun) {
      EditPreview preview = edit.preview();
      List<Object[]> out = new ArrayList<>();
      java.util.Map<String, Long> byStore = new java.util.TreeMap<>();
      preview.matches().forEach(m -> byStore.merge(m.store(), m.rows(), Long::sum));
      for (var operator : preview.plan().operators()) {
        if (operator.id() == preview.operatorId()) {
          for (String store : operator.stores()) {
            out.add(
                new Object[] {
                  preview.operatorId(),
                  store,
                  null,
                  null,
                  preview.set() != null
                      ? Long.valueOf(preview.set().rows())
                      : preview.deleteWhere() == null
                          ? Long.valueOf(preview.upsertRows())
                          : byStore.getOrDefault(store, 0L),
                  null
                });
          }
        }
      }
      return out;
    }
    return rows(edit.execute());
  }

  private static List<Object[]> rows(RepartitionResult result) {
    List<Object[]> out = new ArrayList<>();
    for (RepartitionResult.StoreMove m : result.stores()) {
      out.add(
          new Object[] {
            m.operatorId(), m.storeName(), m.rowsRead(), m.rowsWritten(), null, result.batchId()
          });
    }
    return out;
  }
}
