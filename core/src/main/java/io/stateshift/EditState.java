package io.stateshift;

import io.stateshift.StateShiftException.Reason;
import io.stateshift.protocol.RepartitionRunner;
import io.stateshift.protocol.StateEdit;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.SparkSession;

/**
 * An edit of the saved state of a stopped query: {@code
 * StateShift.get(spark).editState(cp).operator(0).deleteWhere("key.user = 'u42'").execute()}
 * deletes the entries of one stateful operator for which a SQL predicate over {@code partition_id},
 * {@code key} and {@code value} is true: an erasure of keys, or a purge of state no watermark
 * evicts. A join's predicate names key fields only, and its four stores lose the same keys. It runs
 * under the same protocol as a repartition (journal, lock, rollback, verify, history); the history
 * records the predicate and the counts, never a deleted value. {@link #preview()} counts what would
 * go and writes nothing.
 *
 * <p>{@code .set("count", "value.count * 2").where("key.user = 'u42'")} rewrites value fields in
 * place instead: each named field becomes its SQL expression over {@code partition_id}, {@code key}
 * and the old {@code value}, for the entries the predicate selects (all without one). The value
 * keeps its recorded type: an expression of a type that widens safely is cast to it, any other is
 * refused before anything is written. The history records the expressions and the counts.
 */
public final class EditState extends StateChange<EditState> {
  private Long operatorId;
  private String deleteWhere;
  private String upsertSource;
  private Dataset<Row> upsertRows;
  private final Map<String, String> sets = new LinkedHashMap<>();
  private String setWhere;

  EditState(SparkSession spark, String checkpointLocation) {
    super(spark, checkpointLocation);
  }

  @Override
  EditState self() {
    return this;
  }

  /**
   * The stateful operator to edit (its id, the folder under {@code state/}); default: the only one.
   */
  public EditState operator(long id) {
    this.operatorId = id;
    return this;
  }

  /** Deletes the entries for which this SQL predicate is true. */
  public EditState deleteWhere(String predicate) {
    this.deleteWhere = predicate;
    return this;
  }

  /**
   * Rewrites the value field {@code column} ({@code count}, or {@code value.count} as {@link
   * ReadState} shows it) into {@code expression}, a SQL expression over {@code partition_id},
   * {@code key} and the old {@code value}, in every entry {@link #where} selects; repeatable.
   */
  public EditState set(String column, String expression) {
    sets.put(column.strip(), expression);
    return this;
  }

  /** The entries {@link #set} rewrites: those for which this SQL predicate is true. */
  public EditState where(String predicate) {
    this.setWhere = predicate == null || predicate.isBlank() ? null : predicate;
    return this;
  }

  /**
   * Writes these entries into the state, each replacing the entry with the same key: a {@code key}
   * and a {@code value} struct whose fields are the store's (as {@link ReadState} shows them), by
   * name, with types that widen safely. This seeds a new query: start it once, stop it, upsert,
   * restart. Checked against the recorded schema before anything is written.
   */
  public EditState upsertFrom(Dataset<Row> rows) {
    this.upsertRows = rows;
    this.upsertSource = null;
    return this;
  }

  /**
   * The same, from a table of the session's catalog or a path (a Delta table, parquet or JSON
   * files).
   */
  public EditState upsertFrom(String tableOrPath) {
    this.upsertRows = Tables.read(spark, tableOrPath);
    this.upsertSource = tableOrPath;
    return this;
  }

  @Override
  RepartitionRunner newRunner() {
    boolean deletes = deleteWhere != null && !deleteWhere.isBlank();
    if (!deletes && upsertRows == null && sets.isEmpty()) {
      throw new StateShiftException(
          Reason.INVALID_ARGUMENT,
          "Nothing to edit: call deleteWhere(\"<predicate over key and value>\"),"
              + " upsertFrom(<rows>) or set(\"<value field>\", \"<expression>\") first.");
    }
    if (setWhere != null && sets.isEmpty()) {
      throw new StateShiftException(
          Reason.INVALID_ARGUMENT,
          "--where selects the entries --set rewrites (where(...) those set(...) does): give"
              + " --set \"<value field> = <expression>\" too, or --delete-where to delete.");
    }
    if (!sets.isEmpty() && (deletes || upsertRows != null)) {
      throw new StateShiftException(
          Reason.INVALID_ARGUMENT,
          "--set rewrites values in place and is an edit of its own: run --delete-where or"
              + " --upsert-from as another edit. The checkpoint was not changed.");
    }
    RepartitionRunner runner =
        new RepartitionRunner(
                spark, checkpointLocation, partitions == null ? 0 : partitions, progress)
            .edit(
                new StateEdit(
                        operatorId,
                        deleteWhere == null || deleteWhere.isBlank() ? null : deleteWhere,
                        upsertSource,
                        upsertRows)
                    .withSets(sets, setWhere));
    return partitions == null ? runner.keepPartitionCount() : runner;
  }

  /**
   * What the edit would delete, counted per store and partition, with a few of the keys, read at
   * the last committed batch; writes nothing.
   */
  public EditPreview preview() {
    RepartitionRunner runner = newRunner();
    RepartitionPlan plan = runner.plan();
    long operator = runner.editedOperator();
    List<EditPreview.Matches> matches = new ArrayList<>();
    List<String> sample = new ArrayList<>();
    for (RepartitionPlan.OperatorInfo info : plan.operators()) {
      if (info.id() != operator) {
        continue;
      }
      for (String store : info.stores()) {
        if (deleteWhere == null || deleteWhere.isBlank()) {
          break;
        }
        Dataset<Row> matching =
            new ReadState(spark, checkpointLocation)
                .operator(operator)
                .store(store)
                .where(deleteWhere)
                .load()
                .cache();
        try {
          for (Row row : matching.groupBy("partition_id").count().collectAsList()) {
            matches.add(new EditPreview.Matches(store, row.getInt(0), row.getLong(1)));
          }
          if (sample.isEmpty()) {
            // distinct: a key of state in column families has entries in several of them
            sample.addAll(matching.select("key").distinct().limit(5).toJSON().collectAsList());
          }
        } finally {
          matching.unpersist();
        }
      }
    }
    matches.sort(
        java.util.Comparator.comparing(EditPreview.Matches::store)
            .thenComparingInt(EditPreview.Matches::partition));
    long upserted = -1;
    long replacing = -1;
    if (upsertRows != null) {
      Dataset<Row> keys = upsertRows.select("key");
      upserted = keys.count();
      replacing =
          new ReadState(spark, checkpointLocation)
              .operator(operator)
              .load()
              .select("key")
              .intersect(keys)
              .count();
    }
    long rewritten = -1;
    if (!sets.isEmpty()) {
      Dataset<Row> entries = new ReadState(spark, checkpointLocation).operator(operator).load();
      rewritten = (setWhere == null ? entries : entries.where(setWhere)).count();
    }
    return new EditPreview(
        plan,
        operator,
        deleteWhere,
        matches,
        sample,
        upserted,
        replacing,
        sets.isEmpty()
            ? null
            : new EditPreview.Set(
                java.util.Collections.unmodifiableMap(new LinkedHashMap<>(sets)),
                setWhere,
                rewritten));
  }
}
