package io.stateshift.spark.state;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.catalyst.expressions.Attribute;
import org.apache.spark.sql.catalyst.expressions.AttributeReference;
import org.apache.spark.sql.catalyst.expressions.Expression;
import org.apache.spark.sql.catalyst.expressions.NamedExpression;
import org.apache.spark.sql.catalyst.expressions.aggregate.AggregateExpression;
import org.apache.spark.sql.catalyst.plans.logical.Aggregate;
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan;
import org.apache.spark.sql.types.Metadata;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;

/**
 * The state schema a streaming aggregation that has not run will record, read from its analyzed
 * plan as Spark's planner derives it: the key is the grouping attributes, the value (state format
 * 2) the aggregation buffers of its distinct aggregate functions, in order.
 */
final class QueryStateSchema {
  private QueryStateSchema() {}

  static Optional<StructType[]> ofAggregation(Dataset<?> query) {
    if (!query.isStreaming()) {
      return Optional.empty();
    }
    LogicalPlan analyzed = Plans.queryExecution(query).analyzed();
    List<Aggregate> aggregates = new ArrayList<>();
    collect(analyzed, aggregates);
    if (aggregates.size() != 1) {
      return Optional.empty();
    }
    Aggregate aggregate = aggregates.get(0);
    List<StructField> keys = new ArrayList<>();
    for (Expression e : ScalaBridge.javaList(aggregate.groupingExpressions())) {
      if (!(e instanceof NamedExpression named)) {
        return Optional.empty(); // grouped by an expression the planner aliases itself
      }
      Attribute a = named.toAttribute();
      keys.add(new StructField(a.name(), a.dataType(), a.nullable(), Metadata.empty()));
    }
    // one buffer per distinct aggregate, as the planner keeps them (by canonical form)
    Map<Expression, AggregateExpression> functions = new LinkedHashMap<>();
    for (NamedExpression e : ScalaBridge.javaList(aggregate.aggregateExpressions())) {
      aggregateFunctions((Expression) e, functions);
    }
    List<StructField> values = new ArrayList<>();
    for (AggregateExpression function : functions.values()) {
      if (function.isDistinct()) {
        return Optional.empty(); // a distinct aggregate is planned in two stages
      }
      for (AttributeReference buffer :
          ScalaBridge.javaList(function.aggregateFunction().aggBufferAttributes())) {
        values.add(
            new StructField(buffer.name(), buffer.dataType(), buffer.nullable(), Metadata.empty()));
      }
    }
    return Optional.of(
        new StructType[] {
          new StructType(keys.toArray(StructField[]::new)),
          new StructType(values.toArray(StructField[]::new))
        });
  }

  private static void collect(LogicalPlan plan, List<Aggregate> out) {
    if (plan instanceof Aggregate aggregate && plan.isStreaming()) {
      out.add(aggregate);
    }
    for (LogicalPlan child : ScalaBridge.javaList(plan.children())) {
      collect(child, out);
    }
  }

  private static void aggregateFunctions(Expression e, Map<Expression, AggregateExpression> out) {
    if (e instanceof AggregateExpression function) {
      out.putIfAbsent(function.canonicalized(), function);
      return;
    }
    for (Expression child : ScalaBridge.javaList(e.children())) {
      aggregateFunctions(child, out);
    }
  }
}
