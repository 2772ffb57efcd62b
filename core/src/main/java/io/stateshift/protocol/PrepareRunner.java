package io.stateshift.protocol;

import io.stateshift.PrepareResult;
import io.stateshift.StateShiftException;
import io.stateshift.StateShiftException.Reason;
import io.stateshift.checkpoint.Checkpoint;
import io.stateshift.checkpoint.CheckpointFiles;
import io.stateshift.checkpoint.PreparedManifest;
import io.stateshift.checkpoint.SessionSettings;
import io.stateshift.checkpoint.StateLayout;
import io.stateshift.checkpoint.StoreSpec;
import io.stateshift.checkpoint.TailFiles;
import io.stateshift.checkpoint.spi.Redistribution;
import io.stateshift.checkpoint.spi.SparkLines;
import io.stateshift.config.StateShiftConf;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.UUID;
import java.util.function.Consumer;
import org.apache.hadoop.fs.FileStatus;
import org.apache.hadoop.fs.Path;
import org.apache.spark.sql.SparkSession;

/**
 * {@code stateshift prepare}: writes the state of the last committed batch V in the new partition
 * count under {@code _stateshift/prepared/<id>/}, while the query may be running. It takes no lock
 * (a running query never waits for it), reads only state files Spark never rewrites (the snapshot
 * and delta files of version V+1, or RocksDB's zip, SST and changelog files) and writes only under
 * its own folder; the manifest is written last, then older prepared layouts are removed. See
 * docs/protocol.md.
 */
public final class PrepareRunner {
  private final SparkSession spark;
  private final CheckpointFiles files;
  private final int target;
  private final Consumer<String> progress;

  public PrepareRunner(
      SparkSession spark, String checkpointLocation, int target, Consumer<String> progress) {
    this.spark = spark;
    this.files = CheckpointFiles.at(checkpointLocation, SessionSettings.hadoopConf(spark));
    this.target = target;
    this.progress = progress;
  }

  public PrepareResult execute() {
    long started = System.currentTimeMillis();
    Checkpoint checkpoint = Checkpoint.load(files);
    if (target <= 0) {
      throw new StateShiftException(
          Reason.INVALID_PARTITION_COUNT,
          "The partition count must be at least 1, got " + target + ".");
    }
    java.util.Optional<RepartitionJournal> pending = RepartitionJournal.read(files);
    if (pending.isPresent()) {
      throw new StateShiftException(
          Reason.INTERRUPTED_REPARTITION,
          "A "
              + pending.get().kind()
              + " of "
              + files.root()
              + " is under way or was interrupted; finish it ("
              + pending.get().finishingCommand(files.root().toString())
              + ") before preparing another. Nothing was written.");
    }
    String shareKey = StateShiftConf.PREPARE_CPU_SHARE.key();
    double share = StateShiftConf.PREPARE_CPU_SHARE.from(spark);
    if (!(share > 0 && share <= 1)) {
      throw new StateShiftException(
          Reason.INVALID_ARGUMENT,
          shareKey
              + " must be above 0 and at most 1 (1: tasks never wait); it is "
              + share
              + ". Nothing was written.");
    }
    // a running query may have planned its next batch: the layout is the last committed one's
    StateLayout layout = StateLayout.read(spark, checkpoint, true, true);
    refuseUnsupported(layout);
    long batch = layout.lastCommitted();
    String id = "batch-" + batch + "-" + UUID.randomUUID();
    Path dir = PreparedManifest.dir(files, id);
    Path staged = PreparedManifest.stagedDir(files, id);
    progress.accept(
        "preparing batch "
            + batch
            + " for "
            + target
            + " partitions under "
            + files.relativize(dir));
    PreparedManifest manifest;
    spark.streams(); // creates the StateStoreCoordinator the RocksDB provider reports to
    // the tasks read the share from their job's properties: only prepare's tasks hold back
    String savedShare = spark.sparkContext().getLocalProperty(shareKey);
    spark.sparkContext().setLocalProperty(shareKey, Double.toString(share));
    try {
      Redistribution job = SparkLines.get().redistribution(layout, staged.toString(), target);
      job.checkPlacement(RepartitionRunner.placementChecks(layout));
      Redistribution.Outcome outcome = runJob(job, id);
      manifest = manifest(layout, id, staged, outcome);
      files.writeNew(new Path(dir, PreparedManifest.MANIFEST), manifest.toJson());
    } catch (RuntimeException e) {
      files.deleteQuietly(dir);
      throw e;
    } finally {
      spark.sparkContext().setLocalProperty(shareKey, savedShare);
    }
    int removed = removeAllBut(id);
    return new PrepareResult(
        files.root().toString(),
        Optional.of(
            new PrepareResult.Prepared(
                id,
                manifest.queryId(),
                batch,
                layout.partitions(),
                target,
                manifest.rows(),
                manifest.stores().stream()
                    .flatMap(s -> s.partitions().stream())
                    .mapToLong(PreparedManifest.PartitionFile::bytes)
                    .sum())),
        removed,
        System.currentTimeMillis() - started);
  }

  /** Removes every prepared layout of the checkpoint, finished or not. */
  public PrepareResult cancel() {
    long started = System.currentTimeMillis();
    Checkpoint.load(files);
    Path root = files.path(PreparedManifest.DIR);
    int removed = files.exists(root) ? files.list(root).size() : 0;
    files.deleteQuietly(root);
    deleteIfEmpty(files.path(RepartitionJournal.DIR));
    return new PrepareResult(
        files.root().toString(), Optional.empty(), removed, System.currentTimeMillis() - started);
  }

  private void refuseUnsupported(StateLayout layout) {
    if (layout.partitions() == target) {
      throw new StateShiftException(
          Reason.SAME_PARTITION_COUNT,
          "The state of "
              + files.root()
              + " already has "
              + target
              + " partitions. Nothing to do.");
    }
    String unsupported = PreparedLayouts.columnFamilyProblem(layout);
    if (unsupported != null) {
      throw new StateShiftException(
          Reason.UNSUPPORTED_CHECKPOINT,
          "prepare supports the HDFS-backed state store and RocksDB with changelog checkpointing "
              + "(column families without row checksums or the Avro encoding); "
              + files.root()
              + " uses "
              + unsupported
              + ". Repartition it at the restart instead (stateshift repartition, or "
              + "spark.sql.streaming.stateStore.partitions), which moves all its state. Nothing "
              + "was written.");
    }
    if (layout.rocksDb()) {
      // the batches after the prepared one are replayed from RocksDB's changelog files: the
      // prepared version's own changelog shows the query writes them (a repartition's batch is
      // a snapshot of stateshift's, whose successors the query writes)
      long version = layout.lastCommitted() + 1;
      TailFiles logs = TailFiles.of(layout, version, version);
      for (StoreSpec spec : layout.stores()) {
        String name = logs.name(spec, 0, version);
        Path changelog =
            files.path(
                spec.dir(0)
                    + "/"
                    + (name != null ? name : version + PreparedManifest.tailSuffix(true)));
        if (name == null || !files.exists(changelog)) {
          long last = layout.lastCommitted();
          if (RepartitionHistory.latest(files).map(j -> j.newBatch() == last).orElse(false)) {
            // stateshift's repartition wrote that batch's state as a snapshot, with no changelog
            // file; prepare reads the snapshot, and the batches after it are the query's own
            continue;
          }
          throw new StateShiftException(
              Reason.UNSUPPORTED_CHECKPOINT,
              "prepare on RocksDB needs changelog checkpointing: the batches committed after the "
                  + "prepared one are replayed from RocksDB's changelog files, and "
                  + files.relativize(changelog)
                  + " (batch "
                  + layout.lastCommitted()
                  + ") is not there. Run the query with "
                  + "spark.sql.streaming.stateStore.rocksdb.changelogCheckpointing.enabled=true, "
                  + "then prepare again, or repartition at the restart without a prepared "
                  + "layout. Nothing was written.");
        }
      }
    }
  }

  private Redistribution.Outcome runJob(Redistribution job, String id) {
    String group = "stateshift-prepare-" + id;
    java.util.Map<String, String> saved = new java.util.HashMap<>();
    for (String key :
        List.of("spark.jobGroup.id", "spark.job.description", "spark.job.interruptOnCancel")) {
      saved.put(key, spark.sparkContext().getLocalProperty(key));
    }
    spark
        .sparkContext()
        .setJobGroup(group, "stateshift: prepare " + target + " partitions " + files.root(), false);

    progress.accept("moving state: " + job.writeStrategy(spark));
    try (JobProgress tasks = new JobProgress(spark, group, progress)) {
      try {
        return job.run(spark);
      } catch (Exception e) { // Spark's job failures arrive as checked SparkExceptions too
        tasks.cancelAndAwaitTasks(); // its files are removed next
        throw e;
      }
    } finally {
      saved.forEach((key, value) -> spark.sparkContext().setLocalProperty(key, value));
    }
  }

  /** The manifest of the staged layout: its files' lengths, rows and SHA-256 per partition. */
  private PreparedManifest manifest(
      StateLayout layout, String id, Path staged, Redistribution.Outcome outcome) {
    long version = layout.lastCommitted() + 2; // the version the redistribution writes
    List<String> paths = new ArrayList<>();
    // the version's own file: the HDFS-backed snapshot, or RocksDB's zip (which names its SSTs)
    String preparedSuffix = layout.rocksDb() ? ".zip" : ".snapshot";
    RepartitionRunner.summarize(layout, outcome, "; nothing was prepared.");
    for (StoreSpec spec : layout.stores()) {
      for (int p = 0; p < target; p++) {
        // under state checkpoint format v2 the version's files are named by its id too
        String versionId = null;
        for (Redistribution.PartitionCount c : outcome.written()) {
          if (c.slot() == spec.slot() && c.partition() == p) {
            versionId = c.checkpointId();
          }
        }
        String name = version + (versionId != null ? "_" + versionId : "") + preparedSuffix;
        paths.add(new Path(new Path(staged, spec.dir(p)), name).toString());
      }
    }
    progress.accept("checking " + paths.size() + " prepared files");
    List<String> digests = SparkLines.get().sha256(spark, files.conf(), paths);
    List<PreparedManifest.Store> stores = new ArrayList<>();
    int i = 0;
    for (StoreSpec spec : layout.stores()) {
      List<PreparedManifest.PartitionFile> partitions = new ArrayList<>();
      for (int p = 0; p < target; p++, i++) {
        Path file = new Path(paths.get(i));
        long rows = 0;
        for (Redistribution.PartitionCount c : outcome.written()) {
          if (c.slot() == spec.slot() && c.partition() == p) {
            rows = c.rows();
          }
        }
        partitions.add(
            new PreparedManifest.PartitionFile(
                p, files.relativize(file), length(file), rows, digests.get(i)));
      }
      stores.add(
          new PreparedManifest.Store(
              spec.operatorId(),
              spec.operatorName(),
              spec.storeName(),
              spec.keySchema().json(),
              spec.valueSchema().json(),
              partitions));
    }
    return new PreparedManifest(
        PreparedManifest.FORMAT,
        id,
        layout.checkpoint().queryId(),
        layout.lastCommitted(),
        layout.partitions(),
        target,
        layout.provider(),
        PreparedLayouts.codec(layout),
        System.currentTimeMillis(),
        stores);
  }

  private long length(Path file) {
    try {
      return files.fs().getFileStatus(file).getLen();
    } catch (IOException e) {
      throw new UncheckedIOException("Cannot read " + file + ": " + e.getMessage(), e);
    }
  }

  /** Removes the prepared layouts other than {@code keep}; returns how many. */
  private int removeAllBut(String keep) {
    int removed = 0;
    for (FileStatus status : files.list(files.path(PreparedManifest.DIR))) {
      if (!status.getPath().getName().equals(keep)) {
        files.deleteQuietly(status.getPath());
        removed++;
      }
    }
    return removed;
  }

  private void deleteIfEmpty(Path dir) {
    if (files.exists(dir) && files.list(dir).isEmpty()) {
      files.deleteQuietly(dir);
    }
  }
}
