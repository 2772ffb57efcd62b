package io.stateshift.checkpoint.spi;

import io.stateshift.checkpoint.PlacementCheck;
import java.io.Serializable;
import java.util.List;
import java.util.Map;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.types.StructType;

/** The Spark job that writes a layout's state into the new partition count. */
public interface Redistribution {

  /**
   * Spark local property a job may set to name its stage in the progress lines ("reading state
   * partitions"); without it the first of a job's stages is the reading one.
   */
  String PROGRESS_LABEL = "stateshift.progress.label";

  /**
   * Counts of one partition of one store, read or written; for a written one under state checkpoint
   * format v2, the unique id of the version it committed (else null).
   */
  record PartitionCount(int slot, int partition, long rows, long bytes, String checkpointId)
      implements Serializable {}

  /**
   * What the job moved, per store partition on each side, and what the placement check could not
   * verify ({@link PlacementCheck.Mode#SUBSET_ALLOWED}), one line per store partition.
   */
  record Outcome(
      List<PartitionCount> read, List<PartitionCount> written, List<String> unverifiedPlacement) {}

  /** How each store slot's keys are checked against the partition the old count gives them. */
  Redistribution checkPlacement(Map<Integer, PlacementCheck.Mode> modes);

  /**
   * Makes the job an edit: per store slot, the entries for which a SQL predicate over {@code
   * partition_id}, {@code key} and {@code value} is true are not written. Checked by {@link
   * io.stateshift.checkpoint.spi.SparkLine#checkStatePredicate} first.
   */
  default Redistribution deleteWhere(SparkSession spark, Map<Integer, String> predicates) {
    throw new UnsupportedOperationException("this job cannot leave entries out");
  }

  /**
   * Makes the job write, per store slot, these entries (a {@code key} and a {@code value} struct of
   * the store's schema) too, each replacing the store's entry with the same key.
   */
  default Redistribution upsert(SparkSession spark, Map<Integer, Dataset<Row>> rows) {
    throw new UnsupportedOperationException("this job cannot add entries");
  }

  /**
   * Makes the job rewrite, per store slot, every value into a new schema: fields carried by name,
   * new ones from {@code fills} (SQL expressions over {@code key} and the old {@code value}).
   */
  default Redistribution evolveValues(
      SparkSession spark, Map<Integer, StructType> valueSchemas, Map<String, String> fills) {
    throw new UnsupportedOperationException("this job cannot rewrite values");
  }

  /** After {@link #run} of an upsert: the entries it added, per store slot (partition -1). */
  default List<PartitionCount> added() {
    return List.of();
  }

  /** After {@link #run} of an edit: the entries left out, per store partition read. */
  default List<PartitionCount> deleted() {
    return List.of();
  }

  /** The write path the job takes, as progress output names it. */
  String writeStrategy(SparkSession spark);

  /** Runs the job: every new partition of every store staged, none published. */
  Outcome run(SparkSession spark);

  /** After {@link #run}: the changes read from the logs and applied (a prepared layout's tail). */
  default long rowsReplayed() {
    return 0;
  }
}
