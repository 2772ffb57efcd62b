package io.stateshift.spark.state;

import io.stateshift.StateShiftException;
import io.stateshift.checkpoint.PlacementCheck;
import io.stateshift.checkpoint.StateCheckpointIds;
import io.stateshift.checkpoint.StateFileDamage;
import io.stateshift.checkpoint.StoreSpec;
import io.stateshift.checkpoint.spi.Redistribution.Outcome;
import io.stateshift.checkpoint.spi.Redistribution.PartitionCount;
import io.stateshift.protocol.FailPoints;
import java.io.IOException;
import java.io.Serializable;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.Path;
import org.apache.spark.api.java.JavaSparkContext;
import org.apache.spark.broadcast.Broadcast;
import org.apache.spark.sql.execution.streaming.state.StateStoreConf;
import org.apache.spark.util.CollectionAccumulator;
import org.apache.spark.util.SerializableConfiguration;

/**
 * What a {@link StateRedistributionJob}'s exchanges and their tasks share: the stores, the counts
 * and versions, the read and write settings, the staging root, the edit, and the accumulators the
 * tasks report to. Serializable: every task of the job carries it; the driver sets the accumulators
 * and the broadcast Hadoop conf before the tasks that use them are serialized.
 */
final class RedistributionContext implements Serializable {

  final String liveStateRoot;
  final String stagingRoot;

  /** The store settings the old layout is read with (its provider's). */
  final StateStoreConf storeConf;

  /**
   * The store settings the new partitions are written with: the read side's, or another provider's
   * for a migration (only the shuffle moves state between providers).
   */
  final StateStoreConf writeStoreConf;

  /** The driver's Hadoop conf; tasks read {@link #sharedHadoopConf} instead. */
  private final transient SerializableConfiguration hadoopConf;

  /**
   * The Hadoop conf as a broadcast, set by {@link #shareHadoopConf}: an executor deserializes it
   * once, and a local-mode task not at all (as a field of the context it was deserialized by every
   * task: a thirtieth of a read task's CPU).
   */
  private Broadcast<SerializableConfiguration> sharedHadoopConf;

  final List<StoreSpec> stores;
  final int oldPartitions;
  final int newPartitions;
  final long readVersion;
  final long writeBatchId;

  /** Whether the old layout is RocksDB's; else HDFS-backed. */
  final boolean readRocksDb;

  /** Whether the new partitions are written for RocksDB; else HDFS-backed. */
  final boolean writeRocksDb;

  final String compressionCodec;
  final StateCheckpointIds readCheckpointIds;

  /** For RocksDB: SST ingestion or the provider's puts; null for the HDFS-backed store. */
  final RocksDbSnapshotWriter.Mode rocksDbMode;

  /** What an edit or an evolution does to the entries; nothing for a repartition or a migration. */
  final StateEdits edits = new StateEdits();

  /** How each store's keys are checked against their old partition, by slot; absent: not. */
  Map<Integer, PlacementCheck.Mode> placementChecks = Map.of();

  CollectionAccumulator<String> placementNotes;
  CollectionAccumulator<PartitionCount> readCounts;
  CollectionAccumulator<PartitionCount> deletedCounts;

  /** The entries an upsert added, counted on the driver. */
  List<PartitionCount> added = List.of();

  /** The entries an edit's file exchange left out, counted on the driver from the read outcomes. */
  List<PartitionCount> fileExchangeLeftOut = List.of();

  /** Whether tasks delete Spark's RocksDB folders in-process ({@link InProcessDeletes}). */
  boolean inProcessDeletes = true;

  RedistributionContext(StateRedistributionJob.Setup setup) {
    this.readCheckpointIds = setup.readCheckpointIds();
    this.liveStateRoot = setup.liveStateRoot();
    this.stagingRoot = setup.stagingRoot();
    this.storeConf = setup.storeConf();
    this.writeStoreConf = setup.writeStoreConf();
    this.hadoopConf = new SerializableConfiguration(setup.hadoopConf());
    this.stores = List.copyOf(setup.stores());
    this.oldPartitions = setup.oldPartitions();
    this.newPartitions = setup.newPartitions();
    // Batch b commits state version b + 1; the repartition writes batch N + 1, so version N + 2.
    this.readVersion = setup.lastCommittedBatch() + 1;
    this.writeBatchId = setup.lastCommittedBatch() + 1;
    this.readRocksDb = setup.readRocksDb();
    this.writeRocksDb = setup.writeRocksDb();
    this.compressionCodec = setup.compressionCodec();
    // column families (transformWithState) go through the provider's puts: see ColumnFamilyStates
    this.rocksDbMode =
        !writeRocksDb
            ? null
            : stores.stream().anyMatch(StoreSpec::hasColumnFamilies)
                ? RocksDbSnapshotWriter.Mode.PUTS
                : RocksDbSnapshotWriter.mode(writeStoreConf);
  }

  /** The Hadoop conf, on the driver and in tasks. */
  Configuration hadoopConf() {
    return sharedHadoopConf != null ? sharedHadoopConf.value().value() : hadoopConf.value();
  }

  /** Broadcasts the Hadoop conf for the tasks, until {@link #unshareHadoopConf}. */
  void shareHadoopConf(JavaSparkContext jsc) {
    sharedHadoopConf = jsc.broadcast(hadoopConf);
  }

  void unshareHadoopConf() {
    sharedHadoopConf.destroy();
    sharedHadoopConf = null;
  }

  /**
   * Registers the read and deleted counts the shuffle's and the in-place rewrite's tasks add to.
   */
  void registerCounts(JavaSparkContext jsc) {
    readCounts = new CollectionAccumulator<>();
    jsc.sc().register(readCounts, "stateshift.readCounts");
    deletedCounts = new CollectionAccumulator<>();
    jsc.sc().register(deletedCounts, "stateshift.deletedCounts");
  }

  /** One read per old (store, partition), each task listing its own files. */
  List<SourceTask> sourceTasks() {
    List<SourceTask> sources = new ArrayList<>();
    for (StoreSpec store : stores) {
      for (int p = 0; p < oldPartitions; p++) {
        sources.add(new SourceTask(store.slot(), p, null));
      }
    }
    return sources;
  }

  /** The job's outcome, with the placement notes its tasks made. */
  Outcome outcome(List<PartitionCount> read, List<PartitionCount> written) {
    return new Outcome(
        List.copyOf(read), List.copyOf(written), List.copyOf(placementNotes.value()));
  }

  /** The check of one old partition of a store, or null when its keys are not checked. */
  PlacementCheck placementCheck(StoreSpec spec, int partition) {
    PlacementCheck.Mode mode = placementChecks.get(spec.slot());
    if (mode == null) {
      return null;
    }
    CollectionAccumulator<String> notes = placementNotes;
    return new PlacementCheck(
        mode, spec, oldPartitions, partition, checkpointRoot(), note -> notes.add(note));
  }

  String checkpointRoot() {
    return new Path(liveStateRoot).getParent().toString();
  }

  /** The checkpoint files a version of a partition is read from, for errors. */
  String versionFiles(StoreSpec spec, int partition) {
    return spec.dir(partition) + " version " + readVersion;
  }

  /**
   * The refusal for a version that RocksDB reports damaged, naming the checkpoint's SST file where
   * RocksDB names its local copy (Spark stores local {@code 000009.sst} as {@code
   * SSTs/000009-<uuid>.sst}).
   */
  StateShiftException rocksDbDamage(StoreSpec spec, int partition, String source, Throwable e) {
    String problem = e.getMessage();
    for (Throwable t = e; t != null; t = t.getCause()) {
      if (t instanceof org.rocksdb.RocksDBException) {
        problem = t.getMessage();
      }
    }
    String file = source;
    java.util.regex.Matcher sst =
        java.util.regex.Pattern.compile("(\\d+)\\.sst").matcher(String.valueOf(problem));
    if (sst.find()) {
      Path ssts = new Path(new Path(checkpointRoot(), spec.dir(partition)), "SSTs");
      try {
        List<String> named = new ArrayList<>();
        for (org.apache.hadoop.fs.FileStatus f :
            ssts.getFileSystem(hadoopConf()).listStatus(ssts)) {
          if (f.getPath().getName().startsWith(sst.group(1) + "-")) {
            named.add(spec.dir(partition) + "/SSTs/" + f.getPath().getName());
          }
        }
        if (!named.isEmpty()) {
          file = String.join(", ", named) + " (" + source + ")";
        }
      } catch (IOException | RuntimeException ignored) {
        // the version is named instead
      }
    }
    return StateFileDamage.refusal(checkpointRoot(), file, "RocksDB: " + problem, e);
  }

  long writtenVersion() {
    return writeBatchId + 1;
  }

  /** A store as the write side writes it. */
  StoreSpec writeSpec(int slot) {
    return edits.writeSpec(stores, slot);
  }

  /** The number of the last (store, new partition) target, over all stores. */
  int lastTarget() {
    return stores.size() * newPartitions - 1;
  }

  /** Where the new partitions' state goes in the staging area. */
  String stagedStateRoot() {
    return stagingRoot + "/state";
  }

  /** The snapshot file of an HDFS-backed new partition in the staging area. */
  Path snapshotFile(StoreSpec spec, int partition) {
    return new Path(new Path(stagingRoot, spec.dir(partition)), writtenVersion() + ".snapshot");
  }

  /**
   * How the read side encodes a store's records for the write side: as RocksDB's encoders would
   * where the new partitions are SST files, else null (raw records).
   */
  RocksDbEncoding sstEncoding(int slot) {
    return rocksDbMode == RocksDbSnapshotWriter.Mode.SST
        ? new RocksDbEncoding(writeSpec(slot))
        : null;
  }

  /** First in every task of the job. */
  void beginTask() {
    TaskThrottle.untilThisTaskEnds();
    CompactionThreads.untilThisTaskEnds();
    if (inProcessDeletes) {
      InProcessDeletes.untilThisTaskEnds();
    }
  }

  /** In a write task, before it writes {@code target}: the crash tests' staging fail point. */
  void beginTarget(int target) {
    if (target == lastTarget()) {
      FailPoints.reached("staging-task"); // while other partitions may be half written
    }
  }

  /**
   * What one task's RocksDB stores under {@code stateRoot}, opened with {@code conf}, share; null
   * when {@code conf} is not RocksDB's.
   */
  RocksDbTaskScope taskScope(String stateRoot, StateStoreConf conf) {
    return RocksDbTaskScope.open(stateRoot, stores.get(0), conf, hadoopConf());
  }
}
