package io.stateshift.spark.state;

import io.stateshift.checkpoint.PlacementCheck;
import io.stateshift.checkpoint.StateCheckpointIds;
import io.stateshift.checkpoint.StoreSpec;
import io.stateshift.checkpoint.spi.Redistribution;
import io.stateshift.config.StateShiftConf;
import java.io.IOException;
import java.io.Serializable;
import java.util.ArrayList;
import java.util.List;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.Path;
import org.apache.spark.TaskContext;
import org.apache.spark.api.java.JavaSparkContext;
import org.apache.spark.sql.RuntimeConfig;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.execution.streaming.state.StateStoreConf;
import org.apache.spark.util.CollectionAccumulator;

/**
 * The Spark job that moves state: one task per old (store, partition) reads it and tags every
 * record with its new partition; one shuffle groups records by (store, new partition); one task per
 * new (store, partition) writes it into the staging area. Records travel as byte arrays with a raw
 * serializer; only the key's partition is computed, with Spark's own hash. For RocksDB the read
 * side encodes records as Spark's RocksDB encoders would and the shuffle sorts them by those key
 * bytes, so each new partition becomes one SST file (see {@link RocksDbSnapshotWriter}). That is
 * the shuffle's way ({@link ShuffleExchange}); the job runs the first of its {@link StateExchange}s
 * that applies, each with the {@link RedistributionContext} its tasks share.
 */
final class StateRedistributionJob implements Redistribution, Serializable {

  /**
   * A file, or a range of one, a read task staged for one new partition (a file exchange, no
   * shuffle): the target (store, new partition) it belongs to, its path, where in the file it lies
   * ({@code offset}, {@code length}), what it holds (rows, key and value bytes) and the file's own
   * length, which the write task checks before it uses the file.
   */
  record StagedFile(
      int target, String path, long offset, long length, long rows, long bytes, long fileBytes)
      implements Serializable {

    /** A whole staged file. */
    StagedFile(int target, String path, long rows, long bytes, long fileBytes) {
      this(target, path, 0, fileBytes, rows, bytes, fileBytes);
    }

    /**
     * Fails the write task when the staged file, as the write task found it, holds {@code length}
     * bytes instead of the {@link #fileBytes} its read task wrote.
     */
    void checkLength(long length) {
      if (length != fileBytes) {
        throw new IllegalStateException(
            "The staged file "
                + (InMemoryRuns.isMemoryPath(path) ? path : new Path(path))
                + " holds "
                + length
                + " bytes, its read task wrote "
                + fileBytes
                + "; the attempt is abandoned");
      }
    }
  }

  /**
   * What one read task of a file exchange produced: its counts and the files it staged, or, where
   * it wrote its new partitions itself ({@link RocksDbSstExchange#splitToMultiple}), their counts.
   */
  record ReadOutcome(
      PartitionCount count, List<StagedFile> files, List<PartitionCount> written, long leftOut)
      implements Serializable {
    ReadOutcome(PartitionCount count, List<StagedFile> files, List<PartitionCount> written) {
      this(count, files, written, 0);
    }

    ReadOutcome(PartitionCount count, List<StagedFile> files) {
      this(count, files, List.of(), 0);
    }
  }

  /**
   * What the job is set up with: where the live state and the staging area are, the store settings
   * the old layout is read with and those the new partitions are written with (another provider's
   * for a migration), the Hadoop conf, the stores, the old and new counts, the last committed
   * batch, whether each side is RocksDB's (else HDFS-backed), the compression codec, and the state
   * checkpoint ids of the version read (format v2), or null.
   */
  record Setup(
      String liveStateRoot,
      String stagingRoot,
      StateStoreConf storeConf,
      StateStoreConf writeStoreConf,
      Configuration hadoopConf,
      List<StoreSpec> stores,
      int oldPartitions,
      int newPartitions,
      long lastCommittedBatch,
      boolean readRocksDb,
      boolean writeRocksDb,
      String compressionCodec,
      StateCheckpointIds readCheckpointIds) {}

  /** What the exchanges and their tasks share. */
  private final RedistributionContext ctx;

  StateRedistributionJob(Setup setup) {
    this.ctx = new RedistributionContext(setup);
  }

  /** The way new partitions are written, and why when it is the slower one. */
  @Override
  public String writeStrategy(SparkSession spark) {
    return exchange(spark.conf()).description();
  }

  /**
   * How the read side checks, per store slot, that every key sits in the partition the recorded
   * schema and the old count give it ({@link PlacementCheck}); the job fails (changing nothing) on
   * the first key that does not, or notes the store where a subset placement is allowed.
   */
  @Override
  public StateRedistributionJob checkPlacement(java.util.Map<Integer, PlacementCheck.Mode> modes) {
    ctx.placementChecks = java.util.Map.copyOf(modes);
    return this;
  }

  /**
   * The ways this job can move its state, in the order they are tried: RocksDB partitions as raw
   * SST files without a shuffle, split straight into their new ones where that applies ({@link
   * RocksDbSplitInPlace}) or through staged runs ({@link RocksDbFiles}); HDFS-backed ones as raw
   * staged files ({@link HdfsFiles}); HDFS-backed ones to RocksDB as staged sorted runs ({@link
   * HdfsToRocksDbFiles}); an edit that keeps the count in place ({@link InPlaceRewrite}); else
   * through Spark's shuffle ({@link ShuffleExchange}). An edit that adds no entries goes through a
   * file exchange where one applies (each edits the raw entries it splits, {@link EntryEdit}). Each
   * way's {@link StateExchange#applies} says where it applies; a new way is a new entry here.
   */
  private List<StateExchange> exchanges() {
    return List.of(
        new RocksDbSplitInPlace(ctx),
        new RocksDbFiles(ctx),
        new HdfsFiles(ctx),
        new HdfsToRocksDbFiles(ctx),
        new InPlaceRewrite(ctx),
        new ShuffleExchange(ctx));
  }

  /** The first of {@link #exchanges} that applies under the session's conf. */
  private StateExchange exchange(RuntimeConfig conf) {
    for (StateExchange exchange : exchanges()) {
      if (exchange.applies(conf)) {
        return exchange;
      }
    }
    throw new IllegalStateException("no state exchange applies"); // the shuffle always does
  }

  @Override
  public Redistribution deleteWhere(SparkSession spark, java.util.Map<Integer, String> predicates) {
    ctx.edits.deleteWhere(spark, ctx.stores, predicates);
    return this;
  }

  @Override
  public Redistribution upsert(
      SparkSession spark,
      java.util.Map<Integer, org.apache.spark.sql.Dataset<org.apache.spark.sql.Row>> rows) {
    ctx.edits.upsert(spark, ctx.stores, rows);
    return this;
  }

  @Override
  public Redistribution evolveValues(
      SparkSession spark,
      java.util.Map<Integer, org.apache.spark.sql.types.StructType> valueSchemas,
      java.util.Map<String, String> fills) {
    ctx.edits.evolveValues(spark, ctx.stores, valueSchemas, fills);
    return this;
  }

  @Override
  public List<PartitionCount> added() {
    return ctx.added;
  }

  @Override
  public List<PartitionCount> deleted() {
    if (!ctx.fileExchangeLeftOut.isEmpty()) {
      return ctx.fileExchangeLeftOut;
    }
    return ctx.deletedCounts == null ? List.of() : List.copyOf(ctx.deletedCounts.value());
  }

  @Override
  public Outcome run(SparkSession spark) {
    ctx.shareHadoopConf(JavaSparkContext.fromSparkContext(spark.sparkContext()));
    ctx.placementNotes = new CollectionAccumulator<>();
    spark.sparkContext().register(ctx.placementNotes, "stateshift.placementNotes");
    try {
      ctx.inProcessDeletes = !"false".equals(spark.conf().get(InProcessDeletes.CONF, "true"));
      return exchange(spark.conf()).run(spark);
    } finally {
      // an on-demand repartition runs in the user's long-lived session: nothing is left behind
      ctx.unshareHadoopConf();
    }
  }

  /**
   * /** How the write stage shares the (store, new partition) targets among tasks: a task runs on
   * the cores Spark grants it ({@code spark.task.cpus}), so it writes at most that many targets at
   * once, on as many threads (on a remote checkpoint, at least {@code ioThreads}: there a target
   * mostly waits on its uploads); the tasks that run at once are the cores over {@code
   * spark.task.cpus}. One store: as many tasks as it takes to write every partition in one wave of
   * them (so a task with several cores writes several partitions), but at most {@link
   * #TASKS_PER_SLOT} waves of tasks, each then writing its share one target after another; several
   * stores: a task per slot, each with its share of new partitions, all their stores.
   */
  record WriteSharing(int tasks, int threadsPerTask) {
    /** {@code ioThreads}: stores a task works on at once where they wait on requests, else 1. */
    static WriteSharing of(int stores, int newPartitions, int cores, int taskCpus, int ioThreads) {
      int slots = Math.max(1, cores / Math.max(1, taskCpus));
      int threads = Math.max(Math.max(1, taskCpus), ioThreads);
      if (stores == 1) {
        int partitionsAtOnce = Math.min(threads, ceilDiv(newPartitions, slots));
        return new WriteSharing(
            Math.min(slots * TASKS_PER_SLOT, ceilDiv(newPartitions, partitionsAtOnce)),
            partitionsAtOnce);
      }
      int tasks = Math.max(1, Math.min(newPartitions, slots));
      return new WriteSharing(tasks, Math.min(threads, stores * ceilDiv(newPartitions, tasks)));
    }
  }

  /**
   * Stores a task works on at once beyond its cores ({@link StateShiftConf#TASK_IO_THREADS}) when
   * the checkpoint at {@code root} is not on a local disk, where a store mostly waits on its
   * requests; else 1.
   */
  static int remoteIoThreads(SparkSession spark, String root, Configuration conf) {
    try {
      org.apache.hadoop.fs.FileSystem fs = new Path(root).getFileSystem(conf);
      if (fs instanceof org.apache.hadoop.fs.LocalFileSystem
          || fs instanceof org.apache.hadoop.fs.RawLocalFileSystem) {
        return 1;
      }
    } catch (IOException e) {
      return 1;
    }
    return Math.max(1, StateShiftConf.TASK_IO_THREADS.from(spark));
  }

  /**
   * Waves of tasks a stage of one store runs at most: enough for Spark to balance uneven partitions
   * and slow executors, few enough that a task's launch, result and {@link RocksDbTaskScope} are
   * paid for a share of partitions, not for each.
   */
  static final int TASKS_PER_SLOT = 4;

  static int ceilDiv(int a, int b) {
    return (a + b - 1) / Math.max(1, b);
  }

  /**
   * Runs {@code work} for every item of one task's share on at most {@code threads} threads,
   * results in the items' order. Most of a small store's time goes to the fixed steps of a RocksDB
   * instance (open, upload: file creation, fsyncs), which overlap well. When one item fails, the
   * others are interrupted and waited for: what the caller removes next, none of them still writes.
   */
  static <T, R> List<R> onThreads(
      List<T> items, int threads, java.util.function.Function<T, R> work) {
    if (items.size() == 1 || threads <= 1) {
      List<R> results = new ArrayList<>();
      items.forEach(item -> results.add(work.apply(item)));
      return results;
    }
    java.util.concurrent.ExecutorService pool =
        java.util.concurrent.Executors.newFixedThreadPool(
            Math.min(threads, items.size()),
            r -> {
              Thread t = new Thread(r, "stateshift-store");
              t.setDaemon(true);
              return t;
            });
    // The work sees its task as on the task's own thread: a retry knows it is one, and what it
    // registers ends with the task.
    TaskContext task = TaskContext.get();
    try {
      List<java.util.concurrent.Future<R>> running = new ArrayList<>();
      for (T item : items) {
        running.add(
            pool.submit(
                () -> {
                  if (task != null) {
                    org.apache.spark.TaskContext$.MODULE$.setTaskContext(task);
                  }
                  try {
                    return work.apply(item);
                  } finally {
                    org.apache.spark.TaskContext$.MODULE$.unset();
                  }
                }));
      }
      List<R> results = new ArrayList<>();
      for (java.util.concurrent.Future<R> future : running) {
        try {
          results.add(future.get());
        } catch (java.util.concurrent.ExecutionException e) {
          running.forEach(f -> f.cancel(true));
          if (e.getCause() instanceof RuntimeException runtime) {
            throw runtime;
          }
          throw new IllegalStateException(e.getCause());
        } catch (InterruptedException e) {
          running.forEach(f -> f.cancel(true));
          Thread.currentThread().interrupt();
          throw new IllegalStateException("interrupted", e);
        }
      }
      return results;
    } finally {
      pool.shutdownNow();
      if (!pool.isTerminated()) {
        try {
          pool.awaitTermination(1, java.util.concurrent.TimeUnit.MINUTES);
        } catch (InterruptedException e) {
          Thread.currentThread().interrupt();
        }
      }
    }
  }
}
