package io.stateshift.internal;

import java.util.List;

/**
 * A stateful operator of a checkpoint as its operator metadata describes it.
 *
 * @param id operator id, the folder name under {@code state/}
 * @param name Spark's operator name, for example {@code stateStoreSave} or {@code dedupe}
 * @param stores the operator's state stores
 * @param numPartitions the partition count recorded in the operator metadata
 * @param metadataVersion 1 or 2, the operator metadata format Spark wrote
 */
public record StatefulOperator(
    long id, String name, List<Store> stores, int numPartitions, int metadataVersion) {

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
}
