package io.stateshift.checkpoint;

import java.io.Serializable;
import org.apache.spark.sql.types.StructType;

/**
 * Everything a task needs to read or write one state store of one operator.
 *
 * @param slot position of this store in the job, so records of all stores share one shuffle
 * @param numColsPrefixKey leading key columns the store's encoder scans by (session windows)
 * @param stateFormatVersion the operator's state format version where placement depends on it
 *     (stream-stream joins), else 0
 * @param columnFamilies for a store with several column families (transformWithState, a join in
 *     state format 3) every one of them; empty for a store with only the default one, whose schema
 *     is keySchema/valueSchema
 */
public record StoreSpec(
    int slot,
    long operatorId,
    String operatorName,
    String storeName,
    int numColsPrefixKey,
    StructType keySchema,
    StructType valueSchema,
    int stateFormatVersion,
    java.util.List<ColumnFamily> columnFamilies)
    implements Serializable {

  public StoreSpec(
      int slot,
      long operatorId,
      String operatorName,
      String storeName,
      int numColsPrefixKey,
      StructType keySchema,
      StructType valueSchema,
      int stateFormatVersion) {
    this(
        slot,
        operatorId,
        operatorName,
        storeName,
        numColsPrefixKey,
        keySchema,
        valueSchema,
        stateFormatVersion,
        java.util.List.of());
  }

  /** True for a store of several column families (transformWithState, join state format 3). */
  public boolean hasColumnFamilies() {
    return !columnFamilies.isEmpty();
  }

  /** The same store with another value schema (an evolution of its state). */
  public StoreSpec withValueSchema(StructType schema) {
    return new StoreSpec(
        slot,
        operatorId,
        operatorName,
        storeName,
        numColsPrefixKey,
        keySchema,
        schema,
        stateFormatVersion,
        columnFamilies);
  }

  public String dir(int partition) {
    return StatefulOperator.storeDir(operatorId, partition, storeName);
  }
}
