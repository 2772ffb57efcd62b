package io.stateshift.spark.state;

import io.stateshift.checkpoint.StoreSpec;
import io.stateshift.checkpoint.spi.Redistribution.PartitionCount;
import io.stateshift.spark.state.StateRedistributionJob.ReadOutcome;
import io.stateshift.spark.state.StateRedistributionJob.StagedFile;
import java.util.List;
import org.apache.spark.sql.RuntimeConfig;

/**
 * HDFS-backed state as raw staged files, no shuffle ({@link HdfsFileExchange}): applies to state
 * checkpoint format v1 without column families, to a repartition or an edit that adds no entries,
 * unless the session asks for the shuffle.
 */
final class HdfsFiles extends FileExchange {

  HdfsFiles(RedistributionContext ctx) {
    super(ctx);
  }

  @Override
  public boolean applies(RuntimeConfig conf) {
    return readsHdfsFiles(conf) && !ctx.writeRocksDb && !ctx.edits.adds();
  }

  @Override
  public String description() {
    return "hdfs-file-exchange (raw bytes, no shuffle)";
  }

  @Override
  boolean rocksDbScope() {
    return false;
  }

  @Override
  ReadOutcome split(SourceTask task, RocksDbTaskScope scope) {
    return splitHdfs(
        task,
        (split, partitionDir) ->
            HdfsFileExchange.split(
                split, partitionDir, ctx.readVersion, ctx.compressionCodec, ctx.checkpointRoot()));
  }

  @Override
  PartitionCount write(
      StoreSpec spec, int partition, List<StagedFile> files, RocksDbTaskScope scope) {
    return HdfsFileExchange.writeSnapshot(
        ctx.snapshotFile(spec, partition),
        spec,
        partition,
        files,
        ctx.compressionCodec,
        ctx.hadoopConf());
  }
}
