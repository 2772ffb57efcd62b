package io.stateshift.spark.line;

import org.apache.spark.sql.types.StructType;

/**
 * Stands in for Spark 4's {@code StateStoreColFamilySchema} on 3.5, whose schema files hold one key
 * and one value schema per store (renamed by the build, as {@link StateStoreIterator}).
 */
public record StateStoreColFamilySchema(
    String colFamilyName, StructType keySchema, StructType valueSchema) {
  /** 3.5 writes no key encoder spec. */
  public scala.Option<KeyStateEncoderSpec> keyStateEncoderSpec() {
    return scala.Option.empty();
  }
}
