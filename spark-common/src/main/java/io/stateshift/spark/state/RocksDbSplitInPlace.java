package io.stateshift.spark.state;

import io.stateshift.checkpoint.PlacementCheck;
import io.stateshift.config.StateShiftConf;
import io.stateshift.spark.state.StateRedistributionJob.ReadOutcome;
import org.apache.spark.sql.RuntimeConfig;
import org.apache.spark.sql.execution.streaming.state.ReadStateStore;

/**
 * The RocksDB file exchange with each old partition split straight into its new ones ({@link
 * RocksDbSstExchange#splitToMultiple}): the read tasks write the new partitions, and there is no
 * write stage. Applies where the RocksDB file exchange does and the new count is the old one (an
 * edit) or a multiple of it, with no migration, new versions committed directly (state checkpoint
 * format v1), every key's placement checked with a check that refuses a misplaced key, old versions
 * read from their snapshots (without changelog checkpointing, where the exchange's changelog split
 * is quicker), and the split in place not turned off. A version without a snapshot is loaded with
 * Spark's provider, which replays the changelogs.
 */
final class RocksDbSplitInPlace extends RocksDbFiles {

  RocksDbSplitInPlace(RedistributionContext ctx) {
    super(ctx);
  }

  @Override
  public boolean applies(RuntimeConfig conf) {
    return super.applies(conf) && splitsInPlace(conf);
  }

  private boolean splitsInPlace(RuntimeConfig conf) {
    if (ctx.newPartitions < ctx.oldPartitions
        || ctx.newPartitions % ctx.oldPartitions != 0
        || ctx.writeStoreConf != ctx.storeConf // a migration: written with other settings than read
        || !RocksDbSnapshotReader.ENABLED
        || !RocksDbDirectCommit.applies(ctx.writeStoreConf)
        || !StateShiftConf.ROCKSDB_SPLIT_IN_PLACE.from(key -> conf.get(key, null))
        || org.apache.spark.sql.execution.streaming.state.RocksDBConf$.MODULE$
            .apply(ctx.storeConf)
            .enableChangelogCheckpointing()) {
      return false;
    }
    return ctx.stores.stream()
        .allMatch(
            spec -> {
              PlacementCheck.Mode mode = ctx.placementChecks.get(spec.slot());
              return !spec.hasColumnFamilies()
                  && (mode == PlacementCheck.Mode.STRICT || mode == PlacementCheck.Mode.DERIVED);
            });
  }

  @Override
  boolean writesInReadStage() {
    return true;
  }

  @Override
  String readStageLabel() {
    return "splitting state partitions";
  }

  @Override
  ReadOutcome splitSnapshot(
      SplitTask split, RocksDbSnapshotReader snapshot, RocksDbTaskScope scope) {
    return splitToMultiple(split, snapshot.db(), scope);
  }

  @Override
  ReadOutcome splitChangelogs(
      SplitTask split, SourceTask task, scala.Option<String> checkpointId, RocksDbTaskScope scope) {
    return null;
  }

  @Override
  ReadOutcome splitStore(SplitTask split, ReadStateStore store, RocksDbTaskScope scope) {
    return splitToMultiple(split, RocksDbSstExchange.nativeDb(store), scope);
  }

  /** {@link RocksDbSstExchange#splitToMultiple} of one old partition, read from {@code db}. */
  private ReadOutcome splitToMultiple(
      SplitTask split, org.rocksdb.RocksDB db, RocksDbTaskScope scope) {
    return RocksDbSstExchange.splitToMultiple(
        split,
        db,
        scope,
        ctx.oldPartitions,
        ctx.stagedStateRoot(),
        ctx.writeBatchId + 1,
        ctx.lastTarget());
  }
}
