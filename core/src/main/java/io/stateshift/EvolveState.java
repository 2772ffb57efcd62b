package io.stateshift;

import io.stateshift.StateShiftException.Reason;
import io.stateshift.checkpoint.spi.SparkLines;
import io.stateshift.protocol.RepartitionRunner;
import io.stateshift.protocol.StateEdit;
import java.util.LinkedHashMap;
import java.util.Map;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.types.StructType;

/**
 * An evolution of the saved state of a stopped query for a changed query, such as an aggregation
 * that gains or loses an aggregate: {@code
 * StateShift.get(spark).evolveState(cp).toQuery(newQuery).fill("sum", "0").execute()}. Every value
 * is rewritten into the new query's value schema: old fields carried by name (types widen where
 * safe), new ones filled by SQL expressions over {@code key} and the old {@code value} (by default
 * null, or zero for a number that cannot be null), dropped ones gone; Spark's state schema file is
 * rewritten so the changed query starts on the same checkpoint and continues. A change of the key
 * is refused. It runs under the same protocol as a repartition (journal, lock, rollback, verify,
 * history).
 */
public final class EvolveState extends StateChange<EvolveState> {
  private Long operatorId;
  private StructType keySchema;
  private StructType valueSchema;
  private final Map<String, String> fills = new LinkedHashMap<>();

  EvolveState(SparkSession spark, String checkpointLocation) {
    super(spark, checkpointLocation);
  }

  @Override
  EvolveState self() {
    return this;
  }

  /** The stateful operator to evolve (its id); default: the only one. */
  public EvolveState operator(long id) {
    this.operatorId = id;
    return this;
  }

  /**
   * The changed query, a streaming Dataset with one aggregation, not started: its state's key and
   * value schema are taken from Spark's plan of it.
   */
  public EvolveState toQuery(Dataset<?> newQuery) {
    StructType[] schemas =
        SparkLines.get()
            .aggregationStateSchema(newQuery)
            .orElseThrow(
                () ->
                    new StateShiftException(
                        Reason.INVALID_ARGUMENT,
                        "toQuery takes a streaming query with one aggregation; for other"
                            + " operators give the new value schema with toValueSchema."));
    this.keySchema = schemas[0];
    this.valueSchema = schemas[1];
    return this;
  }

  /** The new value schema of the state, as {@code stateshift state} shows values. */
  public EvolveState toValueSchema(StructType schema) {
    this.valueSchema = schema;
    return this;
  }

  /** The same, as a DDL string: {@code "count BIGINT, sum BIGINT"}. */
  public EvolveState toValueSchema(String ddl) {
    try {
      return toValueSchema(StructType.fromDDL(ddl));
    } catch (RuntimeException e) {
      throw new StateShiftException(
          Reason.INVALID_ARGUMENT,
          "The value schema \"" + ddl + "\" is not a DDL field list such as \"count BIGINT\".");
    }
  }

  /** Fills a new value field with a SQL expression over {@code key} and the old {@code value}. */
  public EvolveState fill(String column, String expression) {
    fills.put(column, expression);
    return this;
  }

  @Override
  RepartitionRunner newRunner() {
    if (valueSchema == null) {
      throw new StateShiftException(
          Reason.INVALID_ARGUMENT,
          "Nothing to evolve to: call toQuery(newQuery) or toValueSchema(schema) first.");
    }
    RepartitionRunner runner =
        new RepartitionRunner(
                spark, checkpointLocation, partitions == null ? 0 : partitions, progress)
            .edit(StateEdit.evolution(operatorId, keySchema, valueSchema, fills));
    return partitions == null ? runner.keepPartitionCount() : runner;
  }
}
