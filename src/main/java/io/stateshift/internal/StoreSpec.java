package io.stateshift.internal;

import java.io.Serializable;
import org.apache.spark.sql.types.StructType;

/**
 * Everything a task needs to read or write one state store of one operator.
 *
 * @param slot position of this store in the job, so records of all stores share one shuffle
 * @param numColsPrefixKey leading key columns the store's encoder scans by (session windows)
 * @param stateFormatVersion the operator's state format version where placement depends on it
 *     (stream-stream joins), else 0
 */
public record StoreSpec(
    int slot,
    long operatorId,
    String operatorName,
    String storeName,
    int numColsPrefixKey,
    StructType keySchema,
    StructType valueSchema,
    int stateFormatVersion) implements Serializable {

  public String dir(int partition) {
    return StatefulOperator.storeDir(operatorId, partition, storeName);
  }
}
