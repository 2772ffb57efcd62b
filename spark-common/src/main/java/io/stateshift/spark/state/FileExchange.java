package io.stateshift.spark.state;

import static io.stateshift.spark.state.StateRedistributionJob.TASKS_PER_SLOT;
import static io.stateshift.spark.state.StateRedistributionJob.ceilDiv;
import static io.stateshift.spark.state.StateRedistributionJob.onThreads;

import io.stateshift.checkpoint.StoreSpec;
import io.stateshift.checkpoint.spi.Redistribution;
import io.stateshift.checkpoint.spi.Redistribution.Outcome;
import io.stateshift.checkpoint.spi.Redistribution.PartitionCount;
import io.stateshift.config.StateShiftConf;
import io.stateshift.spark.state.StateRedistributionJob.ReadOutcome;
import io.stateshift.spark.state.StateRedistributionJob.StagedFile;
import io.stateshift.spark.state.StateRedistributionJob.WriteSharing;
import java.io.IOException;
import java.io.Serializable;
import java.io.UncheckedIOException;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.apache.hadoop.fs.Path;
import org.apache.spark.api.java.JavaSparkContext;
import org.apache.spark.sql.RuntimeConfig;
import org.apache.spark.sql.SparkSession;
import scala.Tuple2;

/**
 * A way without a shuffle: each read task splits old partitions into staged files per new
 * partition, each write task writes new partitions from the files staged for them. This class is
 * the one fan-out of the file exchanges: the read stage runs the exchange's {@link #split} for each
 * (store, old partition), the write stage its {@link #write} for each (store, new partition) with
 * the files staged for it; a task runs its share of these on a few threads, with one {@link
 * RocksDbTaskScope} when the exchange's stores share one. (The exchanges are serializable: tasks
 * run them.)
 */
abstract class FileExchange implements StateExchange, Serializable {
  private static final String PROGRESS_LABEL = Redistribution.PROGRESS_LABEL;

  final RedistributionContext ctx;

  /**
   * Where the read tasks stage their files for the write tasks, chosen by {@link
   * #chooseExchangeDir} on the driver before the job; tasks read the field.
   */
  private String exchangeDir;

  FileExchange(RedistributionContext ctx) {
    this.ctx = ctx;
  }

  /** Whether the tasks' stores share one {@link RocksDbTaskScope} (RocksDB), else none. */
  abstract boolean rocksDbScope();

  /**
   * Splits one old partition of a store into staged files; {@code scope} is what the task's RocksDB
   * stores share, null for HDFS-backed ones.
   */
  abstract ReadOutcome split(SourceTask task, RocksDbTaskScope scope);

  /** Writes one new partition of a store from the files staged for it. */
  abstract PartitionCount write(
      StoreSpec spec, int partition, List<StagedFile> files, RocksDbTaskScope scope);

  /**
   * Whether the read stage writes the new partitions itself ({@link RocksDbSplitInPlace}), so that
   * there is no write stage.
   */
  boolean writesInReadStage() {
    return false;
  }

  /** What the progress lines call the read stage. */
  String readStageLabel() {
    return "reading state partitions";
  }

  @Override
  public Outcome run(SparkSession spark) {
    try {
      return runInFolder(spark);
    } finally {
      spark.sparkContext().setLocalProperty(PROGRESS_LABEL, null);
    }
  }

  /** What {@link #split} hands the exchange's own split of one old partition. */
  SplitTask splitTask(SourceTask task, String source, TaskTimer timer) {
    StoreSpec spec = ctx.stores.get(task.slot());
    int partition = task.partition();
    return new SplitTask(
        spec,
        partition,
        new StateStores.KeyPlacement(spec, ctx.newPartitions),
        ctx.placementCheck(spec, partition),
        source,
        spec.slot() * ctx.newPartitions,
        ctx.newPartitions,
        exchangeDir,
        ctx.hadoopConf(),
        timer,
        task.listedFiles(),
        ctx.edits.entryEdit(task.slot()));
  }

  /**
   * Whether the HDFS file exchange's read side applies: HDFS-backed state of state checkpoint
   * format v1 (format v2 names files by unique id: the provider reads those), without column
   * families, unless the session asks for the shuffle.
   */
  boolean readsHdfsFiles(RuntimeConfig conf) {
    return !ctx.readRocksDb
        && ctx.readCheckpointIds == null
        && ctx.stores.stream().noneMatch(StoreSpec::hasColumnFamilies)
        && !StateExchange.shuffleAsked(conf, HdfsFileExchange.EXCHANGE_CONF, "files");
  }

  /** How an exchange splits one old HDFS-backed partition, the folder {@code partitionDir}. */
  interface HdfsSplit {
    ReadOutcome split(SplitTask task, Path partitionDir);
  }

  /**
   * The read side of the exchanges from HDFS-backed state: one old partition, version {@link
   * RedistributionContext#readVersion} of its folder, split by {@code split}.
   */
  ReadOutcome splitHdfs(SourceTask task, HdfsSplit split) {
    StoreSpec spec = ctx.stores.get(task.slot());
    TaskTimer timer = new TaskTimer("read " + spec.storeName() + "/" + task.partition());
    try {
      return split.split(
          splitTask(task, ctx.versionFiles(spec, task.partition()), timer),
          new Path(new Path(ctx.liveStateRoot).getParent(), spec.dir(task.partition())));
    } finally {
      timer.report();
    }
  }

  /** The RocksDB file exchanges' write side: the staged runs of one new partition, ingested. */
  PartitionCount ingestRuns(
      StoreSpec spec, int partition, List<StagedFile> files, RocksDbTaskScope scope) {
    RocksDbSnapshotWriter.Written written =
        RocksDbSstExchange.ingest(
            ctx.stagedStateRoot(),
            spec,
            partition,
            ctx.writeStoreConf,
            ctx.hadoopConf(),
            ctx.writeBatchId,
            files,
            scope);
    return new PartitionCount(
        spec.slot(), partition, written.rows(), written.bytes(), written.checkpointId());
  }

  /**
   * With a local master every task runs in this JVM, so the files go to this machine's local disk
   * (Spark's {@code spark.local.dir}), whatever the checkpoint's file system: on an object store
   * every staged file would cost several requests (about 7 a file on S3A, 1,100 files at 200 -> 64
   * partitions). On a cluster they go where every executor reads them: next to the attempt's staged
   * state.
   */
  private String chooseExchangeDir(SparkSession spark) {
    String chosen = spark.conf().get(StateShiftConf.EXCHANGE_DIR.key(), "");
    boolean local = spark.sparkContext().isLocal();
    if (!chosen.isBlank()) {
      Path parent = new Path(chosen.trim());
      String scheme = parent.toUri().getScheme();
      return local && (scheme == null || "file".equals(scheme))
          ? localFolder(new java.io.File(parent.toUri().getPath()))
          : new Path(parent, LocalRunFolders.PREFIX + java.util.UUID.randomUUID()).toString();
    }
    if (local) {
      String localDirs =
          spark
              .sparkContext()
              .getConf()
              .get("spark.local.dir", System.getProperty("java.io.tmpdir"));
      return localFolder(new java.io.File(localDirs.split(",")[0].trim()));
    }
    return new Path(new Path(ctx.stagingRoot).getParent(), "exchange").toString();
  }

  /** A folder of this process on the local disk, where killed runs' folders are removed. */
  private static String localFolder(java.io.File parent) {
    return new Path(LocalRunFolders.create(parent).toURI()).toString();
  }

  /**
   * Generates the code of each store's key placement, where {@link PartitionHash} does not cover
   * the key's types, on a background thread while the job's first tasks start and load their
   * stores: in local mode they share this JVM's cache of generated code, so they find it compiled
   * (in a fresh JVM, Janino's first compilation takes a tenth of a second, and both first tasks
   * would wait for it).
   */
  private void compilePlacementsAhead() {
    List<StoreSpec> stores = ctx.stores;
    int newPartitions = ctx.newPartitions;
    Thread thread =
        new Thread(
            () -> {
              try {
                for (StoreSpec spec : stores) {
                  if (!spec.hasColumnFamilies()) {
                    new StateStores.KeyPlacement(spec, newPartitions);
                  }
                }
              } catch (RuntimeException | LinkageError e) {
                // a head start only: each task compiles what it does not find
              }
            },
            "stateshift-placement-codegen");
    thread.setDaemon(true);
    thread.start();
  }

  private Outcome runInFolder(SparkSession spark) {
    exchangeDir = chooseExchangeDir(spark);
    if (spark.sparkContext().isLocal()) {
      InMemoryRuns.open(
          exchangeDir,
          (long)
              (StateShiftConf.LOCAL_EXCHANGE_HEAP_SHARE.from(spark)
                  * Runtime.getRuntime().maxMemory()));
    }
    try {
      return runStages(spark);
    } finally {
      InMemoryRuns.close(exchangeDir);
      try {
        Path staged = new Path(exchangeDir);
        staged.getFileSystem(ctx.hadoopConf()).delete(staged, true);
      } catch (IOException e) {
        // on the checkpoint's store: left for the attempt folder's removal, never read by Spark
      }
    }
  }

  private Outcome runStages(SparkSession spark) {
    boolean rocksDbScope = rocksDbScope();
    List<StoreSpec> stores = ctx.stores;
    int oldPartitions = ctx.oldPartitions;
    int newPartitions = ctx.newPartitions;
    JavaSparkContext jsc = JavaSparkContext.fromSparkContext(spark.sparkContext());
    // Several stores (a join's four): a task per core, not per partition, each working through
    // its share of (store, partition) items on a few threads of its own, so that a slow store
    // holds up no wave of tasks and 96 small RocksDB instances cost no task launch each. One
    // store: a task per old partition up to TASKS_PER_SLOT waves of tasks, which Spark balances
    // and shows as progress (at 200 partitions a task each cost more in launches, results and
    // per-task setup than the small partitions' reads); on a remote checkpoint a task per group
    // of at least ioThreads old partitions, read at once.
    int cores = Math.max(1, jsc.defaultParallelism());
    int ioThreads =
        StateRedistributionJob.remoteIoThreads(spark, ctx.checkpointRoot(), ctx.hadoopConf());
    int readTasks =
        stores.size() > 1
            ? Math.min(oldPartitions, cores)
            : Math.min(
                cores * TASKS_PER_SLOT,
                ceilDiv(oldPartitions, Math.min(ioThreads, ceilDiv(oldPartitions, cores))));
    Map<String, Map<String, ListedFile>> listing = listOldState();
    List<List<SourceTask>> sources = new ArrayList<>();
    for (int t = 0; t < readTasks; t++) {
      List<SourceTask> share = new ArrayList<>();
      for (int p = t; p < oldPartitions; p += readTasks) {
        for (StoreSpec store : stores) {
          share.add(new SourceTask(store.slot(), p, listedFiles(listing, store.dir(p))));
        }
      }
      sources.add(share);
    }
    if (spark.sparkContext().isLocal()) {
      compilePlacementsAhead();
    }
    // As many threads as stores: one old partition's stores at a time (a join's four are small;
    // a single big store is walked by one thread per core), or more where stores wait on requests.
    int readThreads = Math.max(stores.size(), ioThreads);
    // two jobs, one stage each: the progress lines name each
    spark.sparkContext().setLocalProperty(PROGRESS_LABEL, readStageLabel());
    List<ReadOutcome> reads =
        jsc.parallelize(sources, sources.size())
            .flatMap(
                share -> {
                  ctx.beginTask();
                  try (RocksDbTaskScope scope =
                      rocksDbScope ? ctx.taskScope(ctx.liveStateRoot, ctx.storeConf) : null) {
                    return onThreads(share, readThreads, task -> split(task, scope)).iterator();
                  }
                })
            .collect();
    int targets = stores.size() * newPartitions;
    List<List<StagedFile>> filesPerTarget = new ArrayList<>();
    for (int t = 0; t < targets; t++) {
      filesPerTarget.add(new ArrayList<>());
    }
    List<PartitionCount> read = new ArrayList<>();
    List<PartitionCount> writtenInReadStage = new ArrayList<>();
    List<PartitionCount> leftOut = new ArrayList<>();
    for (ReadOutcome outcome : reads) {
      read.add(outcome.count());
      if (outcome.leftOut() > 0) {
        PartitionCount count = outcome.count();
        leftOut.add(
            new PartitionCount(count.slot(), count.partition(), outcome.leftOut(), 0, null));
      }
      outcome.files().forEach(f -> filesPerTarget.get(f.target()).add(f));
      writtenInReadStage.addAll(outcome.written());
    }
    ctx.fileExchangeLeftOut = List.copyOf(leftOut);
    if (writesInReadStage()) {
      return ctx.outcome(read, writtenInReadStage);
    }
    WriteSharing sharing =
        WriteSharing.of(
            stores.size(),
            newPartitions,
            cores,
            spark.sparkContext().conf().getInt("spark.task.cpus", 1),
            ioThreads);
    int writeThreads = sharing.threadsPerTask();
    int writeTasks = sharing.tasks();
    List<List<Tuple2<Integer, List<StagedFile>>>> writes = new ArrayList<>();
    for (int task = 0; task < writeTasks; task++) {
      List<Tuple2<Integer, List<StagedFile>>> share = new ArrayList<>();
      for (int p = task; p < newPartitions; p += writeTasks) {
        for (StoreSpec store : stores) {
          int t = store.slot() * newPartitions + p;
          share.add(new Tuple2<>(t, filesPerTarget.get(t)));
        }
      }
      writes.add(share);
    }
    spark.sparkContext().setLocalProperty(PROGRESS_LABEL, "writing state partitions");
    List<PartitionCount> written =
        jsc.parallelize(writes, writes.size())
            .flatMap(
                share -> {
                  ctx.beginTask();
                  try (RocksDbTaskScope scope =
                      rocksDbScope
                          ? ctx.taskScope(ctx.stagedStateRoot(), ctx.writeStoreConf)
                          : null) {
                    return onThreads(share, writeThreads, t -> writeTarget(t, scope)).iterator();
                  }
                })
            .collect();
    return ctx.outcome(read, written);
  }

  /** Runs {@link #write} for one (store, new partition) target with the files staged for it. */
  private PartitionCount writeTarget(
      Tuple2<Integer, List<StagedFile>> target, RocksDbTaskScope scope) {
    ctx.beginTarget(target._1());
    return write(
        ctx.stores.get(target._1() / ctx.newPartitions),
        target._1() % ctx.newPartitions,
        target._2(),
        scope);
  }

  /**
   * The old state's files, by the folder that holds them (relative to the checkpoint), from one
   * flat listing per operator where the store lists a whole prefix at a request per 1,000 files
   * (S3), so that the read tasks list nothing and open each file with no request before its read;
   * null elsewhere, where a listing per folder costs the same and each task lists its own. The
   * state is the stopped query's, which nothing changes while the job runs.
   */
  private Map<String, Map<String, ListedFile>> listOldState() {
    Path root = new Path(ctx.checkpointRoot());
    try {
      org.apache.hadoop.fs.FileSystem fs = root.getFileSystem(ctx.hadoopConf());
      if (!"s3a".equals(fs.getScheme())) {
        return null;
      }
      String rootPrefix = fs.makeQualified(root).toUri().getPath();
      Map<String, Map<String, ListedFile>> out = new java.util.HashMap<>();
      for (long operator :
          ctx.stores.stream().mapToLong(StoreSpec::operatorId).distinct().toArray()) {
        org.apache.hadoop.fs.RemoteIterator<org.apache.hadoop.fs.LocatedFileStatus> walk;
        try {
          walk = fs.listFiles(new Path(root, "state/" + operator), true);
        } catch (java.io.FileNotFoundException absent) {
          continue;
        }
        while (walk.hasNext()) {
          org.apache.hadoop.fs.LocatedFileStatus file = walk.next();
          String parent = file.getPath().getParent().toUri().getPath();
          if (!parent.startsWith(rootPrefix + "/")) {
            return null; // not below the root as named: the tasks list their own
          }
          out.computeIfAbsent(
                  parent.substring(rootPrefix.length() + 1), k -> new java.util.HashMap<>())
              .put(file.getPath().getName(), ListedFile.of(file));
        }
      }
      return out;
    } catch (IOException e) {
      throw new UncheckedIOException("Cannot list the state of " + root + ": " + e.getMessage(), e);
    }
  }

  /**
   * The files of the partition folder {@code dir} in {@code listing}, with those of its {@code
   * SSTs} and {@code logs} folders (RocksDB) as {@code SSTs/<name>} and {@code logs/<name>}; null
   * without a listing.
   */
  private static Map<String, ListedFile> listedFiles(
      Map<String, Map<String, ListedFile>> listing, String dir) {
    if (listing == null) {
      return null;
    }
    Map<String, ListedFile> files = new java.util.HashMap<>(listing.getOrDefault(dir, Map.of()));
    for (String sub : List.of("SSTs", "logs")) {
      listing
          .getOrDefault(dir + "/" + sub, Map.of())
          .forEach((name, file) -> files.put(sub + "/" + name, file));
    }
    return files;
  }
}
