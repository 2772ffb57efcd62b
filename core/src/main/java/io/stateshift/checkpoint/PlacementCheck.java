package io.stateshift.checkpoint;

import io.stateshift.StateShiftException;
import io.stateshift.StateShiftException.Reason;
import java.io.Serializable;
import java.util.function.Consumer;

/**
 * Checks, while an old partition is read, that each key sits in the partition its recorded state
 * schema and the old partition count give it. The key is hashed anyway to find its new partition,
 * so the check costs one modulo and one comparison per key. A key elsewhere means the checkpoint's
 * metadata does not describe its state (a schema file claiming another type for a key column, a
 * wrong partition count, state copied between partitions): placing keys by that metadata would
 * scatter them where the restarted query never looks, so the repartition stops before anything is
 * changed.
 */
public final class PlacementCheck {

  /** How a store's keys are checked. */
  public enum Mode implements Serializable {
    /**
     * Every key is placed by its whole partition key (operator metadata, and the offset log records
     * useStrictDistribution=true, or a stream-stream join, which Spark always places so).
     */
    STRICT,
    /**
     * The operator was told from its schema and folders (a checkpoint without operator metadata): a
     * misplaced key means that guess was wrong.
     */
    DERIVED,
    /**
     * The checkpoint was written with useStrictDistribution=false: Spark may have placed the keys
     * by part of their key, so a key elsewhere proves nothing; it is noted, not refused.
     */
    SUBSET_ALLOWED
  }

  private final Mode mode;
  private final StoreSpec spec;
  private final int oldPartitions;
  private final int partition;
  private final String checkpointRoot;
  private final Consumer<String> notes;
  private boolean noted;

  public PlacementCheck(
      Mode mode,
      StoreSpec spec,
      int oldPartitions,
      int partition,
      String checkpointRoot,
      Consumer<String> notes) {
    this.mode = mode;
    this.spec = spec;
    this.oldPartitions = oldPartitions;
    this.partition = partition;
    this.checkpointRoot = checkpointRoot;
    this.notes = notes;
  }

  /** Whether a key of this hash (Spark's partitioning hash of its key) is elsewhere. */
  public boolean misplaced(int hash) {
    return pmod(hash, oldPartitions) != partition;
  }

  /**
   * A key read from {@code file} (a path, or a description of the version read) is misplaced:
   * refuses the repartition, or with {@link Mode#SUBSET_ALLOWED} notes the store once.
   */
  public void report(String file) {
    switch (mode) {
      case DERIVED ->
          throw StatefulOperator.refuseWithoutMetadata(
              checkpointRoot,
              spec.operatorId(),
              "a key in its partition "
                  + partition
                  + " is not placed by its whole state key as derived from its state schema ("
                  + StatefulOperator.storeDir(spec.operatorId(), 0, spec.storeName())
                  + "/_metadata/schema). Restore the checkpoint from a backup if that file or "
                  + "the partition folders were changed; if not, the operator places its keys "
                  + "otherwise");
      case SUBSET_ALLOWED -> {
        if (!noted) {
          noted = true;
          notes.accept(
              "operator "
                  + spec.operatorId()
                  + " store "
                  + spec.storeName()
                  + ": "
                  + "keys of partition "
                  + partition
                  + " are not placed by their whole key, as "
                  + "Spark may do for a checkpoint written with "
                  + OffsetLogEntry.STRICT_DISTRIBUTION
                  + "=false, so their placement could not be checked against the state schema; "
                  + "the new layout places every key by its whole key");
        }
      }
      default ->
          throw mismatch(
              spec, partition, relative(checkpointRoot, file), oldPartitions, checkpointRoot);
    }
  }

  /** The refusal for a key that its partition's metadata does not place there. */
  static StateShiftException mismatch(
      StoreSpec spec, int partition, String file, int oldPartitions, String checkpointRoot) {
    String schema =
        spec.hasColumnFamilies()
            ? "state/" + spec.operatorId() + "/_stateSchema"
            : StatefulOperator.storeDir(spec.operatorId(), 0, spec.storeName())
                + "/_metadata/schema";
    return new StateShiftException(
        Reason.CORRUPT_CHECKPOINT,
        "Operator "
            + spec.operatorId()
            + " store "
            + spec.storeName()
            + " of checkpoint "
            + checkpointRoot
            + ": a key in "
            + "partition "
            + partition
            + " ("
            + file
            + ") does not belong there under the state "
            + "schema ("
            + schema
            + ") and the "
            + oldPartitions
            + " partitions the checkpoint "
            + "records: the schema file or the checkpoint's metadata does not match the stored keys. "
            + "Restore the checkpoint, or the schema file, from a backup. The checkpoint was not "
            + "changed.");
  }

  /** {@code path} relative to the checkpoint root, when it is below it. */
  static String relative(String checkpointRoot, String path) {
    String prefix = checkpointRoot.endsWith("/") ? checkpointRoot : checkpointRoot + "/";
    return path.startsWith(prefix) ? path.substring(prefix.length()) : path;
  }

  /** The partition a key of this hash has among {@code partitions}, as Spark's Pmod computes it. */
  public static int pmod(int hash, int partitions) {
    int r = hash % partitions;
    return r < 0 ? (r + partitions) % partitions : r;
  }
}
