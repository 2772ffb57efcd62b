package io.stateshift.internal;

import io.stateshift.StateShiftException;
import io.stateshift.StateShiftException.Reason;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.UUID;
import org.apache.hadoop.fs.FileStatus;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.execution.streaming.state.StateSchemaCompatibilityChecker;
import org.apache.spark.sql.execution.streaming.state.StateStoreColFamilySchema;
import org.apache.spark.sql.execution.streaming.state.StateStoreConf;
import org.apache.spark.sql.execution.streaming.state.StateStoreId;
import org.apache.spark.sql.execution.streaming.state.StateStoreProviderId;
import org.apache.spark.sql.internal.SQLConf;

/**
 * The state layout of a checkpoint at its last committed batch, validated: partition count,
 * provider and its conf, operators and the schema of every store.
 */
record StateLayout(Checkpoint checkpoint, long lastCommitted, int partitions, String provider,
    List<StatefulOperator> operators, List<StoreSpec> stores, StateStoreConf storeConf) {

  static final String HDFS_PROVIDER =
      "org.apache.spark.sql.execution.streaming.state.HDFSBackedStateStoreProvider";
  static final String ROCKSDB_PROVIDER =
      "org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider";
  static final Set<String> SUPPORTED_OPERATORS =
      Set.of("stateStoreSave", "dedupe", "dedupeWithinWatermark");

  boolean rocksDb() {
    return provider.equals(ROCKSDB_PROVIDER);
  }

  String codec() {
    return storeConf.compressionCodec();
  }

  /**
   * Reads and validates the layout. With {@code requireSupported}, operators this version cannot
   * repartition are refused; without, their stores are left out (for inspection).
   */
  static StateLayout read(SparkSession spark, Checkpoint checkpoint, boolean requireSupported) {
    return read(spark, checkpoint, requireSupported, false);
  }

  /**
   * With {@code allowPendingBatch}, a planned but uncommitted last batch is accepted and the layout
   * of the last committed batch is read: the on-demand path checks a checkpoint this way before it
   * lets the pending batch run.
   */
  static StateLayout read(SparkSession spark, Checkpoint checkpoint, boolean requireSupported,
      boolean allowPendingBatch) {
    CheckpointFiles files = checkpoint.files();
    long committed = checkpoint.lastCommittedBatch();
    long planned = checkpoint.lastPlannedBatch();
    if (committed < 0 && allowPendingBatch) {
      throw new StateShiftException(Reason.UNCOMMITTED_BATCH,
          "Checkpoint " + files.root() + " has no committed batch yet. Run the query until it "
              + "commits one batch, stop it, then change the partition count.");
    }
    if (planned < 0) {
      throw new StateShiftException(Reason.UNCOMMITTED_BATCH,
          "Checkpoint " + files.root() + " has no batch yet. Run the query until it commits one "
              + "batch, stop it, then repartition.");
    }
    if (committed < planned && !allowPendingBatch) {
      throw new StateShiftException(Reason.UNCOMMITTED_BATCH,
          "The last planned batch " + planned + " of checkpoint " + files.root() + " was not "
              + "committed (last committed: " + committed + "). Its state must be completed with "
              + "the old layout first, or an exactly-once sink could see its output twice. Start "
              + "the query once without changes so it finishes batch " + planned + ", stop it, "
              + "then repartition.");
    }
    List<StatefulOperator> operators = checkpoint.operators();
    if (operators.isEmpty()) {
      throw new StateShiftException(Reason.STATELESS_QUERY,
          "Checkpoint " + files.root() + " belongs to a stateless query (no state/ folder): "
              + "there is no state to repartition. Change spark.sql.shuffle.partitions instead.");
    }
    OffsetLogEntry offsets = checkpoint.offsets(committed);
    checkpoint.commitText(committed);
    int partitions = offsets.shufflePartitions();
    if (partitions <= 0) {
      throw Checkpoint.corrupt(files, "offsets/" + committed + " records no valid "
          + OffsetLogEntry.SHUFFLE_PARTITIONS);
    }
    if (requireSupported) {
      for (StatefulOperator op : operators) {
        if (!SUPPORTED_OPERATORS.contains(op.name())) {
          throw new StateShiftException(Reason.UNSUPPORTED_OPERATOR,
              "Operator " + op.id() + " (" + op.name() + ") cannot be repartitioned by this "
                  + "version of stateshift; supported are " + SUPPORTED_OPERATORS + ". The "
                  + "checkpoint was not changed.");
        }
      }
    }
    Map<String, String> conf = offsets.conf();
    if (requireSupported
        && "false".equals(conf.getOrDefault(OffsetLogEntry.STRICT_DISTRIBUTION, "false"))) {
      throw new StateShiftException(Reason.UNSUPPORTED_CHECKPOINT,
          "Checkpoint " + files.root() + " was written with " + OffsetLogEntry.STRICT_DISTRIBUTION
              + "=false (or by a Spark version before 3.3), so its state may be placed by a subset "
              + "of the key and cannot be redistributed safely.");
    }
    String provider = Optional.ofNullable(offsets.providerClass()).orElse(HDFS_PROVIDER);
    if (!provider.equals(HDFS_PROVIDER) && !provider.equals(ROCKSDB_PROVIDER)) {
      throw new StateShiftException(Reason.UNSUPPORTED_CHECKPOINT,
          "State store provider " + provider + " is not supported; stateshift repartitions the "
              + "HDFS-backed and RocksDB providers.");
    }
    checkPartitionFolders(files, operators, partitions, committed + 1,
        provider.equals(ROCKSDB_PROVIDER));
    SQLConf sqlConf = ((org.apache.spark.sql.classic.SparkSession) spark).sessionState().conf()
        .clone();
    conf.forEach(sqlConf::setConfString);
    StateStoreConf storeConf =
        new StateStoreConf(sqlConf, scala.collection.immutable.Map$.MODULE$.empty());
    if (storeConf.rowChecksumEnabled() && !provider.equals(ROCKSDB_PROVIDER)) {
      throw new StateShiftException(Reason.UNSUPPORTED_CHECKPOINT,
          "Row checksums (spark.sql.streaming.stateStore.rowChecksum.enabled) on the HDFS-backed "
              + "store are not supported yet.");
    }
    List<StoreSpec> stores = new ArrayList<>();
    for (StatefulOperator op : operators) {
      if (!SUPPORTED_OPERATORS.contains(op.name())) {
        continue;
      }
      for (StatefulOperator.Store store : op.stores()) {
        StateStoreColFamilySchema schema = readSchema(files, op, store);
        stores.add(new StoreSpec(stores.size(), op.id(), op.name(), store.name(),
            store.numColsPrefixKey(), schema.keySchema(), schema.valueSchema()));
      }
    }
    return new StateLayout(checkpoint, committed, partitions, provider, operators, stores,
        storeConf);
  }

  private static void checkPartitionFolders(CheckpointFiles files, List<StatefulOperator> operators,
      int partitions, long version, boolean rocksDb) {
    for (StatefulOperator op : operators) {
      for (FileStatus child : files.list(files.path("state/" + op.id()))) {
        String name = child.getPath().getName();
        if (name.matches("\\d+") && Integer.parseInt(name) >= partitions) {
          throw Checkpoint.corrupt(files, "state/" + op.id() + "/" + name + " is a partition "
              + "folder beyond the " + partitions + " partitions the offset log records");
        }
      }
      for (StatefulOperator.Store store : op.stores()) {
        for (int p = 0; p < partitions; p++) {
          String dir = StatefulOperator.storeDir(op.id(), p, store.name());
          boolean found = false;
          for (FileStatus file : files.list(files.path(dir))) {
            String name = file.getPath().getName();
            found |= rocksDb
                ? name.matches(version + "(_[^.]*)?\\.(zip|changelog)")
                : name.equals(version + ".delta") || name.equals(version + ".snapshot");
          }
          if (!found) {
            throw Checkpoint.corrupt(files, dir + " has no state file for version " + version
                + " (the state of committed batch " + (version - 1) + ")");
          }
        }
      }
    }
  }

  private static StateStoreColFamilySchema readSchema(CheckpointFiles files, StatefulOperator op,
      StatefulOperator.Store store) {
    StateStoreId id = new StateStoreId(files.path("state").toString(), op.id(), 0, store.name());
    try {
      List<StateStoreColFamilySchema> schemas = ScalaBridge.javaList(
          new StateSchemaCompatibilityChecker(new StateStoreProviderId(id, UUID.randomUUID()),
              files.conf(), ScalaBridge.list(List.of()), ScalaBridge.none(), false)
              .readSchemaFile());
      return schemas.stream().filter(s -> s.colFamilyName().equals("default")).findFirst()
          .orElseThrow(() -> new IllegalStateException("no default column family"));
    } catch (RuntimeException e) {
      throw Checkpoint.corrupt(files, "the state schema of operator " + op.id() + " store "
          + store.name() + " cannot be read (" + e.getMessage() + ")");
    }
  }
}
