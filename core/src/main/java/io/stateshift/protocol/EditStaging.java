package io.stateshift.protocol;

import io.stateshift.checkpoint.CheckpointFiles;
import io.stateshift.checkpoint.StateLayout;
import io.stateshift.checkpoint.StateSchemaFile;
import io.stateshift.checkpoint.StoreSpec;
import io.stateshift.checkpoint.spi.Redistribution;
import io.stateshift.checkpoint.spi.SparkLines;
import java.util.LinkedHashMap;
import java.util.Map;
import org.apache.hadoop.fs.Path;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.SparkSession;

/**
 * Hands an edit to the staging job: the predicate of the entries it deletes and the rows it
 * upserts, per store of the edited operator, and the rewrite of each value (an evolution into a new
 * value schema, or a set within the recorded one).
 */
final class EditStaging {
  private EditStaging() {}

  /**
   * What an edit handed to the job leaves for after it: the store whose value schema it evolved
   * (null if none), and the entries a set rewrites (-1 where it is not a set with a predicate).
   */
  record Applied(StoreSpec evolved, long rewritten) {
    /** Stages Spark's state schema file naming the evolved value: a restart checks against it. */
    void writeSchemaFile(CheckpointFiles files, Path stagedDir, StateEdit edit) {
      if (evolved != null) {
        StateSchemaFile.writeV2(
            files,
            new Path(stagedDir, StateSchemaFile.path(evolved.operatorId(), evolved.storeName())),
            evolved.keySchema(),
            edit.valueSchema());
      }
    }
  }

  static Applied apply(
      SparkSession spark, StateEdit edit, long operator, StateLayout layout, Redistribution job) {
    Map<Integer, String> predicates = new LinkedHashMap<>();
    Map<Integer, Dataset<Row>> upserts = new LinkedHashMap<>();
    StoreSpec first = null;
    for (StoreSpec store : layout.stores()) {
      if (store.operatorId() == operator) {
        first = first == null ? store : first;
        if (edit.deleteWhere() != null) {
          predicates.put(store.slot(), edit.deleteWhere());
        }
        if (edit.upsertRows() != null) {
          upserts.put(store.slot(), edit.upsertRows());
        }
      }
    }
    if (!predicates.isEmpty()) {
      job.deleteWhere(spark, predicates);
    }
    if (!upserts.isEmpty()) {
      job.upsert(spark, upserts);
    }
    // an evolution and a set rewrite the values of an operator with one store (checked before)
    StoreSpec evolved = null;
    if (edit.evolves()) {
      evolved = first;
      job.evolveValues(spark, Map.of(first.slot(), edit.valueSchema()), edit.fills());
    }
    long rewritten = -1;
    if (edit.rewritesValues()) {
      job.evolveValues(
          spark,
          Map.of(first.slot(), first.valueSchema()),
          StateEdit.setFills(first.valueSchema(), edit.sets(), edit.setWhere()));
      if (edit.setWhere() != null) {
        // the entries the set rewrites, for the history (without --where: every entry read)
        rewritten =
            SparkLines.get().readState(spark, layout, first, null).where(edit.setWhere()).count();
      }
    }
    return new Applied(evolved, rewritten);
  }
}
