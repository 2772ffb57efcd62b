package io.stateshift.internal;

import java.io.Serializable;
import org.apache.spark.sql.types.StructType;

/**
 * Everything a task needs to read or write one state store of one operator.
 *
 * @param slot position of this store in the job, so records of all stores share one shuffle
 */
public record StoreSpec(
    int slot,
    long operatorId,
    String operatorName,
    String storeName,
    int numColsPrefixKey,
    StructType keySchema,
    StructType valueSchema) implements Serializable {

  public String dir(int partition) {
    return StatefulOperator.storeDir(operatorId, partition, storeName);
  }
}
