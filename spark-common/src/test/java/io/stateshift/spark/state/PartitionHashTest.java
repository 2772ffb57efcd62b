package io.stateshift.spark.state;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.List;
import java.util.Random;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.catalyst.expressions.GenericInternalRow;
import org.apache.spark.sql.catalyst.expressions.UnsafeProjection;
import org.apache.spark.sql.catalyst.expressions.UnsafeRow;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.StringType;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.unsafe.types.UTF8String;
import org.junit.jupiter.api.Test;

/**
 * The oracle is Spark's own generated code for {@code HashPartitioning.partitionIdExpression}: for
 * random keys of every covered column type (nulls, negative zero, NaN, empty and odd-length
 * strings, nested structs), the direct evaluation places each key where Spark does.
 */
class PartitionHashTest {
  private static final int[] PARTITION_COUNTS = {1, 2, 7, 16, 200, Integer.MAX_VALUE};
  private static final int KEYS = 3_000;

  private static final StructType WINDOW =
      new StructType().add("start", DataTypes.TimestampType).add("end", DataTypes.TimestampType);

  @Test
  void placesKeysOfEveryCoveredTypeWhereSparkDoes() {
    List<StructType> schemas =
        List.of(
            // a windowed aggregation's key
            new StructType().add("window", WINDOW, false).add("device", DataTypes.StringType),
            new StructType().add("id", DataTypes.LongType, false),
            new StructType()
                .add("user", DataTypes.StringType)
                .add("session", DataTypes.IntegerType)
                .add("ok", DataTypes.BooleanType)
                .add("day", DataTypes.DateType),
            new StructType()
                .add("b", DataTypes.ByteType)
                .add("s", DataTypes.ShortType)
                .add("f", DataTypes.FloatType)
                .add("d", DataTypes.DoubleType)
                .add("ntz", DataTypes.TimestampNTZType)
                .add("raw", DataTypes.BinaryType),
            new StructType()
                .add(
                    "outer",
                    new StructType().add("inner", WINDOW).add("name", DataTypes.StringType))
                .add("n", DataTypes.LongType));
    Random random = new Random(20261201L);
    for (StructType schema : schemas) {
      PartitionHash direct = PartitionHash.of(schema.fields());
      assertThat(direct).as("covers %s", schema.simpleString()).isNotNull();
      UnsafeProjection toUnsafe = UnsafeProjection.create(schema);
      for (int n : PARTITION_COUNTS) {
        UnsafeProjection spark = StateStores.KeyPlacement.partitionIdCode(schema.fields(), n);
        for (int k = 0; k < KEYS; k++) {
          InternalRow generic = randomRow(schema, random);
          UnsafeRow unsafe = toUnsafe.apply(generic);
          int expected = spark.apply(unsafe).getInt(0);
          assertThat(direct.partitionOf(unsafe, n))
              .as("%s among %d", unsafe, n)
              .isEqualTo(expected);
          assertThat(direct.partitionOf(generic, n))
              .as("%s among %d (generic row)", generic, n)
              .isEqualTo(expected);
        }
      }
    }
  }

  @Test
  void leavesOtherTypesToSparksGeneratedCode() {
    for (DataType type :
        List.of(
            DataTypes.createDecimalType(10, 2),
            DataTypes.createArrayType(DataTypes.LongType),
            DataTypes.createMapType(DataTypes.StringType, DataTypes.LongType),
            DataTypes.CalendarIntervalType,
            StringType.apply("UTF8_LCASE"))) {
      StructType schema = new StructType().add("id", DataTypes.LongType).add("x", type);
      assertThat(PartitionHash.of(schema.fields())).as(type.simpleString()).isNull();
      StructType nested = new StructType().add("s", new StructType().add("x", type));
      assertThat(PartitionHash.of(nested.fields())).as("struct of " + type.simpleString()).isNull();
    }
  }

  private static InternalRow randomRow(StructType schema, Random random) {
    StructField[] fields = schema.fields();
    Object[] values = new Object[fields.length];
    for (int i = 0; i < fields.length; i++) {
      boolean isNull = fields[i].nullable() && random.nextInt(8) == 0;
      values[i] = isNull ? null : randomValue(fields[i].dataType(), random);
    }
    return new GenericInternalRow(values);
  }

  private static Object randomValue(DataType type, Random random) {
    if (type instanceof StructType struct) {
      return randomRow(struct, random);
    }
    if (type.equals(DataTypes.BooleanType)) {
      return random.nextBoolean();
    }
    if (type.equals(DataTypes.ByteType)) {
      return (byte) random.nextInt();
    }
    if (type.equals(DataTypes.ShortType)) {
      return (short) random.nextInt();
    }
    if (type.equals(DataTypes.IntegerType) || type.equals(DataTypes.DateType)) {
      return random.nextInt(4) == 0 ? random.nextInt(100) - 50 : random.nextInt();
    }
    if (type.equals(DataTypes.LongType)
        || type.equals(DataTypes.TimestampType)
        || type.equals(DataTypes.TimestampNTZType)) {
      return random.nextInt(4) == 0 ? (long) random.nextInt(100) - 50 : random.nextLong();
    }
    if (type.equals(DataTypes.FloatType)) {
      float[] special = {0.0f, -0.0f, Float.NaN, Float.NEGATIVE_INFINITY, Float.MIN_VALUE};
      return random.nextInt(3) == 0
          ? special[random.nextInt(special.length)]
          : random.nextFloat() * 1000 - 500;
    }
    if (type.equals(DataTypes.DoubleType)) {
      double[] special = {0.0d, -0.0d, Double.NaN, Double.POSITIVE_INFINITY, Double.MIN_VALUE};
      return random.nextInt(3) == 0
          ? special[random.nextInt(special.length)]
          : random.nextGaussian() * 1e6;
    }
    byte[] bytes = new byte[random.nextInt(24)]; // every length mod 4, empty included
    if (type.equals(DataTypes.BinaryType)) {
      random.nextBytes(bytes);
      return bytes;
    }
    StringBuilder text = new StringBuilder();
    for (int c = 0; c < bytes.length; c++) {
      text.append(random.nextInt(6) == 0 ? 'é' : (char) ('a' + random.nextInt(26)));
    }
    return UTF8String.fromString(text.toString());
  }
}
