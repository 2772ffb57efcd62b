package io.stateshift.spark.line;

import org.apache.spark.sql.types.StructType;

/** Stands in for Spark 4's class on 3.5 ({@link KeyStateEncoderSpec}). */
public record NoPrefixKeyStateEncoderSpec(StructType keySchema) implements KeyStateEncoderSpec {}
