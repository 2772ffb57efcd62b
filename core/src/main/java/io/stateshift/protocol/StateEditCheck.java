package io.stateshift.protocol;

import io.stateshift.StateShiftException;
import io.stateshift.StateShiftException.Reason;
import io.stateshift.checkpoint.CheckpointFiles;
import io.stateshift.checkpoint.StateLayout;
import io.stateshift.checkpoint.StateSchemaFile;
import io.stateshift.checkpoint.StatefulOperator;
import io.stateshift.checkpoint.StoreSpec;
import io.stateshift.checkpoint.spi.SparkLines;
import java.util.List;
import org.apache.hadoop.fs.Path;
import org.apache.spark.sql.SparkSession;

/**
 * The checks of an edit or an evolution before anything is written ({@link StateEdit}): which
 * operator, whether stateshift can change its stores that way, and whether the predicate, the
 * upserted rows or the new value apply to their recorded schemas.
 */
final class StateEditCheck {
  private StateEditCheck() {}

  /**
   * The operator an edit applies to, checked: it exists (the only stateful one where none was
   * named), keeps its state in stores stateshift reads entry by entry, and the predicate applies to
   * each of its stores (to a join's keys only, so its four stores lose the same keys).
   */
  static long operator(
      SparkSession spark, CheckpointFiles files, StateLayout layout, StateEdit edit) {
    List<StatefulOperator> operators = layout.operators();
    String ids = operators.stream().map(op -> op.id() + " (" + op.name() + ")").toList().toString();
    StatefulOperator operator;
    if (edit.operatorId() == null) {
      if (operators.size() != 1) {
        throw new StateShiftException(
            Reason.INVALID_ARGUMENT,
            "The query has "
                + operators.size()
                + " stateful operators "
                + ids
                + ": name the one to edit with --operator <id> (operator(id) in the API).");
      }
      operator = operators.get(0);
    } else {
      operator =
          operators.stream()
              .filter(op -> op.id() == edit.operatorId())
              .findFirst()
              .orElseThrow(
                  () ->
                      new StateShiftException(
                          Reason.INVALID_ARGUMENT,
                          "The checkpoint has no stateful operator "
                              + edit.operatorId()
                              + "; its operators: "
                              + ids
                              + "."));
    }
    for (StoreSpec store : layout.stores()) {
      if (store.operatorId() != operator.id()) {
        continue;
      }
      if (store.hasColumnFamilies()
          && (edit.evolves() || edit.rewritesValues() || edit.upsertRows() != null)) {
        throw new StateShiftException(
            Reason.UNSUPPORTED_OPERATOR,
            "Operator "
                + operator.id()
                + " ("
                + operator.name()
                + ") keeps its state in column families (transformWithState, or a join in state"
                + " format 3): its keys can be erased (--delete-where over partition_id and key,"
                + " the grouping key), but not "
                + (edit.evolves() ? "evolved" : edit.rewritesValues() ? "set" : "upserted")
                + ". The checkpoint was not changed.");
      }
      if (edit.deleteWhere() != null) {
        SparkLines.get()
            .checkStatePredicate(
                spark,
                store,
                edit.deleteWhere(),
                operator.name().equals(StateLayout.JOIN) || store.hasColumnFamilies());
      }
      if (edit.evolves()) {
        checkEvolution(spark, files, edit, operator, store);
      }
      if (edit.rewritesValues()) {
        requireOneStore(
            operator, "and stateshift sets the values only of an operator with one store");
        SparkLines.get().checkValueSet(spark, store, edit.sets(), edit.setWhere());
      }
      if (edit.upsertRows() != null) {
        requireOneStore(
            operator, "and stateshift upserts entries only into an operator with one store");
        SparkLines.get().checkUpsert(spark, store, edit.upsertRows());
      }
    }
    return operator.id();
  }

  /**
   * Refuses an operator whose state is several stores whose entries depend on each other (a join),
   * for a change that writes values into one store.
   */
  private static void requireOneStore(StatefulOperator operator, String why) {
    if (operator.stores().size() != 1) {
      throw new StateShiftException(
          Reason.UNSUPPORTED_OPERATOR,
          "Operator "
              + operator.id()
              + " ("
              + operator.name()
              + ") keeps its state in "
              + operator.stores().size()
              + " stores whose entries depend on each other (a join's rows and their counts), "
              + why
              + " (aggregations, deduplication, flatMapGroupsWithState). The checkpoint was not"
              + " changed.");
    }
  }

  /**
   * Checks an evolution of an operator's one store: the new query's key is the state's (a key
   * change is refused: it moves entries between keys), Spark's schema file is one stateshift
   * rewrites (format version 2), and every new value field is carried or filled.
   */
  private static void checkEvolution(
      SparkSession spark,
      CheckpointFiles files,
      StateEdit edit,
      StatefulOperator operator,
      StoreSpec store) {
    requireOneStore(
        operator, "and stateshift evolves the values only of an operator with one store");
    if (edit.keySchema() != null && !sameFields(edit.keySchema(), store.keySchema())) {
      throw new StateShiftException(
          Reason.QUERY_CHANGED,
          "The new query's state key is "
              + edit.keySchema().toDDL()
              + ", the state's is "
              + store.keySchema().toDDL()
              + ": a key change moves entries between keys, which stateshift does not do."
              + " Keep the grouping key (a change of the partition count is a repartition)."
              + " The checkpoint was not changed.");
    }
    if (sameFields(edit.valueSchema(), store.valueSchema()) && edit.fills().isEmpty()) {
      throw new StateShiftException(
          Reason.INVALID_ARGUMENT,
          "The state of operator "
              + operator.id()
              + " already has the value "
              + store.valueSchema().toDDL()
              + ": nothing to evolve.");
    }
    Path schemaFile = files.path(StateSchemaFile.path(operator.id(), store.storeName()));
    int version = StateSchemaFile.version(files, schemaFile);
    if (version != 2) {
      throw new StateShiftException(
          Reason.UNSUPPORTED_CHECKPOINT,
          "The state schema file "
              + files.relativize(schemaFile)
              + " is "
              + (version < 0 ? "missing or unreadable" : "in format v" + version)
              + "; stateshift evolves state whose schema Spark records in format v2. The"
              + " checkpoint was not changed.");
    }
    SparkLines.get().checkValueEvolution(spark, store, edit.valueSchema(), edit.fills());
  }

  /** Whether two schemas have the same fields, by name and type, nullability aside. */
  private static boolean sameFields(
      org.apache.spark.sql.types.StructType a, org.apache.spark.sql.types.StructType b) {
    if (a.size() != b.size()) {
      return false;
    }
    for (int i = 0; i < a.size(); i++) {
      if (!a.fields()[i].name().equals(b.fields()[i].name())
          || !a.fields()[i].dataType().sameType(b.fields()[i].dataType())) {
        return false;
      }
    }
    return true;
  }
}
