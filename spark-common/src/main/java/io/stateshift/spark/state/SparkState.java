package io.stateshift.spark.state;

import io.stateshift.checkpoint.Checkpoint;
import io.stateshift.checkpoint.CheckpointFiles;
import io.stateshift.checkpoint.OffsetLogEntry;
import io.stateshift.checkpoint.StateCheckpointIds;
import io.stateshift.checkpoint.StateLayout;
import io.stateshift.checkpoint.StatefulOperator;
import io.stateshift.checkpoint.StoreSpec;
import io.stateshift.checkpoint.spi.LayoutReading;
import io.stateshift.checkpoint.spi.Redistribution;
import io.stateshift.checkpoint.spi.StateCount;
import io.stateshift.spark.line.StateCalls;
import java.util.List;
import org.apache.spark.sql.SparkSession;

/** The state side of Spark 4.2's SparkLine: schemas, stores and the state exchanges. */
public final class SparkState {
  private SparkState() {}

  public static StateLayout readLayout(
      SparkSession spark, Checkpoint checkpoint, LayoutReading reading) {
    return LayoutReader.read(spark, checkpoint, reading);
  }

  public static StatefulOperator deriveOperator(CheckpointFiles files, long operatorId) {
    return OperatorWithoutMetadata.derive(files, operatorId);
  }

  /**
   * Where a store's id sits in a partition's array, as Spark reads it: asks Spark's own lookup with
   * an array whose entries are their positions.
   */
  public static int checkpointIdPosition(String storeName) {
    int position = StateCalls.joinCheckpointIdPosition(storeName);
    if (position < 0) {
      throw new IllegalArgumentException("no checkpoint id position for store " + storeName);
    }
    return position;
  }

  public static int partitionKeyColumns(StoreSpec store) {
    return StateStores.KeyPlacement.partitionKeyColumns(store);
  }

  public static List<StateCount> countState(
      SparkSession spark, StateLayout layout, long version, StateCheckpointIds checkpointIds) {
    CheckpointFiles files = layout.checkpoint().files();
    return new StateCensus(
            files.path("state").toString(),
            StateStores.storeConf(layout.storeConf()),
            files.conf(),
            layout.stores(),
            layout.partitions(),
            version,
            checkpointIds)
        .run(spark);
  }

  /**
   * The state is read with the layout's settings (its provider and checkpoint format) and written
   * with the target's: a migration changes the provider, the format, or both.
   */
  public static Redistribution redistribution(
      StateLayout layout,
      String stagingDir,
      int newPartitions,
      String writeProvider,
      int writeFormatVersion) {
    CheckpointFiles files = layout.checkpoint().files();
    var storeConf = StateStores.storeConf(layout.storeConf());
    var writeStoreConf = storeConf;
    if (!writeProvider.equals(layout.provider())
        || writeFormatVersion != layout.checkpointFormatVersion()) {
      java.util.Map<String, String> settings = new java.util.HashMap<>(layout.storeConf());
      settings.put(OffsetLogEntry.PROVIDER_CLASS, writeProvider);
      settings.put(StateCheckpointIds.FORMAT_VERSION_CONF, Integer.toString(writeFormatVersion));
      writeStoreConf = StateStores.storeConf(settings);
    }
    return new StateRedistributionJob(
        new StateRedistributionJob.Setup(
            files.path("state").toString(),
            stagingDir,
            storeConf,
            writeStoreConf,
            files.conf(),
            layout.stores(),
            layout.partitions(),
            newPartitions,
            layout.lastCommitted(),
            layout.rocksDb(),
            writeProvider.equals(StateLayout.ROCKSDB_PROVIDER),
            storeConf.compressionCodec(),
            layout.checkpointIds()));
  }

  /** See {@link PreparedTailReplay}: the tail's replay onto a prepared layout. */
  public static Redistribution preparedReplay(
      StateLayout layout,
      io.stateshift.checkpoint.PreparedManifest prepared,
      String stagingDir,
      int newPartitions) {
    CheckpointFiles files = layout.checkpoint().files();
    return new PreparedTailReplay(
        files.root().toString(),
        stagingDir,
        files.conf(),
        layout.stores(),
        layout.partitions(),
        newPartitions,
        layout.lastCommitted(),
        StateStores.storeConf(layout.storeConf()).compressionCodec(),
        layout.rocksDb(),
        prepared,
        io.stateshift.checkpoint.TailFiles.of(
            layout, prepared.preparedBatch() + 2, layout.lastCommitted() + 1),
        layout.checkpointIdsEnabled());
  }

  /** See {@link StateRows}: a store's entries as rows. */
  public static org.apache.spark.sql.Dataset<org.apache.spark.sql.Row> readState(
      SparkSession spark, StateLayout layout, StoreSpec store, String columnFamily) {
    return StateRows.read(spark, layout, store, columnFamily);
  }

  /** See {@link StatePredicate#compile}. */
  public static void checkStatePredicate(
      SparkSession spark, StoreSpec store, String predicate, boolean keyOnly) {
    StatePredicate.compile(spark, store, predicate, keyOnly);
  }

  /** See {@link StateUpsert#checked}. */
  public static void checkUpsert(
      SparkSession spark,
      StoreSpec store,
      org.apache.spark.sql.Dataset<org.apache.spark.sql.Row> rows) {
    StateUpsert.checked(spark, store, rows);
  }

  /** See {@link StateValueTransform#compile}. */
  public static void checkValueEvolution(
      SparkSession spark,
      StoreSpec store,
      org.apache.spark.sql.types.StructType valueSchema,
      java.util.Map<String, String> fills) {
    StateValueTransform.compile(spark, store, valueSchema, fills);
  }

  /** See {@link StateValueTransform#checkSet}. */
  public static void checkValueSet(
      SparkSession spark, StoreSpec store, java.util.Map<String, String> sets, String where) {
    StateValueTransform.checkSet(spark, store, sets, where);
  }

  /** See {@link QueryStateSchema}. */
  public static java.util.Optional<org.apache.spark.sql.types.StructType[]> aggregationStateSchema(
      org.apache.spark.sql.Dataset<?> query) {
    return QueryStateSchema.ofAggregation(query);
  }

  /** The SHA-256 of each file, one Spark task per file. */
  public static List<String> sha256(
      SparkSession spark, org.apache.hadoop.conf.Configuration conf, List<String> paths) {
    if (paths.isEmpty()) {
      return List.of();
    }
    var jsc = org.apache.spark.api.java.JavaSparkContext.fromSparkContext(spark.sparkContext());
    var shared = jsc.broadcast(new org.apache.spark.util.SerializableConfiguration(conf));
    try {
      return jsc.parallelize(paths, Math.min(paths.size(), Math.max(1, jsc.defaultParallelism())))
          .map(
              path -> {
                TaskThrottle.untilThisTaskEnds();
                org.apache.hadoop.fs.Path file = new org.apache.hadoop.fs.Path(path);
                return PreparedTailReplay.sha256(file.getFileSystem(shared.value().value()), file);
              })
          .collect();
    } finally {
      shared.destroy();
    }
  }
}
