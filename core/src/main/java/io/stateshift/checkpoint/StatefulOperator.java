package io.stateshift.checkpoint;

import io.stateshift.StateShiftException;
import java.util.List;

/**
 * A stateful operator of a checkpoint as its operator metadata describes it.
 *
 * @param id operator id, the folder name under {@code state/}
 * @param name Spark's operator name, for example {@code stateStoreSave} or {@code dedupe}
 * @param stores the operator's state stores
 * @param numPartitions the partition count recorded in the operator metadata
 * @param metadataVersion 1 or 2, the operator metadata format Spark wrote; {@link #DERIVED} for an
 *     operator derived from its files (a checkpoint without operator metadata)
 */
public record StatefulOperator(
    long id, String name, List<Store> stores, int numPartitions, int metadataVersion) {

  /** {@link #metadataVersion()} of an operator derived from its files. */
  public static final int DERIVED = 0;

  /** A state store of the operator; the default store is called {@code default}. */
  public record Store(String name, int numColsPrefixKey) {
    public boolean isDefault() {
      return name.equals("default");
    }
  }

  /** Where one partition of one store lives, relative to the checkpoint root. */
  public static String storeDir(long operatorId, int partition, String storeName) {
    String dir = "state/" + operatorId + "/" + partition;
    return storeName.equals("default") ? dir : dir + "/" + storeName;
  }

  /**
   * Refuses an operator without metadata whose key placement cannot be told from the checkpoint.
   */
  public static StateShiftException refuseWithoutMetadata(
      String checkpoint, long operatorId, String why) {
    return new StateShiftException(
        StateShiftException.Reason.UNSUPPORTED_CHECKPOINT,
        "Operator "
            + operatorId
            + " of checkpoint "
            + checkpoint
            + " has no operator metadata "
            + "(state/"
            + operatorId
            + "/_metadata; checkpoints written before Spark 4.0 lack it) "
            + "and "
            + why
            + ", so where its keys belong cannot be told from the checkpoint. Run "
            + "the query for one batch on Spark 4.0 or later (which writes the metadata), stop "
            + "it, then repartition. The checkpoint was not changed.");
  }
}
