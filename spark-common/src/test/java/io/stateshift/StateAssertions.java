package io.stateshift;

import static org.assertj.core.api.Assertions.assertThat;

import io.stateshift.spark.state.StateSources;
import io.stateshift.testing.SparkFeatures;
import java.nio.file.Path;
import java.util.List;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.SparkSession;

/** Checks on a repartitioned checkpoint made with Spark's own state data sources. */
final class StateAssertions {
  private StateAssertions() {}

  /**
   * Reads every store back with Spark's statestore source and checks each key's partition against
   * Spark's hash partitioning, computed independently in SQL: pmod(hash(key), n).
   */
  static void assertEveryKeyInItsSparkPartition(
      SparkSession spark, Path checkpoint, long batchId, int partitions) {
    assertEveryKeyInItsSparkPartition(spark, checkpoint.toString(), batchId, partitions);
  }

  static void assertEveryKeyInItsSparkPartition(
      SparkSession spark, String checkpoint, long batchId, int partitions) {
    if (readsFormatV2WithoutIds(spark)) {
      return; // the output oracle checks such a checkpoint
    }
    List<Row> operators =
        StateSources.metadata(spark, checkpoint)
            .select("operatorId", "stateStoreName")
            .collectAsList();
    assertThat(operators).isNotEmpty();
    for (Row op : operators) {
      Dataset<Row> state =
          StateSources.state(spark, checkpoint, batchId, op.getLong(0), op.getString(1));
      long rows = state.count();
      long misplaced =
          state
              .selectExpr("partition_id", "pmod(hash(key), " + partitions + ") AS expected")
              .filter("partition_id != expected")
              .count();
      assertThat(rows).as("rows of operator %s", op.getLong(0)).isPositive();
      assertThat(misplaced).as("misplaced keys of operator %s", op.getLong(0)).isZero();
      long highest =
          state.agg(org.apache.spark.sql.functions.max("partition_id")).first().getInt(0);
      assertThat(highest).isLessThan(partitions);
    }
  }

  /**
   * Whether the session reads state checkpoint format v2 (the tests name it before reading such a
   * checkpoint) with a statestore source that cannot: Spark 4.0's loads a version by its number.
   */
  private static boolean readsFormatV2WithoutIds(SparkSession spark) {
    return !SparkFeatures.stateSourceReadsFormatV2(spark)
        && "2"
            .equals(
                spark.conf().get("spark.sql.streaming.stateStore.checkpointFormatVersion", "1"));
  }

  /**
   * The same per store, for every operator: Spark's statestore source reads each store, and each
   * key's partition is checked against the operator's partition key, computed in SQL: the whole
   * key, except the key without its last field for a session window and a join's
   * keyWithIndexToValue store (the key without the index).
   */
  static void assertEveryStoreKeyInItsSparkPartition(
      SparkSession spark, Path checkpoint, long batchId, int partitions) {
    if (readsFormatV2WithoutIds(spark)) {
      return; // the output oracle checks such a checkpoint
    }
    List<Row> stores =
        StateSources.metadata(spark, checkpoint.toString())
            .select("operatorId", "operatorName", "stateStoreName")
            .collectAsList();
    assertThat(stores).isNotEmpty();
    for (Row store : stores) {
      Dataset<Row> state =
          StateSources.state(
              spark, checkpoint.toString(), batchId, store.getLong(0), store.getString(2));
      org.apache.spark.sql.types.StructField[] fields =
          ((org.apache.spark.sql.types.StructType) state.schema().apply("key").dataType()).fields();
      boolean dropLast =
          store.getString(1).equals("sessionWindowStateStoreSaveExec")
              || store.getString(2).endsWith("keyWithIndexToValue");
      List<String> partitionKey = new java.util.ArrayList<>();
      for (int i = 0; i < fields.length - (dropLast ? 1 : 0); i++) {
        partitionKey.add("key.`" + fields[i].name() + "`");
      }
      String expected = "pmod(hash(" + String.join(", ", partitionKey) + "), " + partitions + ")";
      long misplaced =
          state
              .selectExpr("partition_id", expected + " AS expected")
              .filter("partition_id != expected")
              .count();
      String what = "operator " + store.getLong(0) + " store " + store.getString(2);
      assertThat(state.count()).as("rows of %s", what).isPositive();
      assertThat(misplaced).as("misplaced keys of %s", what).isZero();
      assertThat(state.agg(org.apache.spark.sql.functions.max("partition_id")).first().getInt(0))
          .isLessThan(partitions);
    }
  }

  /** Spark's state-metadata source must report the new count for every operator. */
  static void assertMetadataReports(SparkSession spark, Path checkpoint, int partitions) {
    assertMetadataReports(spark, checkpoint.toString(), partitions);
  }

  static void assertMetadataReports(SparkSession spark, String checkpoint, int partitions) {
    List<Row> rows =
        StateSources.metadata(spark, checkpoint).select("numPartitions").collectAsList();
    assertThat(rows).isNotEmpty().allSatisfy(r -> assertThat(r.getInt(0)).isEqualTo(partitions));
  }

  /**
   * Repartitions the checkpoint from the API and checks what the result reports: the counts, and
   * for every store as many rows written as read.
   */
  /** Prepares {@code to} partitions for the checkpoint and returns the batch prepared. */
  static long preparedBatch(SparkSession spark, Path checkpoint, int to) {
    PrepareResult result =
        StateShift.get(spark).prepareState(checkpoint.toString()).toPartitions(to).execute();
    assertThat(result.prepared()).isPresent();
    assertThat(result.prepared().get().rows()).isPositive();
    return result.prepared().get().preparedBatch();
  }

  /**
   * Every checksum file Spark's file manager keeps beside a state file ({@code <file>.crc}, Spark
   * 4.1 and later) matches the file it names, where that file exists: a new file must never take
   * the name of an old one whose checksum stayed (Spark would fail its read of that file).
   */
  static void assertSparkChecksumsMatch(Path checkpoint) {
    Path state = checkpoint.resolve("state");
    List<Path> checksums;
    try (java.util.stream.Stream<Path> files = java.nio.file.Files.walk(state)) {
      checksums =
          files
              .filter(f -> f.getFileName().toString().endsWith(".crc"))
              .filter(f -> !f.getFileName().toString().startsWith("."))
              .toList();
    } catch (java.io.IOException e) {
      throw new java.io.UncheckedIOException(e);
    }
    for (Path checksum : checksums) {
      String name = checksum.getFileName().toString();
      Path main = checksum.resolveSibling(name.substring(0, name.length() - ".crc".length()));
      if (!java.nio.file.Files.exists(main)) {
        continue; // an orphan, which Spark's maintenance removes and never reads
      }
      try {
        com.fasterxml.jackson.databind.JsonNode json =
            new com.fasterxml.jackson.databind.ObjectMapper().readTree(checksum.toFile());
        java.util.zip.CRC32C crc = new java.util.zip.CRC32C();
        byte[] bytes = java.nio.file.Files.readAllBytes(main);
        crc.update(bytes);
        assertThat(json.get("mainFileSize").asLong())
            .as("size in %s", checksum)
            .isEqualTo(bytes.length);
        assertThat(json.get("value").asInt())
            .as("CRC32C in %s", checksum)
            .isEqualTo((int) crc.getValue());
      } catch (java.io.IOException e) {
        throw new java.io.UncheckedIOException(e);
      }
    }
  }

  static RepartitionResult repartition(SparkSession spark, Path checkpoint, int from, int to) {
    RepartitionResult result =
        StateShift.get(spark).repartitionState(checkpoint.toString()).toPartitions(to).execute();
    assertThat(result.fromPartitions()).isEqualTo(from);
    assertThat(result.toPartitions()).isEqualTo(to);
    assertThat(result.rowsMoved()).isPositive();
    assertThat(result.stores())
        .allSatisfy(s -> assertThat(s.rowsWritten()).isEqualTo(s.rowsRead()));
    return result;
  }
}
