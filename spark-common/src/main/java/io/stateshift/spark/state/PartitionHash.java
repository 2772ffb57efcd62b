package io.stateshift.spark.state;

import io.stateshift.spark.line.LineCalls;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.catalyst.expressions.UnsafeRow;
import org.apache.spark.sql.types.BinaryType;
import org.apache.spark.sql.types.BooleanType;
import org.apache.spark.sql.types.ByteType;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.DateType;
import org.apache.spark.sql.types.DoubleType;
import org.apache.spark.sql.types.FloatType;
import org.apache.spark.sql.types.IntegerType;
import org.apache.spark.sql.types.LongType;
import org.apache.spark.sql.types.ShortType;
import org.apache.spark.sql.types.StringType;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.types.TimestampNTZType;
import org.apache.spark.sql.types.TimestampType;
import org.apache.spark.unsafe.Platform;
import org.apache.spark.unsafe.hash.Murmur3_x86_32;
import org.apache.spark.unsafe.types.UTF8String;

/**
 * Spark's partitioning hash of a key row ({@code CollationAwareMurmur3Hash} with seed 42, what
 * {@code HashPartitioning.partitionIdExpression} takes modulo the partition count), evaluated
 * directly for the column types state keys are made of: integral and boolean columns, dates and
 * timestamps, floating point, strings in the default (binary) collation, binary, and structs of
 * these. Same calls to Spark's {@link Murmur3_x86_32}, in the same order and with the same null
 * handling as Spark's generated code; what differs is only that an UnsafeRow's strings, binaries
 * and nested structs are hashed where they lie, with no object per key, and that nothing is
 * compiled: Spark's generated code for it took a sixth of a walk's CPU and its first compilation
 * 0.15 s of a cold command. {@link #of} returns null for any other type (decimals, intervals,
 * arrays, maps, other collations), which keep Spark's generated code.
 *
 * <p>One instance per thread: nested structs are read through reusable rows.
 */
final class PartitionHash {
  static final int SEED = 42;

  // How each column is hashed: a switch, not a function per column (the quick JIT tier inlines
  // no interface calls, and a chain of lambdas per key cost more than the hashing).
  private static final int BOOLEAN = 0;
  private static final int BYTE = 1;
  private static final int SHORT = 2;
  private static final int INT = 3;
  private static final int LONG = 4;
  private static final int FLOAT = 5;
  private static final int DOUBLE = 6;
  private static final int STRING = 7;
  private static final int BINARY = 8;
  private static final int STRUCT = 9;

  private final int[] kinds;
  private final boolean[] nullable;

  /** For a struct column: the hash of its fields, and a row reused to read them in place. */
  private final PartitionHash[] nested;

  private final UnsafeRow[] nestedRows;

  private PartitionHash(int[] kinds, boolean[] nullable, PartitionHash[] nested) {
    this.kinds = kinds;
    this.nullable = nullable;
    this.nested = nested;
    this.nestedRows = new UnsafeRow[kinds.length];
    for (int i = 0; i < kinds.length; i++) {
      if (nested[i] != null) {
        nestedRows[i] = new UnsafeRow(nested[i].kinds.length);
      }
    }
  }

  /** The hash of rows of {@code fields}, or null when a column's type is not covered. */
  static PartitionHash of(StructField[] fields) {
    int[] kinds = new int[fields.length];
    boolean[] nullable = new boolean[fields.length];
    PartitionHash[] nested = new PartitionHash[fields.length];
    for (int i = 0; i < fields.length; i++) {
      DataType type = fields[i].dataType();
      if (type instanceof StructType struct) {
        nested[i] = of(struct.fields());
        if (nested[i] == null) {
          return null;
        }
        kinds[i] = STRUCT;
      } else {
        kinds[i] = kindOf(type);
        if (kinds[i] < 0) {
          return null;
        }
      }
      nullable[i] = fields[i].nullable();
    }
    return new PartitionHash(kinds, nullable, nested);
  }

  private static int kindOf(DataType type) {
    if (type instanceof BooleanType) {
      return BOOLEAN;
    }
    if (type instanceof ByteType) {
      return BYTE;
    }
    if (type instanceof ShortType) {
      return SHORT;
    }
    if (type instanceof IntegerType || type instanceof DateType) {
      return INT;
    }
    if (type instanceof LongType
        || type instanceof TimestampType
        || type instanceof TimestampNTZType) {
      return LONG;
    }
    if (type instanceof FloatType) {
      return FLOAT;
    }
    if (type instanceof DoubleType) {
      return DOUBLE;
    }
    if (type instanceof StringType string && LineCalls.binaryString(string)) {
      return STRING;
    }
    if (type instanceof BinaryType) {
      return BINARY;
    }
    return -1;
  }

  /** Spark's {@code Pmod} of the hash: the partition among {@code partitions}. */
  int partitionOf(InternalRow row, int partitions) {
    int r = hash(row, SEED) % partitions;
    return r < 0 ? (r + partitions) % partitions : r;
  }

  /** Folds each column of {@code row} into {@code hash}, as Spark's generated code does. */
  int hash(InternalRow row, int hash) {
    for (int i = 0; i < kinds.length; i++) {
      // a null in a nullable column leaves the hash as it is
      if (nullable[i] && row.isNullAt(i)) {
        continue;
      }
      switch (kinds[i]) {
        case BOOLEAN -> hash = Murmur3_x86_32.hashInt(row.getBoolean(i) ? 1 : 0, hash);
        case BYTE -> hash = Murmur3_x86_32.hashInt(row.getByte(i), hash);
        case SHORT -> hash = Murmur3_x86_32.hashInt(row.getShort(i), hash);
        case INT -> hash = Murmur3_x86_32.hashInt(row.getInt(i), hash);
        case LONG -> hash = Murmur3_x86_32.hashLong(row.getLong(i), hash);
        case FLOAT -> {
          float f = row.getFloat(i);
          hash = Murmur3_x86_32.hashInt(f == -0.0f ? 0 : Float.floatToIntBits(f), hash);
        }
        case DOUBLE -> {
          double d = row.getDouble(i);
          hash = Murmur3_x86_32.hashLong(d == -0.0d ? 0L : Double.doubleToLongBits(d), hash);
        }
        case STRING, BINARY -> hash = hashBytes(row, i, kinds[i] == BINARY, hash);
        default -> hash = nested[i].hash(structAt(row, i), hash);
      }
    }
    return hash;
  }

  private static int hashBytes(InternalRow row, int i, boolean binary, int hash) {
    if (row instanceof UnsafeRow unsafe) {
      // the bytes where they lie, as UnsafeRow.getUTF8String and getBinary point at them
      long offsetAndSize = unsafe.getLong(i);
      return Murmur3_x86_32.hashUnsafeBytes(
          unsafe.getBaseObject(),
          unsafe.getBaseOffset() + (int) (offsetAndSize >> 32),
          (int) offsetAndSize,
          hash);
    }
    if (binary) {
      byte[] bytes = row.getBinary(i);
      return Murmur3_x86_32.hashUnsafeBytes(bytes, Platform.BYTE_ARRAY_OFFSET, bytes.length, hash);
    }
    UTF8String string = row.getUTF8String(i);
    return Murmur3_x86_32.hashUnsafeBytes(
        string.getBaseObject(), string.getBaseOffset(), string.numBytes(), hash);
  }

  private InternalRow structAt(InternalRow row, int i) {
    if (row instanceof UnsafeRow unsafe) {
      long offsetAndSize = unsafe.getLong(i);
      UnsafeRow struct = nestedRows[i];
      struct.pointTo(
          unsafe.getBaseObject(),
          unsafe.getBaseOffset() + (int) (offsetAndSize >> 32),
          (int) offsetAndSize);
      return struct;
    }
    return row.getStruct(i, nested[i].kinds.length);
  }
}
