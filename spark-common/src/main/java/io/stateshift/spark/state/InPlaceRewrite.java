package io.stateshift.spark.state;

import io.stateshift.checkpoint.StoreSpec;
import io.stateshift.checkpoint.spi.Redistribution.Outcome;
import io.stateshift.checkpoint.spi.Redistribution.PartitionCount;
import io.stateshift.config.StateShiftConf;
import java.util.List;
import org.apache.spark.api.java.JavaSparkContext;
import org.apache.spark.sql.RuntimeConfig;
import org.apache.spark.sql.SparkSession;

/**
 * An edit that keeps the partition count and adds no entries: each task reads one (store,
 * partition), leaves out, or rewrites, entries as it goes, and writes the same partition, without a
 * shuffle ({@link StateReadSide}, {@link StateWriteSide}). A RocksDB store gives its entries in the
 * order of their key bytes, the order an SST file needs (its writer refuses any other); every key
 * stays where it was. (Not serializable: its tasks carry the read and write sides.)
 */
final class InPlaceRewrite implements StateExchange {

  /** {@code in-place} (the default) or {@code shuffle}: how an edit that keeps the count runs. */
  static final String EDIT_EXCHANGE_CONF = StateShiftConf.EDIT_EXCHANGE.key();

  private final RedistributionContext ctx;

  InPlaceRewrite(RedistributionContext ctx) {
    this.ctx = ctx;
  }

  @Override
  public boolean applies(RuntimeConfig conf) {
    return ctx.edits.any()
        && !ctx.edits.adds()
        && ctx.oldPartitions == ctx.newPartitions
        && ctx.stores.stream().noneMatch(StoreSpec::hasColumnFamilies)
        && !StateExchange.shuffleAsked(conf, EDIT_EXCHANGE_CONF, "in-place");
  }

  @Override
  public String description() {
    return "in-place rewrite, no shuffle ("
        + (!ctx.writeRocksDb
            ? "hdfs-snapshot"
            : ctx.rocksDbMode == RocksDbSnapshotWriter.Mode.SST ? "rocksdb-sst" : "rocksdb-puts")
        + ")";
  }

  @Override
  public Outcome run(SparkSession spark) {
    JavaSparkContext jsc = JavaSparkContext.fromSparkContext(spark.sparkContext());
    ctx.registerCounts(jsc);
    List<SourceTask> sources = ctx.sourceTasks();
    StateReadSide reads = new StateReadSide(ctx);
    StateWriteSide writes = new StateWriteSide(ctx);
    int newPartitions = ctx.newPartitions;
    // one task: a (store, partition) read, edited and written where it was
    List<PartitionCount> written =
        jsc.parallelize(sources, sources.size())
            .map(
                task ->
                    writes
                        .write(task.slot() * newPartitions + task.partition(), reads.read(task))
                        .next())
            .collect();
    return ctx.outcome(ctx.readCounts.value(), written);
  }
}
