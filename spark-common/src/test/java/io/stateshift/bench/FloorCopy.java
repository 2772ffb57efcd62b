package io.stateshift.bench;

import java.io.BufferedOutputStream;
import java.io.DataOutputStream;
import java.io.FileOutputStream;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.stream.Stream;
import org.apache.spark.TaskContext;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.catalyst.expressions.UnsafeProjection;
import org.apache.spark.sql.catalyst.expressions.UnsafeRow;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.StructType;

/**
 * The floor: read every key and value of the last committed state once, through Spark's {@code
 * statestore} source (one task per state partition, the store's own reader), and write the same
 * UnsafeRow bytes once, as {@code [keyLength][key][valueLength][value]} records, to one plain local
 * file per partition. No hashing, no shuffle, no store format: anything that repartitions state has
 * to do at least this much I/O.
 */
final class FloorCopy {
  private FloorCopy() {}

  /** Returns the rows written. {@code out} must be a local folder that does not exist yet. */
  static long run(SparkSession spark, Path checkpoint, Path out) {
    long rows = 0;
    try {
      Files.createDirectories(out);
      for (int operator : operators(checkpoint)) {
        for (String store : storeNames(checkpoint, operator)) {
          rows += copy(spark, checkpoint, operator, store, out);
        }
      }
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
    return rows;
  }

  /** The store names of an operator with several (a join), or a single null for the default. */
  static List<String> storeNames(Path checkpoint, int operator) throws IOException {
    Path partition0 = checkpoint.resolve("state").resolve(Integer.toString(operator)).resolve("0");
    try (Stream<Path> list = Files.list(partition0)) {
      List<String> names =
          list.filter(Files::isDirectory)
              .map(p -> p.getFileName().toString())
              .filter(n -> !n.startsWith("_") && !n.equals("SSTs")) // RocksDB's own SST folder
              .sorted()
              .toList();
      return names.isEmpty() ? java.util.Collections.singletonList(null) : names;
    }
  }

  private static long copy(
      SparkSession spark, Path checkpoint, int operator, String store, Path out) {
    var reader = spark.read().format("statestore").option("operatorId", operator);
    if (store != null) {
      reader = reader.option("storeName", store);
    }
    Dataset<Row> state = reader.load(checkpoint.toString());
    StructType schema = state.schema();
    int keyIndex = schema.fieldIndex("key");
    int valueIndex = schema.fieldIndex("value");
    StructType keySchema = asStruct(schema.fields()[keyIndex].dataType());
    StructType valueSchema = asStruct(schema.fields()[valueIndex].dataType());
    String prefix =
        out.resolve("op" + operator + (store == null ? "" : "-" + store) + "-part-").toString();
    return state
        .queryExecution()
        .toRdd()
        .toJavaRDD()
        .mapPartitions(
            it ->
                List.of(write(it, prefix, keyIndex, keySchema, valueIndex, valueSchema)).iterator())
        .reduce(Long::sum);
  }

  private static long write(
      java.util.Iterator<InternalRow> rows,
      String prefix,
      int keyIndex,
      StructType keySchema,
      int valueIndex,
      StructType valueSchema)
      throws IOException {
    long count = 0;
    byte[] buffer = new byte[4096];
    UnsafeProjection[] projections = new UnsafeProjection[2];
    try (DataOutputStream out =
        new DataOutputStream(
            new BufferedOutputStream(
                new FileOutputStream(prefix + TaskContext.getPartitionId() + ".bin"), 1 << 16))) {
      while (rows.hasNext()) {
        InternalRow row = rows.next();
        writeStruct(out, row, keyIndex, keySchema, buffer, projections, 0);
        writeStruct(out, row, valueIndex, valueSchema, buffer, projections, 1);
        count++;
      }
      out.writeInt(-1);
    }
    return count;
  }

  private static void writeStruct(
      DataOutputStream out,
      InternalRow row,
      int index,
      StructType schema,
      byte[] buffer,
      UnsafeProjection[] projections,
      int slot)
      throws IOException {
    if (row.isNullAt(index)) {
      out.writeInt(-1);
      return;
    }
    InternalRow struct = row.getStruct(index, schema.size());
    UnsafeRow bytes;
    if (struct instanceof UnsafeRow unsafe) {
      bytes = unsafe;
    } else {
      if (projections[slot] == null) {
        projections[slot] = UnsafeProjection.create(schema);
      }
      bytes = projections[slot].apply(struct);
    }
    out.writeInt(bytes.getSizeInBytes());
    bytes.writeToStream(out, buffer);
  }

  private static StructType asStruct(DataType type) {
    return type instanceof StructType s ? s : new StructType();
  }

  static List<Integer> operators(Path checkpoint) throws IOException {
    try (Stream<Path> list = Files.list(checkpoint.resolve("state"))) {
      return list.map(p -> p.getFileName().toString())
          .filter(n -> n.matches("\\d+"))
          .map(Integer::parseInt)
          .sorted()
          .toList();
    }
  }
}
