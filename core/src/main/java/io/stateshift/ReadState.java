package io.stateshift;

import io.stateshift.StateShiftException.Reason;
import io.stateshift.checkpoint.Checkpoint;
import io.stateshift.checkpoint.CheckpointFiles;
import io.stateshift.checkpoint.SessionSettings;
import io.stateshift.checkpoint.StateLayout;
import io.stateshift.checkpoint.StatefulOperator;
import io.stateshift.checkpoint.StoreSpec;
import io.stateshift.checkpoint.spi.SparkLines;
import io.stateshift.protocol.RepartitionJournal;
import java.util.List;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.SparkSession;

/**
 * The saved state of a stopped query as data, read-only: {@code
 * StateShift.get(spark).readState(cp).operator(0).load()} gives one row per entry of one store at
 * the last committed batch, with the columns {@code partition_id}, {@code key} and {@code value}
 * (structs of the store's recorded schemas), as Spark's state data source names them. Works on
 * every Spark line, for both state stores, in both state checkpoint formats.
 */
public final class ReadState {
  private final SparkSession spark;
  private final String checkpointLocation;
  private Long operatorId;
  private String storeName;
  private String where;
  private String columnFamily;

  ReadState(SparkSession spark, String checkpointLocation) {
    if (checkpointLocation == null || checkpointLocation.isBlank()) {
      throw new StateShiftException(
          Reason.INVALID_ARGUMENT,
          "checkpointLocation is empty: pass the checkpointLocation of the stopped query.");
    }
    this.spark = spark;
    this.checkpointLocation = checkpointLocation;
  }

  /**
   * The stateful operator to read (its id, the folder under {@code state/}); default: the only one.
   */
  public ReadState operator(long id) {
    this.operatorId = id;
    return this;
  }

  /** The store to read (a join has four); default: the operator's only one. */
  public ReadState store(String name) {
    this.storeName = name;
    return this;
  }

  /**
   * One column family of a store that keeps several (a transformWithState variable, its TTL index,
   * the timers; one of a join's stores in state format 3), read with its key and value typed;
   * default: every family, key and value as JSON text.
   */
  public ReadState columnFamily(String name) {
    this.columnFamily = name;
    return this;
  }

  /** Keeps the entries for which this SQL predicate over the columns is true. */
  public ReadState where(String predicate) {
    this.where = predicate;
    return this;
  }

  /** The entries, as a Dataset read by one Spark task per state partition. */
  public Dataset<Row> load() {
    Selection selection = select();
    boolean filtered = where != null && !where.isBlank();
    if (filtered && columnFamily == null) {
      SparkLines.get().checkStatePredicate(spark, selection.store(), where, false);
    }
    Dataset<Row> rows =
        SparkLines.get().readState(spark, selection.layout(), selection.store(), columnFamily);
    if (!filtered) {
      return rows;
    }
    try {
      return rows.where(where);
    } catch (RuntimeException e) { // one family's typed columns: Spark's analysis names them
      throw new StateShiftException(
          Reason.INVALID_ARGUMENT,
          "The predicate \""
              + where
              + "\" does not apply to column family "
              + columnFamily
              + ": "
              + e.getMessage().strip().lines().findFirst().orElse("")
              + " Its columns: "
              + rows.schema().simpleString());
    }
  }

  /** The layout and the store this read names, checked. */
  Selection select() {
    CheckpointFiles files =
        CheckpointFiles.at(checkpointLocation, SessionSettings.hadoopConf(spark));
    Checkpoint checkpoint = Checkpoint.load(files);
    RepartitionJournal.read(files)
        .ifPresent(
            j -> {
              throw new StateShiftException(
                  Reason.INTERRUPTED_REPARTITION,
                  "An interrupted "
                      + j.kind()
                      + " of "
                      + files.root()
                      + " is pending; run "
                      + j.finishingCommand(files.root().toString())
                      + " first, then read the state.");
            });
    StateLayout layout = StateLayout.read(spark, checkpoint, false);
    List<StatefulOperator> operators = layout.operators();
    String ids = operators.stream().map(op -> op.id() + " (" + op.name() + ")").toList().toString();
    if (operators.isEmpty()) {
      throw new StateShiftException(
          Reason.STATELESS_QUERY,
          "The query at " + files.root() + " keeps no state: there is nothing to read.");
    }
    long operator;
    if (operatorId == null) {
      if (operators.size() != 1) {
        throw new StateShiftException(
            Reason.INVALID_ARGUMENT,
            "The query has "
                + operators.size()
                + " stateful operators "
                + ids
                + ": name one with --operator <id> (operator(id) in the API).");
      }
      operator = operators.get(0).id();
    } else {
      operator = operatorId;
      if (operators.stream().noneMatch(op -> op.id() == operator)) {
        throw new StateShiftException(
            Reason.INVALID_ARGUMENT,
            "The checkpoint has no stateful operator "
                + operator
                + "; its operators: "
                + ids
                + ".");
      }
    }
    List<StoreSpec> stores =
        layout.stores().stream().filter(s -> s.operatorId() == operator).toList();
    List<String> names = stores.stream().map(StoreSpec::storeName).toList();
    if (storeName == null && stores.size() != 1) {
      throw new StateShiftException(
          Reason.INVALID_ARGUMENT,
          "Operator "
              + operator
              + " has "
              + stores.size()
              + " stores "
              + names
              + ": name one with --store <name> (store(name) in the API).");
    }
    StoreSpec store =
        stores.stream()
            .filter(s -> storeName == null || s.storeName().equals(storeName))
            .findFirst()
            .orElseThrow(
                () ->
                    new StateShiftException(
                        Reason.INVALID_ARGUMENT,
                        "Operator "
                            + operator
                            + " has no store '"
                            + storeName
                            + "'; its stores: "
                            + names
                            + "."));
    return new Selection(layout, store);
  }

  /** A checked choice of one store of a checkpoint's layout. */
  record Selection(StateLayout layout, StoreSpec store) {}
}
