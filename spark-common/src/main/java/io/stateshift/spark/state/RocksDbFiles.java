package io.stateshift.spark.state;

import io.stateshift.StateShiftException;
import io.stateshift.checkpoint.StoreSpec;
import io.stateshift.checkpoint.spi.Redistribution.PartitionCount;
import io.stateshift.spark.line.StateCalls;
import io.stateshift.spark.state.StateRedistributionJob.ReadOutcome;
import io.stateshift.spark.state.StateRedistributionJob.StagedFile;
import java.util.List;
import org.apache.spark.sql.RuntimeConfig;
import org.apache.spark.sql.execution.streaming.state.ReadStateStore;
import org.apache.spark.sql.execution.streaming.state.StateStoreId;
import org.apache.spark.sql.execution.streaming.state.StateStoreProvider;

/**
 * RocksDB to RocksDB as raw sorted runs merged into one SST file per new partition, no shuffle
 * ({@link RocksDbSstExchange}): applies in SST mode to a repartition or an edit that adds no
 * entries, unless the session asks for the shuffle. Each old version is read from its snapshot
 * where it has one, else split from its changelogs, else loaded with Spark's provider.
 */
class RocksDbFiles extends FileExchange {

  RocksDbFiles(RedistributionContext ctx) {
    super(ctx);
  }

  @Override
  public boolean applies(RuntimeConfig conf) {
    return ctx.readRocksDb
        && !ctx.edits.adds()
        && ctx.rocksDbMode == RocksDbSnapshotWriter.Mode.SST
        && StateCalls.ROCKSDB_FAST_PATHS_UNAVAILABLE == null // 3.5: SST ingestion only
        && !StateExchange.shuffleAsked(conf, RocksDbSstExchange.EXCHANGE_CONF, "files");
  }

  @Override
  public String description() {
    return "rocksdb-sst-exchange (raw bytes, no shuffle)";
  }

  @Override
  boolean rocksDbScope() {
    return true;
  }

  /** Splits one old partition read from its snapshot ({@code split} names the snapshot's zip). */
  ReadOutcome splitSnapshot(
      SplitTask split, RocksDbSnapshotReader snapshot, RocksDbTaskScope scope) {
    return RocksDbSstExchange.split(split, snapshot, scope);
  }

  /**
   * Splits one old partition that has no snapshot of the version from its changelogs, or null where
   * they cannot give it (the provider loads it instead).
   */
  ReadOutcome splitChangelogs(
      SplitTask split, SourceTask task, scala.Option<String> checkpointId, RocksDbTaskScope scope) {
    StoreSpec spec = split.spec();
    if (!RocksDbSnapshotReader.ENABLED
        || scope == null
        || !checkpointId.isEmpty()
        || spec.hasColumnFamilies()) {
      return null;
    }
    return RocksDbChangelogSplit.split(
        split,
        scope,
        new StateStoreId(ctx.liveStateRoot, spec.operatorId(), task.partition(), spec.storeName()),
        ctx.readVersion,
        HdfsFileExchange.codec(ctx.compressionCodec),
        ctx.checkpointRoot());
  }

  /** Splits one old partition loaded with Spark's provider. */
  ReadOutcome splitStore(SplitTask split, ReadStateStore store, RocksDbTaskScope scope) {
    return RocksDbSstExchange.split(split, store);
  }

  @Override
  ReadOutcome split(SourceTask task, RocksDbTaskScope scope) {
    StoreSpec spec = ctx.stores.get(task.slot());
    TaskTimer timer = new TaskTimer("read " + spec.storeName() + "/" + task.partition());
    String source = ctx.versionFiles(spec, task.partition());
    SplitTask split = splitTask(task, source, timer);
    scala.Option<String> checkpointId =
        StateStores.checkpointId(ctx.readCheckpointIds, spec, task.partition());
    try {
      if (RocksDbSnapshotReader.ENABLED && scope != null) {
        try (RocksDbSnapshotReader snapshot =
            RocksDbSnapshotReader.open(
                scope,
                new StateStoreId(
                    ctx.liveStateRoot, spec.operatorId(), task.partition(), spec.storeName()),
                ctx.readVersion,
                checkpointId,
                ctx.hadoopConf(),
                timer,
                split.listedFiles())) {
          if (snapshot != null) {
            timer.lap("open-read-only");
            String zip =
                spec.dir(task.partition())
                    + "/"
                    + ctx.readVersion
                    + (checkpointId.isDefined() ? "_" + checkpointId.get() : "")
                    + ".zip";
            return splitSnapshot(split.withSource(zip), snapshot, scope);
          }
        }
      }
      // Without a snapshot of this version (changelog checkpointing on when it was written)
      ReadOutcome fromChangelogs = splitChangelogs(split, task, checkpointId, scope);
      if (fromChangelogs != null) {
        return fromChangelogs;
      }
      StateStoreProvider provider =
          StateStores.open(
              ctx.liveStateRoot, spec, task.partition(), ctx.storeConf, ctx.hadoopConf());
      try {
        ReadStateStore store = StateStores.loadToRead(provider, ctx.readVersion, checkpointId);
        timer.lap("load");
        try {
          return splitStore(split, store, scope);
        } finally {
          StateCalls.release(store);
        }
      } finally {
        provider.close();
      }
    } catch (RuntimeException e) {
      if (!(e instanceof StateShiftException) && RocksDbSstExchange.isCorruption(e)) {
        throw ctx.rocksDbDamage(spec, task.partition(), source, e);
      }
      throw e;
    } finally {
      timer.lap("close");
      timer.report();
    }
  }

  @Override
  PartitionCount write(
      StoreSpec spec, int partition, List<StagedFile> files, RocksDbTaskScope scope) {
    return ingestRuns(ctx.writeSpec(spec.slot()), partition, files, scope);
  }
}
