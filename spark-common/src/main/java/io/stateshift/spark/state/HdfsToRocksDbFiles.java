package io.stateshift.spark.state;

import io.stateshift.checkpoint.StoreSpec;
import io.stateshift.checkpoint.spi.Redistribution.PartitionCount;
import io.stateshift.spark.line.StateCalls;
import io.stateshift.spark.state.StateRedistributionJob.ReadOutcome;
import io.stateshift.spark.state.StateRedistributionJob.StagedFile;
import java.util.List;
import org.apache.spark.sql.RuntimeConfig;

/**
 * HDFS-backed state to RocksDB (a migration) without a shuffle: the HDFS file exchange's read side,
 * each entry re-encoded for RocksDB and staged as sorted runs ({@link RocksDbRunStaging}), and the
 * RocksDB file exchange's write side. Applies where both file exchanges would: state checkpoint
 * format v1 on the read side, RocksDB in SST mode on the write side, no column families, no edit,
 * unless the session asks for the shuffle.
 */
final class HdfsToRocksDbFiles extends FileExchange {

  HdfsToRocksDbFiles(RedistributionContext ctx) {
    super(ctx);
  }

  @Override
  public boolean applies(RuntimeConfig conf) {
    return readsHdfsFiles(conf)
        && ctx.writeRocksDb
        && !ctx.edits.any()
        && ctx.rocksDbMode == RocksDbSnapshotWriter.Mode.SST
        && StateCalls.ROCKSDB_FAST_PATHS_UNAVAILABLE == null // 3.5: SST ingestion only
        && !StateExchange.shuffleAsked(conf, RocksDbSstExchange.EXCHANGE_CONF, "files");
  }

  @Override
  public String description() {
    return "hdfs-to-rocksdb-file-exchange (sorted runs, no shuffle)";
  }

  @Override
  boolean rocksDbScope() {
    return true; // the write side's; the read side's conf is not RocksDB's, so it has none
  }

  @Override
  ReadOutcome split(SourceTask task, RocksDbTaskScope scope) {
    return splitHdfs(
        task,
        (split, partitionDir) ->
            HdfsFileExchange.split(
                split,
                partitionDir,
                ctx.readVersion,
                HdfsFileExchange.codec(ctx.compressionCodec),
                ctx.checkpointRoot(),
                (stagingFs, stagingDir) -> new RocksDbRunStaging(split, stagingFs, stagingDir)));
  }

  @Override
  PartitionCount write(
      StoreSpec spec, int partition, List<StagedFile> files, RocksDbTaskScope scope) {
    return ingestRuns(spec, partition, files, scope);
  }
}
