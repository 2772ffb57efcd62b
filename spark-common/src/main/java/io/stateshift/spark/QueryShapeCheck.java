package io.stateshift.spark;

import io.stateshift.StateShiftException;
import io.stateshift.StateShiftException.Reason;
import io.stateshift.checkpoint.StateLayout;
import io.stateshift.checkpoint.StoreSpec;
import io.stateshift.spark.state.ScalaBridge;
import java.util.ArrayList;
import java.util.List;
import org.apache.spark.sql.catalyst.expressions.Expression;
import org.apache.spark.sql.catalyst.expressions.NamedExpression;
import org.apache.spark.sql.catalyst.plans.logical.Aggregate;
import org.apache.spark.sql.catalyst.plans.logical.Deduplicate;
import org.apache.spark.sql.catalyst.plans.logical.DeduplicateWithinWatermark;
import org.apache.spark.sql.catalyst.plans.logical.FlatMapGroupsWithState;
import org.apache.spark.sql.catalyst.plans.logical.Join;
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan;
import org.apache.spark.sql.types.StructField;
import scala.runtime.BoxedUnit;

/**
 * Before state moves at query start: the starting query must have the stateful operators, and the
 * state key types, the checkpoint holds. A changed query is refused rather than repartitioned
 * (Spark would refuse its state schema only at the first batch, after the move).
 */
final class QueryShapeCheck {
  private QueryShapeCheck() {}

  static void refuseIfChanged(LogicalPlan plan, StateLayout layout) {
    List<String> query = new ArrayList<>();
    boolean[] unknown = {false};
    plan.foreach(
        (scala.Function1<LogicalPlan, BoxedUnit>)
            node -> {
              if (node instanceof Aggregate a && a.isStreaming()) {
                List<Expression> grouping = ScalaBridge.javaList(a.groupingExpressions());
                query.add(
                    grouping.stream().anyMatch(QueryShapeCheck::isSessionWindow)
                        ? StateLayout
                            .SESSION_WINDOW // its key adds the session window to the grouping keys
                        : "stateStoreSave" + types(grouping));
              } else if (node instanceof Deduplicate d && d.isStreaming()) {
                query.add("dedupe" + types(ScalaBridge.javaList(d.keys())));
              } else if (node instanceof DeduplicateWithinWatermark d && d.isStreaming()) {
                query.add("dedupeWithinWatermark" + types(ScalaBridge.javaList(d.keys())));
              } else if (node instanceof FlatMapGroupsWithState f && f.isStreaming()) {
                query.add(
                    StateLayout.FLAT_MAP_GROUPS_WITH_STATE
                        + types(ScalaBridge.javaList(f.groupingAttributes())));
              } else if (node instanceof Join j
                  && j.left().isStreaming()
                  && j.right().isStreaming()) {
                query.add(
                    StateLayout.JOIN); // its keys come from the join condition, checked by Spark
              } else if (node.isStreaming()
                  && node.getClass().getSimpleName().equals("TransformWithState")) {
                // its state variables and their schemas are checked by Spark's state schema check
                query.add(StateLayout.TRANSFORM_WITH_STATE);
              } else if (node.isStreaming() && isOtherStateful(node)) {
                unknown[0] = true;
              }
              return BoxedUnit.UNIT;
            });
    if (unknown[0]) {
      return; // operators this version does not repartition are refused by the layout check
    }
    List<String> checkpoint = new ArrayList<>();
    long lastOperator = -1;
    for (StoreSpec store : layout.stores()) {
      if (store.operatorId() == lastOperator) {
        continue; // one entry per operator: a join has four stores
      }
      lastOperator = store.operatorId();
      if (store.operatorName().equals(StateLayout.SESSION_WINDOW)
          || store.operatorName().equals(StateLayout.JOIN)
          || store.operatorName().equals(StateLayout.TRANSFORM_WITH_STATE)) {
        checkpoint.add(store.operatorName());
        continue;
      }
      List<String> keyTypes = new ArrayList<>();
      for (StructField field : store.keySchema().fields()) {
        keyTypes.add(field.dataType().catalogString());
      }
      checkpoint.add(store.operatorName() + keyTypes);
    }
    List<String> sortedQuery = query.stream().sorted().toList();
    List<String> sortedCheckpoint = checkpoint.stream().sorted().toList();
    if (!sortedQuery.equals(sortedCheckpoint)) {
      throw new StateShiftException(
          Reason.QUERY_CHANGED,
          "The query's stateful operators and state keys "
              + sortedQuery
              + " differ from those "
              + "in checkpoint "
              + layout.checkpoint().files().root()
              + " "
              + sortedCheckpoint
              + ". State is only repartitioned for the same query: restart the query unchanged "
              + "(or unset spark.sql.streaming.stateStore.partitions), or start the changed "
              + "query on a new checkpoint.");
    }
  }

  private static boolean isSessionWindow(Expression e) {
    return e instanceof NamedExpression n && n.metadata().contains(SESSION_WINDOW_MARKER);
  }

  /** SessionWindow.marker: the analyzer tags the session window column with it. */
  private static final String SESSION_WINDOW_MARKER = "spark.sessionWindow";

  private static boolean isOtherStateful(LogicalPlan node) {
    String name = node.getClass().getSimpleName();
    return name.startsWith("FlatMapGroups")
        || name.startsWith("TransformWithState")
        || name.equals("GlobalLimit")
        || name.startsWith("FlatMapCoGroups");
  }

  private static List<String> types(List<? extends Expression> expressions) {
    List<String> out = new ArrayList<>();
    for (Expression e : expressions) {
      out.add(e.dataType().catalogString());
    }
    return out;
  }
}
