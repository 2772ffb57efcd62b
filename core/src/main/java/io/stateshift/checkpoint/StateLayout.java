package io.stateshift.checkpoint;

import io.stateshift.checkpoint.spi.LayoutReading;
import io.stateshift.checkpoint.spi.SparkLines;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.apache.spark.sql.SparkSession;

/**
 * The state layout of a checkpoint at its last committed batch, validated: partition count,
 * provider and its conf, operators and the schema of every store.
 *
 * @param storeConf the SQL settings the state stores are opened with: the session's, then the
 *     offset log's, then the checkpoint format the commit log shows
 * @param size the bytes and files of the state, from the validation's listings
 */
public record StateLayout(
    Checkpoint checkpoint,
    long lastCommitted,
    int partitions,
    String provider,
    List<StatefulOperator> operators,
    List<StoreSpec> stores,
    Map<String, String> storeConf,
    StateCheckpointIds checkpointIds,
    StateSize size) {

  public static final String HDFS_PROVIDER =
      "org.apache.spark.sql.execution.streaming.state.HDFSBackedStateStoreProvider";
  public static final String ROCKSDB_PROVIDER =
      "org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider";
  public static final String JOIN = "symmetricHashJoin";
  public static final String SESSION_WINDOW = "sessionWindowStateStoreSaveExec";
  public static final String FLAT_MAP_GROUPS_WITH_STATE = "flatMapGroupsWithState";
  public static final String TRANSFORM_WITH_STATE = "transformWithStateExec";

  /** Spark's operator names (operator metadata) of the operators stateshift repartitions. */
  public static final Set<String> SUPPORTED_OPERATORS =
      Set.of(
          "stateStoreSave",
          "dedupe",
          "dedupeWithinWatermark",
          SESSION_WINDOW,
          FLAT_MAP_GROUPS_WITH_STATE,
          JOIN,
          TRANSFORM_WITH_STATE);

  /** What users know them as, for error messages. */
  public static final String SUPPORTED_DESCRIPTION =
      "streaming aggregations (stateStoreSave), "
          + "dropDuplicates (dedupe), dropDuplicatesWithinWatermark (dedupeWithinWatermark), session "
          + "windows ("
          + SESSION_WINDOW
          + "), mapGroupsWithState / flatMapGroupsWithState ("
          + FLAT_MAP_GROUPS_WITH_STATE
          + "), transformWithState ("
          + TRANSFORM_WITH_STATE
          + ") and "
          + "stream-stream joins ("
          + JOIN
          + ", join state formats 1, 2 and 3)";

  public static final String JOIN_FORMAT = "spark.sql.streaming.join.stateFormatVersion";
  public static final String FMGWS_FORMAT =
      "spark.sql.streaming.flatMapGroupsWithState.stateFormatVersion";

  public boolean rocksDb() {
    return provider.equals(ROCKSDB_PROVIDER);
  }

  /** True for state checkpoint format v2: versions are loaded and committed by unique id. */
  public boolean checkpointIdsEnabled() {
    return checkpointIds != null;
  }

  /** The state checkpoint format: 2 where versions are named by unique ids, else 1. */
  public int checkpointFormatVersion() {
    return checkpointIdsEnabled() ? 2 : 1;
  }

  /**
   * Reads and validates the layout. With {@code requireSupported}, operators this version cannot
   * repartition are refused; without, their stores are left out (for inspection).
   */
  public static StateLayout read(
      SparkSession spark, Checkpoint checkpoint, boolean requireSupported) {
    return read(spark, checkpoint, requireSupported, false);
  }

  /** With {@code allowPendingBatch}: see {@link LayoutReading#allowPendingBatch()}. */
  public static StateLayout read(
      SparkSession spark,
      Checkpoint checkpoint,
      boolean requireSupported,
      boolean allowPendingBatch) {
    return SparkLines.get()
        .readLayout(
            spark, checkpoint, new LayoutReading(requireSupported, allowPendingBatch, false));
  }

  /**
   * The layout as the doctor reads it: a pending batch is accepted and partition folders beyond the
   * recorded count are left for the doctor to report instead of refusing the checkpoint.
   */
  public static StateLayout readForDiagnosis(SparkSession spark, Checkpoint checkpoint) {
    return SparkLines.get()
        .readLayout(
            spark,
            checkpoint,
            new LayoutReading(false, checkpoint.lastCommittedBatch() >= 0, true));
  }
}
