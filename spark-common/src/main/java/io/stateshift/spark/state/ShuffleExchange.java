package io.stateshift.spark.state;

import io.stateshift.checkpoint.StoreSpec;
import io.stateshift.checkpoint.spi.Redistribution.Outcome;
import io.stateshift.checkpoint.spi.Redistribution.PartitionCount;
import java.util.ArrayList;
import java.util.List;
import org.apache.spark.api.java.JavaRDD;
import org.apache.spark.api.java.JavaSparkContext;
import org.apache.spark.rdd.RDD;
import org.apache.spark.rdd.ShuffledRDD;
import org.apache.spark.sql.RuntimeConfig;
import org.apache.spark.sql.SparkSession;
import scala.Tuple2;
import scala.reflect.ClassTag;
import scala.reflect.ClassTag$;

/**
 * Spark's shuffle: one task per old (store, partition) reads it and tags every record with its new
 * partition ({@link StateReadSide}), one task per new (store, partition) writes what the shuffle
 * groups for it ({@link StateWriteSide}). For RocksDB in SST mode the shuffle sorts records by
 * their RocksDB key bytes and each new partition is ingested as one SST file; otherwise the
 * provider's puts (RocksDB) or a snapshot written directly (HDFS-backed). Applies always: the way
 * of last resort. (Not serializable: its tasks carry the read and write sides, not the exchange.)
 */
final class ShuffleExchange implements StateExchange {
  private static final ClassTag<byte[]> BYTES = ClassTag$.MODULE$.apply(byte[].class);
  private static final ClassTag<Object> OBJECT = ClassTag$.MODULE$.Object();

  private final RedistributionContext ctx;

  ShuffleExchange(RedistributionContext ctx) {
    this.ctx = ctx;
  }

  @Override
  public boolean applies(RuntimeConfig conf) {
    return true;
  }

  @Override
  public String description() {
    if (!ctx.writeRocksDb) {
      return "hdfs-snapshot";
    }
    if (ctx.rocksDbMode == RocksDbSnapshotWriter.Mode.SST) {
      // Spark 3.5: each old version with a snapshot of its own is read from it, opened read-only
      return new StateReadSide(ctx).readsSnapshots()
          ? "rocksdb-sst-ingest (read-only snapshots)"
          : "rocksdb-sst-ingest";
    }
    String reason =
        ctx.stores.stream().anyMatch(StoreSpec::hasColumnFamilies)
            ? "column families"
            : RocksDbSnapshotWriter.reasonForPuts(ctx.writeStoreConf);
    return "rocksdb-puts (" + reason + ")";
  }

  @Override
  public Outcome run(SparkSession spark) {
    JavaSparkContext jsc = JavaSparkContext.fromSparkContext(spark.sparkContext());
    ctx.registerCounts(jsc);
    List<SourceTask> sources = ctx.sourceTasks();
    int targets = ctx.stores.size() * ctx.newPartitions;
    StateReadSide reads = new StateReadSide(ctx);
    JavaRDD<Tuple2<byte[], Object>> read =
        jsc.parallelize(sources, sources.size()).flatMap(reads::read);
    List<PartitionCount> upserted = new ArrayList<>();
    for (var upsert : ctx.edits.upserts().entrySet()) {
      int slot = upsert.getKey();
      read = read.union(upsert.getValue().mapPartitions(e -> reads.upsertRecords(slot, e)));
      upserted.add(new PartitionCount(slot, -1, upsert.getValue().count(), 0, null));
    }
    ctx.added = List.copyOf(upserted);
    RDD<Tuple2<byte[], Object>> tagged = read.rdd();
    ShuffledRDD<byte[], Object, Object> shuffled =
        new ShuffledRDD<>(
            tagged, new StateRecords.TargetPartitioner(targets), BYTES, OBJECT, OBJECT);
    shuffled.setSerializer(new RawRecordSerializer());
    if (ctx.rocksDbMode == RocksDbSnapshotWriter.Mode.SST) {
      // sorted by the RocksDB key bytes within each partition; Spark's sorter spills to disk
      shuffled.setKeyOrdering(
          scala.math.Ordering$.MODULE$.comparatorToOrdering(new StateRecords.KeyBytesOrder()));
    }
    StateWriteSide writes = new StateWriteSide(ctx);
    List<PartitionCount> written =
        shuffled.toJavaRDD().mapPartitionsWithIndex(writes::write, false).collect();
    return ctx.outcome(ctx.readCounts.value(), written);
  }
}
