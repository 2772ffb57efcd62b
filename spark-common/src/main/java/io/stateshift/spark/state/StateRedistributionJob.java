package io.stateshift.spark.state;

import io.stateshift.StateShiftException;
import io.stateshift.checkpoint.PlacementCheck;
import io.stateshift.checkpoint.StateCheckpointIds;
import io.stateshift.checkpoint.StateFileDamage;
import io.stateshift.checkpoint.StoreSpec;
import io.stateshift.checkpoint.spi.Redistribution;
import io.stateshift.config.StateShiftConf;
import io.stateshift.protocol.FailPoints;
import io.stateshift.spark.line.LineCalls;
import io.stateshift.spark.line.StateCalls;
import java.io.IOException;
import java.io.Serializable;
import java.io.UncheckedIOException;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.NoSuchElementException;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.Path;
import org.apache.spark.TaskContext;
import org.apache.spark.api.java.JavaSparkContext;
import org.apache.spark.broadcast.Broadcast;
import org.apache.spark.rdd.RDD;
import org.apache.spark.rdd.ShuffledRDD;
import org.apache.spark.sql.RuntimeConfig;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.catalyst.expressions.UnsafeRow;
import org.apache.spark.sql.execution.streaming.state.ReadStateStore;
import org.apache.spark.sql.execution.streaming.state.StateStoreConf;
import org.apache.spark.sql.execution.streaming.state.StateStoreId;
import org.apache.spark.sql.execution.streaming.state.StateStoreIterator;
import org.apache.spark.sql.execution.streaming.state.StateStoreProvider;
import org.apache.spark.sql.execution.streaming.state.UnsafeRowPair;
import org.apache.spark.util.CollectionAccumulator;
import org.apache.spark.util.SerializableConfiguration;
import org.apache.spark.util.TaskCompletionListener;
import scala.Tuple2;
import scala.reflect.ClassTag;
import scala.reflect.ClassTag$;

/**
 * The Spark job that moves state: one task per old (store, partition) reads it and tags every
 * record with its new partition; one shuffle groups records by (store, new partition); one task per
 * new (store, partition) writes it into the staging area. Records travel as byte arrays with a raw
 * serializer; only the key's partition is computed, with Spark's own hash. For RocksDB the read
 * side encodes records as Spark's RocksDB encoders would and the shuffle sorts them by those key
 * bytes, so each new partition becomes one SST file (see {@link RocksDbSnapshotWriter}).
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
   * One old (store, partition) to read; {@code listedFiles}: the files of its folder (names
   * relative to it, {@code SSTs/<name>} for RocksDB's SST files), from the driver's listing, or
   * null where the task lists them itself.
   */
  private record SourceTask(int slot, int partition, java.util.Map<String, ListedFile> listedFiles)
      implements Serializable {}

  private final String liveStateRoot;
  private final String stagingRoot;

  /** The store settings the old layout is read with (its provider's). */
  private final StateStoreConf storeConf;

  /**
   * The store settings the new partitions are written with: the read side's, or another provider's
   * for a migration (only the shuffle moves state between providers).
   */
  private final StateStoreConf writeStoreConf;

  /** The driver's Hadoop conf; tasks read {@link #sharedHadoopConf} instead. */
  private final transient SerializableConfiguration hadoopConf;

  /**
   * The Hadoop conf as a broadcast, set by {@link #run}: an executor deserializes it once, and a
   * local-mode task not at all (as a field of the job it was deserialized by every task: a
   * thirtieth of a read task's CPU).
   */
  private Broadcast<SerializableConfiguration> sharedHadoopConf;

  private final List<StoreSpec> stores;
  private final int oldPartitions;
  private final int newPartitions;
  private final long readVersion;
  private final long writeBatchId;

  /** Whether the old layout is RocksDB's; else HDFS-backed. */
  private final boolean readRocksDb;

  /** Whether the new partitions are written for RocksDB; else HDFS-backed. */
  private final boolean writeRocksDb;

  private final String compressionCodec;
  private final StateCheckpointIds readCheckpointIds;

  /** How each store's keys are checked against their old partition, by slot; absent: not. */
  private java.util.Map<Integer, PlacementCheck.Mode> placementChecks = java.util.Map.of();

  private CollectionAccumulator<String> placementNotes;

  /** For RocksDB: SST ingestion or the provider's puts; null for the HDFS-backed store. */
  private final RocksDbSnapshotWriter.Mode rocksDbMode;

  private CollectionAccumulator<PartitionCount> readCounts;

  /** What an edit or an evolution does to the entries; nothing for a repartition or a migration. */
  private final StateEdits edits = new StateEdits();

  private CollectionAccumulator<PartitionCount> deletedCounts;

  private List<PartitionCount> added = List.of();

  /** Whether tasks delete Spark's RocksDB folders in-process ({@link InProcessDeletes}). */
  private boolean inProcessDeletes = true;

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

  StateRedistributionJob(Setup setup) {
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
  private Configuration hadoopConf() {
    return sharedHadoopConf != null ? sharedHadoopConf.value().value() : hadoopConf.value();
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
    this.placementChecks = java.util.Map.copyOf(modes);
    return this;
  }

  /** The check of one old partition of a store, or null when its keys are not checked. */
  private PlacementCheck placementCheck(StoreSpec spec, int partition) {
    PlacementCheck.Mode mode = placementChecks.get(spec.slot());
    if (mode == null) {
      return null;
    }
    CollectionAccumulator<String> notes = placementNotes;
    return new PlacementCheck(
        mode, spec, oldPartitions, partition, checkpointRoot(), note -> notes.add(note));
  }

  private String checkpointRoot() {
    return new Path(liveStateRoot).getParent().toString();
  }

  /** The checkpoint files a version of a partition is read from, for errors. */
  private String versionFiles(StoreSpec spec, int partition) {
    return spec.dir(partition) + " version " + readVersion;
  }

  /**
   * The refusal for a version that RocksDB reports damaged, naming the checkpoint's SST file where
   * RocksDB names its local copy (Spark stores local {@code 000009.sst} as {@code
   * SSTs/000009-<uuid>.sst}).
   */
  private StateShiftException rocksDbDamage(
      StoreSpec spec, int partition, String source, Throwable e) {
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

  /**
   * The way this job moves its state under the session's conf: RocksDB partitions as raw SST files
   * without a shuffle ({@link RocksDbSstExchange}), HDFS-backed ones as raw staged files ({@link
   * HdfsFileExchange}), else through Spark's shuffle; the first that applies. An edit that adds no
   * entries goes through a file exchange where one applies (each edits the raw entries it splits,
   * {@link EntryEdit}), else in place or through the shuffle.
   */
  private StateExchange exchange(RuntimeConfig conf) {
    if (edits.any()) {
      if (!edits.adds()) {
        for (StateExchange files : List.of(new RocksDbFiles(), new HdfsFiles())) {
          if (files.applies(conf)) {
            return files;
          }
        }
      }
      InPlace inPlace = new InPlace();
      return inPlace.applies(conf) ? inPlace : new Shuffle();
    }
    for (StateExchange exchange :
        List.of(new RocksDbFiles(), new HdfsFiles(), new HdfsToRocksDbFiles(), new Shuffle())) {
      if (exchange.applies(conf)) {
        return exchange;
      }
    }
    throw new IllegalStateException("no state exchange applies"); // the shuffle always does
  }

  @Override
  public Redistribution deleteWhere(SparkSession spark, java.util.Map<Integer, String> predicates) {
    edits.deleteWhere(spark, stores, predicates);
    return this;
  }

  @Override
  public Redistribution upsert(
      SparkSession spark,
      java.util.Map<Integer, org.apache.spark.sql.Dataset<org.apache.spark.sql.Row>> rows) {
    edits.upsert(spark, stores, rows);
    return this;
  }

  @Override
  public Redistribution evolveValues(
      SparkSession spark,
      java.util.Map<Integer, org.apache.spark.sql.types.StructType> valueSchemas,
      java.util.Map<String, String> fills) {
    edits.evolveValues(spark, stores, valueSchemas, fills);
    return this;
  }

  /** A store as the write side writes it. */
  private StoreSpec writeSpec(int slot) {
    return edits.writeSpec(stores, slot);
  }

  @Override
  public List<PartitionCount> added() {
    return added;
  }

  /** The entries an edit's file exchange left out, counted on the driver from the read outcomes. */
  private List<PartitionCount> fileExchangeLeftOut = List.of();

  @Override
  public List<PartitionCount> deleted() {
    if (!fileExchangeLeftOut.isEmpty()) {
      return fileExchangeLeftOut;
    }
    return deletedCounts == null ? List.of() : List.copyOf(deletedCounts.value());
  }

  @Override
  public Outcome run(SparkSession spark) {
    sharedHadoopConf =
        JavaSparkContext.fromSparkContext(spark.sparkContext()).broadcast(hadoopConf);
    placementNotes = new CollectionAccumulator<>();
    spark.sparkContext().register(placementNotes, "stateshift.placementNotes");
    try {
      return runJobs(spark);
    } finally {
      // an on-demand repartition runs in the user's long-lived session: nothing is left behind
      sharedHadoopConf.destroy();
      sharedHadoopConf = null;
    }
  }

  private Outcome runJobs(SparkSession spark) {
    inProcessDeletes = !"false".equals(spark.conf().get(InProcessDeletes.CONF, "true"));
    return exchange(spark.conf()).run(spark);
  }

  /**
   * Spark's shuffle: one task per old (store, partition) reads it and tags every record with its
   * new partition, one task per new (store, partition) writes what the shuffle groups for it. For
   * RocksDB in SST mode the shuffle sorts records by their RocksDB key bytes and each new partition
   * is ingested as one SST file; otherwise the provider's puts (RocksDB) or a snapshot written
   * directly (HDFS-backed). Applies always: the way of last resort.
   */
  private final class Shuffle implements StateExchange {
    @Override
    public boolean applies(RuntimeConfig conf) {
      return true;
    }

    @Override
    public String description() {
      if (!writeRocksDb) {
        return "hdfs-snapshot";
      }
      if (rocksDbMode == RocksDbSnapshotWriter.Mode.SST) {
        return "rocksdb-sst-ingest";
      }
      String reason =
          stores.stream().anyMatch(StoreSpec::hasColumnFamilies)
              ? "column families"
              : RocksDbSnapshotWriter.reasonForPuts(writeStoreConf);
      return "rocksdb-puts (" + reason + ")";
    }

    @Override
    public Outcome run(SparkSession spark) {
      JavaSparkContext jsc = JavaSparkContext.fromSparkContext(spark.sparkContext());
      readCounts = new CollectionAccumulator<>();
      jsc.sc().register(readCounts, "stateshift.readCounts");
      deletedCounts = new CollectionAccumulator<>();
      jsc.sc().register(deletedCounts, "stateshift.deletedCounts");
      List<SourceTask> sources = new ArrayList<>();
      for (StoreSpec store : stores) {
        for (int p = 0; p < oldPartitions; p++) {
          sources.add(new SourceTask(store.slot(), p, null));
        }
      }
      int targets = stores.size() * newPartitions;
      org.apache.spark.api.java.JavaRDD<Tuple2<byte[], Object>> read =
          jsc.parallelize(sources, sources.size()).flatMap(StateRedistributionJob.this::read);
      List<PartitionCount> upserted = new ArrayList<>();
      StateRedistributionJob job = StateRedistributionJob.this; // tasks need it, not Shuffle
      for (var upsert : edits.upserts().entrySet()) {
        int slot = upsert.getKey();
        read = read.union(upsert.getValue().mapPartitions(e -> job.upsertRecords(slot, e)));
        upserted.add(new PartitionCount(slot, -1, upsert.getValue().count(), 0, null));
      }
      added = List.copyOf(upserted);
      RDD<Tuple2<byte[], Object>> tagged = read.rdd();
      ShuffledRDD<byte[], Object, Object> shuffled =
          new ShuffledRDD<>(
              tagged, new StateRecords.TargetPartitioner(targets), BYTES, OBJECT, OBJECT);
      shuffled.setSerializer(new RawRecordSerializer());
      if (rocksDbMode == RocksDbSnapshotWriter.Mode.SST) {
        // sorted by the RocksDB key bytes within each partition; Spark's sorter spills to disk
        shuffled.setKeyOrdering(
            scala.math.Ordering$.MODULE$.comparatorToOrdering(new StateRecords.KeyBytesOrder()));
      }
      List<PartitionCount> written =
          shuffled
              .toJavaRDD()
              .mapPartitionsWithIndex(StateRedistributionJob.this::write, false)
              .collect();
      return new Outcome(
          List.copyOf(readCounts.value()),
          List.copyOf(written),
          List.copyOf(placementNotes.value()));
    }
  }

  /** {@code in-place} (the default) or {@code shuffle}: how an edit that keeps the count runs. */
  static final String EDIT_EXCHANGE_CONF = StateShiftConf.EDIT_EXCHANGE.key();

  /**
   * An edit that keeps the partition count and adds no entries: each task reads one (store,
   * partition), leaves out, or rewrites, entries as it goes, and writes the same partition, without
   * a shuffle. A RocksDB store gives its entries in the order of their key bytes, the order an SST
   * file needs (its writer refuses any other); every key stays where it was.
   */
  private final class InPlace implements StateExchange {
    @Override
    public boolean applies(RuntimeConfig conf) {
      return !edits.adds()
          && oldPartitions == newPartitions
          && stores.stream().noneMatch(StoreSpec::hasColumnFamilies)
          && !"shuffle".equals(conf.get(EDIT_EXCHANGE_CONF, "in-place"));
    }

    @Override
    public String description() {
      return "in-place rewrite, no shuffle ("
          + (!writeRocksDb
              ? "hdfs-snapshot"
              : rocksDbMode == RocksDbSnapshotWriter.Mode.SST ? "rocksdb-sst" : "rocksdb-puts")
          + ")";
    }

    @Override
    public Outcome run(SparkSession spark) {
      JavaSparkContext jsc = JavaSparkContext.fromSparkContext(spark.sparkContext());
      readCounts = new CollectionAccumulator<>();
      jsc.sc().register(readCounts, "stateshift.readCounts");
      deletedCounts = new CollectionAccumulator<>();
      jsc.sc().register(deletedCounts, "stateshift.deletedCounts");
      List<SourceTask> sources = new ArrayList<>();
      for (StoreSpec store : stores) {
        for (int p = 0; p < oldPartitions; p++) {
          sources.add(new SourceTask(store.slot(), p, null));
        }
      }
      StateRedistributionJob job = StateRedistributionJob.this; // tasks need it, not InPlace
      List<PartitionCount> written =
          jsc.parallelize(sources, sources.size()).map(job::rewriteInPlace).collect();
      return new Outcome(
          List.copyOf(readCounts.value()),
          List.copyOf(written),
          List.copyOf(placementNotes.value()));
    }
  }

  /** One task of {@link InPlace}: a (store, partition) read, edited and written where it was. */
  private PartitionCount rewriteInPlace(SourceTask task) {
    Iterator<Tuple2<byte[], Object>> records = read(task);
    return write(task.slot() * newPartitions + task.partition(), records).next();
  }

  // ---- without a shuffle: staged files per new partition (RocksDB SST files, HDFS records) ----

  /**
   * Where the read tasks stage their files for the write tasks, chosen by {@link
   * #chooseExchangeDir} on the driver before the job; tasks read the field.
   */
  private String exchangeDir;

  /**
   * Whether the RocksDB exchange's read tasks write the new partitions themselves ({@link
   * RocksDbSstExchange#splitToMultiple}), set on the driver before the job.
   */
  private boolean splitInPlace;

  private String exchangeDir() {
    return exchangeDir;
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
    if (!chosen.isBlank()) {
      return new Path(chosen.trim(), "stateshift-exchange-" + java.util.UUID.randomUUID())
          .toString();
    }
    if (spark.sparkContext().isLocal()) {
      String localDirs =
          spark
              .sparkContext()
              .getConf()
              .get("spark.local.dir", System.getProperty("java.io.tmpdir"));
      String first = localDirs.split(",")[0].trim();
      return new Path(
              new Path(new java.io.File(first).toURI()),
              "stateshift-exchange-" + java.util.UUID.randomUUID())
          .toString();
    }
    return new Path(new Path(stagingRoot).getParent(), "exchange").toString();
  }

  /**
   * A way without a shuffle: each read task splits old partitions into staged files per new
   * partition, each write task writes new partitions from the files staged for them, both through
   * {@link #runFileExchange}. (The job and its exchanges are serializable: tasks run them.)
   */
  private abstract class FileExchange implements StateExchange, Serializable {
    /** Whether the tasks' stores share one {@link RocksDbTaskScope} (RocksDB), else none. */
    abstract boolean rocksDbScope();

    /**
     * Splits one old partition of a store into staged files; {@code scope} is what the task's
     * RocksDB stores share, null for HDFS-backed ones.
     */
    abstract ReadOutcome split(SourceTask task, RocksDbTaskScope scope);

    /** Writes one new partition of a store from the files staged for it. */
    abstract PartitionCount write(
        StoreSpec spec, int partition, List<StagedFile> files, RocksDbTaskScope scope);

    @Override
    public Outcome run(SparkSession spark) {
      return runFileExchange(spark, this);
    }
  }

  /** What {@link FileExchange#split} hands the exchange's own split of one old partition. */
  private SplitTask splitTask(SourceTask task, String source, TaskTimer timer) {
    StoreSpec spec = stores.get(task.slot());
    int partition = task.partition();
    return new SplitTask(
        spec,
        partition,
        new StateStores.KeyPlacement(spec, newPartitions),
        placementCheck(spec, partition),
        source,
        spec.slot() * newPartitions,
        newPartitions,
        exchangeDir(),
        hadoopConf(),
        timer,
        task.listedFiles(),
        edits.entryEdit(task.slot()));
  }

  /**
   * Generates the code of each store's key placement, where {@link PartitionHash} does not cover
   * the key's types, on a background thread while the job's first tasks start and load their
   * stores: in local mode they share this JVM's cache of generated code, so they find it compiled
   * (in a fresh JVM, Janino's first compilation takes a tenth of a second, and both first tasks
   * would wait for it).
   */
  private void compilePlacementsAhead() {
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

  /**
   * The one fan-out of the file exchanges: the read stage runs the exchange's split for each
   * (store, old partition), the write stage its write for each (store, new partition) with the
   * files staged for it; a task runs its share of these on a few threads, with one {@link
   * RocksDbTaskScope} when the exchange's stores share one.
   */
  private Outcome runFileExchange(SparkSession spark, FileExchange exchange) {
    try {
      return runFileExchangeInFolder(spark, exchange);
    } finally {
      spark.sparkContext().setLocalProperty(PROGRESS_LABEL, null);
    }
  }

  private Outcome runFileExchangeInFolder(SparkSession spark, FileExchange exchange) {
    exchangeDir = chooseExchangeDir(spark);
    splitInPlace = exchange instanceof RocksDbFiles files && files.splitsInPlace(spark.conf());
    if (spark.sparkContext().isLocal()) {
      InMemoryRuns.open(
          exchangeDir,
          (long)
              (StateShiftConf.LOCAL_EXCHANGE_HEAP_SHARE.from(spark)
                  * Runtime.getRuntime().maxMemory()));
    }
    try {
      return runFileExchangeStages(spark, exchange);
    } finally {
      InMemoryRuns.close(exchangeDir);
      try {
        Path staged = new Path(exchangeDir);
        staged.getFileSystem(hadoopConf()).delete(staged, true);
      } catch (IOException e) {
        // on the checkpoint's store: left for the attempt folder's removal, never read by Spark
      }
    }
  }

  private Outcome runFileExchangeStages(SparkSession spark, FileExchange exchange) {
    boolean rocksDbScope = exchange.rocksDbScope();
    JavaSparkContext jsc = JavaSparkContext.fromSparkContext(spark.sparkContext());
    // Several stores (a join's four): a task per core, not per partition, each working through
    // its share of (store, partition) items on a few threads of its own, so that a slow store
    // holds up no wave of tasks and 96 small RocksDB instances cost no task launch each. One
    // store: a task per old partition up to TASKS_PER_SLOT waves of tasks, which Spark balances
    // and shows as progress (at 200 partitions a task each cost more in launches, results and
    // per-task setup than the small partitions' reads); on a remote checkpoint a task per group
    // of at least ioThreads old partitions, read at once.
    int cores = Math.max(1, jsc.defaultParallelism());
    int ioThreads = remoteIoThreads(spark);
    int readTasks =
        stores.size() > 1
            ? Math.min(oldPartitions, cores)
            : Math.min(
                cores * TASKS_PER_SLOT,
                ceilDiv(oldPartitions, Math.min(ioThreads, ceilDiv(oldPartitions, cores))));
    java.util.Map<String, java.util.Map<String, ListedFile>> listing = listOldState();
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
    spark
        .sparkContext()
        .setLocalProperty(
            PROGRESS_LABEL,
            splitInPlace ? "splitting state partitions" : "reading state partitions");
    List<ReadOutcome> reads =
        jsc.parallelize(sources, sources.size())
            .flatMap(
                share -> {
                  beginTask();
                  try (RocksDbTaskScope scope =
                      rocksDbScope ? taskScope(liveStateRoot, storeConf) : null) {
                    return onThreads(share, readThreads, task -> exchange.split(task, scope))
                        .iterator();
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
    fileExchangeLeftOut = List.copyOf(leftOut);
    if (splitInPlace) {
      return new Outcome(
          List.copyOf(read), List.copyOf(writtenInReadStage), List.copyOf(placementNotes.value()));
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
                  beginTask();
                  try (RocksDbTaskScope scope =
                      rocksDbScope ? taskScope(stagingRoot + "/state", writeStoreConf) : null) {
                    return onThreads(share, writeThreads, t -> writeTarget(t, exchange, scope))
                        .iterator();
                  }
                })
            .collect();
    return new Outcome(
        List.copyOf(read), List.copyOf(written), List.copyOf(placementNotes.value()));
  }

  /**
   * The old state's files, by the folder that holds them (relative to the checkpoint), from one
   * flat listing per operator where the store lists a whole prefix at a request per 1,000 files
   * (S3), so that the read tasks list nothing and open each file with no request before its read;
   * null elsewhere, where a listing per folder costs the same and each task lists its own. The
   * state is the stopped query's, which nothing changes while the job runs.
   */
  private java.util.Map<String, java.util.Map<String, ListedFile>> listOldState() {
    Path root = new Path(checkpointRoot());
    try {
      org.apache.hadoop.fs.FileSystem fs = root.getFileSystem(hadoopConf());
      if (!"s3a".equals(fs.getScheme())) {
        return null;
      }
      String rootPrefix = fs.makeQualified(root).toUri().getPath();
      java.util.Map<String, java.util.Map<String, ListedFile>> out = new java.util.HashMap<>();
      for (long operator : stores.stream().mapToLong(StoreSpec::operatorId).distinct().toArray()) {
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
  private static java.util.Map<String, ListedFile> listedFiles(
      java.util.Map<String, java.util.Map<String, ListedFile>> listing, String dir) {
    if (listing == null) {
      return null;
    }
    java.util.Map<String, ListedFile> files =
        new java.util.HashMap<>(listing.getOrDefault(dir, java.util.Map.of()));
    for (String sub : List.of("SSTs", "logs")) {
      listing
          .getOrDefault(dir + "/" + sub, java.util.Map.of())
          .forEach((name, file) -> files.put(sub + "/" + name, file));
    }
    return files;
  }

  /** First in every task of the job. */
  private void beginTask() {
    TaskThrottle.untilThisTaskEnds();
    CompactionThreads.untilThisTaskEnds();
    if (inProcessDeletes) {
      InProcessDeletes.untilThisTaskEnds();
    }
  }

  /**
   * How the write stage shares the (store, new partition) targets among tasks: a task runs on the
   * cores Spark grants it ({@code spark.task.cpus}), so it writes at most that many targets at
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
   * the checkpoint is not on a local disk, where a store mostly waits on its requests; else 1.
   */
  private int remoteIoThreads(SparkSession spark) {
    return remoteIoThreads(spark, checkpointRoot(), hadoopConf());
  }

  /** {@link #remoteIoThreads(SparkSession)} for the checkpoint at {@code root}. */
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

  private static int ceilDiv(int a, int b) {
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

  /**
   * What one task's RocksDB stores under {@code stateRoot}, opened with {@code conf}, share; null
   * when {@code conf} is not RocksDB's.
   */
  private RocksDbTaskScope taskScope(String stateRoot, StateStoreConf conf) {
    return RocksDbTaskScope.open(stateRoot, stores.get(0), conf, hadoopConf());
  }

  /** Runs {@code write} for one (store, new partition) target with the files staged for it. */
  private PartitionCount writeTarget(
      Tuple2<Integer, List<StagedFile>> target, FileExchange exchange, RocksDbTaskScope scope) {
    if (target._1() == stores.size() * newPartitions - 1) {
      FailPoints.reached("staging-task"); // while other partitions may be half written
    }
    return exchange.write(
        stores.get(target._1() / newPartitions), target._1() % newPartitions, target._2(), scope);
  }

  /**
   * RocksDB to RocksDB as raw sorted runs merged into one SST file per new partition, no shuffle
   * ({@link RocksDbSstExchange}): applies in SST mode, unless the session asks for the shuffle.
   */
  private final class RocksDbFiles extends FileExchange {
    @Override
    public boolean applies(RuntimeConfig conf) {
      return readRocksDb
          && rocksDbMode == RocksDbSnapshotWriter.Mode.SST
          && !"shuffle".equals(conf.get(RocksDbSstExchange.EXCHANGE_CONF, "files"));
    }

    @Override
    public String description() {
      return "rocksdb-sst-exchange (raw bytes, no shuffle)";
    }

    /**
     * Whether each old partition is split straight into its new ones ({@link
     * RocksDbSstExchange#splitToMultiple}): the new count the old one (an edit) or a multiple of
     * it, no migration, new versions committed directly (state checkpoint format v1), every key's
     * placement checked with a check that refuses a misplaced key, old versions read from their
     * snapshots (without changelog checkpointing, where the exchange's changelog split is quicker),
     * and not turned off.
     */
    boolean splitsInPlace(RuntimeConfig conf) {
      if (newPartitions < oldPartitions
          || newPartitions % oldPartitions != 0
          || writeStoreConf != storeConf // a migration: written with other settings than read
          || !RocksDbSnapshotReader.ENABLED
          || !RocksDbDirectCommit.applies(writeStoreConf)
          || !StateShiftConf.ROCKSDB_SPLIT_IN_PLACE.from(key -> conf.get(key, null))
          || org.apache.spark.sql.execution.streaming.state.RocksDBConf$.MODULE$
              .apply(storeConf)
              .enableChangelogCheckpointing()) {
        return false;
      }
      return stores.stream()
          .allMatch(
              spec -> {
                PlacementCheck.Mode mode = placementChecks.get(spec.slot());
                return !spec.hasColumnFamilies()
                    && (mode == PlacementCheck.Mode.STRICT || mode == PlacementCheck.Mode.DERIVED);
              });
    }

    /** {@link RocksDbSstExchange#splitToMultiple} of one old partition, read from {@code db}. */
    private ReadOutcome splitToMultiple(
        SplitTask split, org.rocksdb.RocksDB db, RocksDbTaskScope scope) {
      return RocksDbSstExchange.splitToMultiple(
          split,
          db,
          scope,
          oldPartitions,
          stagingRoot + "/state",
          writeBatchId + 1,
          stores.size() * newPartitions - 1);
    }

    @Override
    boolean rocksDbScope() {
      return true;
    }

    @Override
    ReadOutcome split(SourceTask task, RocksDbTaskScope scope) {
      StoreSpec spec = stores.get(task.slot());
      TaskTimer timer = new TaskTimer("read " + spec.storeName() + "/" + task.partition());
      String source = versionFiles(spec, task.partition());
      SplitTask split = splitTask(task, source, timer);
      scala.Option<String> checkpointId =
          StateStores.checkpointId(readCheckpointIds, spec, task.partition());
      try {
        if (RocksDbSnapshotReader.ENABLED && scope != null) {
          try (RocksDbSnapshotReader snapshot =
              RocksDbSnapshotReader.open(
                  scope,
                  new StateStoreId(
                      liveStateRoot, spec.operatorId(), task.partition(), spec.storeName()),
                  readVersion,
                  checkpointId,
                  hadoopConf(),
                  timer,
                  split.listedFiles())) {
            if (snapshot != null) {
              timer.lap("open-read-only");
              String zip =
                  spec.dir(task.partition())
                      + "/"
                      + readVersion
                      + (checkpointId.isDefined() ? "_" + checkpointId.get() : "")
                      + ".zip";
              if (splitInPlace) {
                return splitToMultiple(split.withSource(zip), snapshot.db(), scope);
              }
              return RocksDbSstExchange.split(split.withSource(zip), snapshot, scope);
            }
          }
        }
        // Without a snapshot of this version (changelog checkpointing on when it was written): a
        // split in place loads it with Spark's provider, which replays the changelogs.
        if (!splitInPlace
            && RocksDbSnapshotReader.ENABLED
            && scope != null
            && checkpointId.isEmpty()
            && !spec.hasColumnFamilies()) {
          ReadOutcome fromChangelogs =
              RocksDbChangelogSplit.split(
                  split,
                  scope,
                  new StateStoreId(
                      liveStateRoot, spec.operatorId(), task.partition(), spec.storeName()),
                  readVersion,
                  HdfsFileExchange.codec(compressionCodec),
                  checkpointRoot());
          if (fromChangelogs != null) {
            return fromChangelogs;
          }
        }
        StateStoreProvider provider =
            StateStores.open(liveStateRoot, spec, task.partition(), storeConf, hadoopConf());
        try {
          ReadStateStore store = StateStores.loadToRead(provider, readVersion, checkpointId);
          timer.lap("load");
          try {
            if (splitInPlace) {
              return splitToMultiple(split, RocksDbSstExchange.nativeDb(store), scope);
            }
            return RocksDbSstExchange.split(split, store);
          } finally {
            StateCalls.release(store);
          }
        } finally {
          provider.close();
        }
      } catch (RuntimeException e) {
        if (!(e instanceof StateShiftException) && RocksDbSstExchange.isCorruption(e)) {
          throw rocksDbDamage(spec, task.partition(), source, e);
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
      return ingestRuns(writeSpec(spec.slot()), partition, files, scope);
    }
  }

  /** The RocksDB file exchange's write side: the staged runs of one new partition, ingested. */
  private PartitionCount ingestRuns(
      StoreSpec spec, int partition, List<StagedFile> files, RocksDbTaskScope scope) {
    RocksDbSnapshotWriter.Written written =
        RocksDbSstExchange.ingest(
            stagingRoot + "/state",
            spec,
            partition,
            writeStoreConf,
            hadoopConf(),
            writeBatchId,
            files,
            scope);
    return new PartitionCount(
        spec.slot(), partition, written.rows(), written.bytes(), written.checkpointId());
  }

  /**
   * HDFS-backed state to RocksDB (a migration) without a shuffle: the HDFS file exchange's read
   * side, each entry re-encoded for RocksDB and staged as sorted runs ({@link RocksDbRunStaging}),
   * and the RocksDB file exchange's write side. Applies where both file exchanges would: state
   * checkpoint format v1 on the read side, RocksDB in SST mode on the write side, no column
   * families, unless the session asks for the shuffle.
   */
  private final class HdfsToRocksDbFiles extends FileExchange {
    @Override
    public boolean applies(RuntimeConfig conf) {
      return !readRocksDb
          && writeRocksDb
          && rocksDbMode == RocksDbSnapshotWriter.Mode.SST
          && readCheckpointIds == null
          && stores.stream().noneMatch(StoreSpec::hasColumnFamilies)
          && !"shuffle".equals(conf.get(HdfsFileExchange.EXCHANGE_CONF, "files"))
          && !"shuffle".equals(conf.get(RocksDbSstExchange.EXCHANGE_CONF, "files"));
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
      StoreSpec spec = stores.get(task.slot());
      TaskTimer timer = new TaskTimer("read " + spec.storeName() + "/" + task.partition());
      SplitTask split = splitTask(task, versionFiles(spec, task.partition()), timer);
      try {
        return HdfsFileExchange.split(
            split,
            new Path(new Path(liveStateRoot).getParent(), spec.dir(task.partition())),
            readVersion,
            HdfsFileExchange.codec(compressionCodec),
            checkpointRoot(),
            (stagingFs, stagingDir) -> new RocksDbRunStaging(split, stagingFs, stagingDir));
      } finally {
        timer.report();
      }
    }

    @Override
    PartitionCount write(
        StoreSpec spec, int partition, List<StagedFile> files, RocksDbTaskScope scope) {
      return ingestRuns(spec, partition, files, scope);
    }
  }

  /**
   * HDFS-backed state as raw staged files, no shuffle ({@link HdfsFileExchange}): applies to state
   * checkpoint format v1 without column families, unless the session asks for the shuffle.
   */
  private final class HdfsFiles extends FileExchange {
    @Override
    public boolean applies(RuntimeConfig conf) {
      // State checkpoint format v2 names files by unique id: the provider reads those.
      return !readRocksDb
          && !writeRocksDb
          && readCheckpointIds == null
          && stores.stream().noneMatch(StoreSpec::hasColumnFamilies)
          && !"shuffle".equals(conf.get(HdfsFileExchange.EXCHANGE_CONF, "files"));
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
      StoreSpec spec = stores.get(task.slot());
      TaskTimer timer = new TaskTimer("read " + spec.storeName() + "/" + task.partition());
      try {
        return HdfsFileExchange.split(
            splitTask(task, versionFiles(spec, task.partition()), timer),
            new Path(new Path(liveStateRoot).getParent(), spec.dir(task.partition())),
            readVersion,
            compressionCodec,
            checkpointRoot());
      } finally {
        timer.report();
      }
    }

    @Override
    PartitionCount write(
        StoreSpec spec, int partition, List<StagedFile> files, RocksDbTaskScope scope) {
      return HdfsFileExchange.writeSnapshot(
          snapshotFile(spec, partition), spec, partition, files, compressionCodec, hadoopConf());
    }
  }

  private Path snapshotFile(StoreSpec spec, int partition) {
    return new Path(new Path(stagingRoot, spec.dir(partition)), writtenVersion() + ".snapshot");
  }

  private static final ClassTag<byte[]> BYTES = ClassTag$.MODULE$.apply(byte[].class);
  private static final ClassTag<Object> OBJECT = ClassTag$.MODULE$.Object();

  // ---- read side: runs in a task per old (store, partition) ----

  private Iterator<Tuple2<byte[], Object>> read(SourceTask task) {
    beginTask();
    StoreSpec spec = stores.get(task.slot());
    if (spec.hasColumnFamilies()) {
      return readColumnFamilies(task, spec);
    }
    TaskTimer timer = new TaskTimer("read " + spec.storeName() + "/" + task.partition());
    StateStoreProvider provider =
        StateStores.open(liveStateRoot, spec, task.partition(), storeConf, hadoopConf());
    ReadStateStore store;
    try {
      store =
          StateStores.loadToRead(
              provider,
              readVersion,
              StateStores.checkpointId(readCheckpointIds, spec, task.partition()));
    } catch (RuntimeException e) {
      provider.close();
      if (RocksDbSstExchange.isCorruption(e)) {
        throw rocksDbDamage(spec, task.partition(), versionFiles(spec, task.partition()), e);
      }
      throw e;
    }
    StateStoreIterator<UnsafeRowPair> entries = LineCalls.rows(store);
    StateEdits.Kept<UnsafeRowPair> rows = edits.kept(entries, spec.slot(), task.partition());
    timer.lap("load");
    TaskContext.get()
        .addTaskCompletionListener(
            (TaskCompletionListener)
                context -> {
                  timer.lap("iterate+shuffle-write");
                  entries.close();
                  StateCalls.release(store);
                  provider.close();
                  timer.lap("close");
                  timer.report();
                });
    StateStores.KeyPlacement placement = new StateStores.KeyPlacement(spec, newPartitions);
    PlacementCheck check = placementCheck(spec, task.partition());
    String source = versionFiles(spec, task.partition());
    RocksDbSnapshotWriter.Encoding encoding =
        rocksDbMode == RocksDbSnapshotWriter.Mode.SST
            ? new RocksDbSnapshotWriter.Encoding(writeSpec(spec.slot()))
            : null;
    boolean countsLeftOut = edits.leavesOut(spec.slot());
    int firstTarget = spec.slot() * newPartitions;
    return new Iterator<>() {
      long count;
      long bytes;
      boolean reported;

      @Override
      public boolean hasNext() {
        boolean more = rows.hasNext();
        if (!more && !reported) {
          reported = true;
          readCounts.add(
              new PartitionCount(
                  task.slot(), task.partition(), count + rows.leftOut(), bytes, null));
          if (countsLeftOut) {
            deletedCounts.add(
                new PartitionCount(task.slot(), task.partition(), rows.leftOut(), 0, null));
          }
        }
        return more;
      }

      @Override
      public Tuple2<byte[], Object> next() {
        if (!hasNext()) {
          throw new NoSuchElementException();
        }
        UnsafeRowPair pair = rows.next();
        int hash = placement.hash(pair.key());
        if (check != null && check.misplaced(hash)) {
          check.report(source);
        }
        int target = firstTarget + StateStores.KeyPlacement.pmod(hash, newPartitions);
        UnsafeRow value = edits.value(spec.slot(), task.partition(), pair.key(), pair.value());
        byte[] record =
            encoding != null
                ? encoding.record(target, pair.key(), value)
                : StateRecords.pack(target, pair.key(), value);
        count++;
        bytes += pair.key().getSizeInBytes() + pair.value().getSizeInBytes();
        return new Tuple2<>(record, null);
      }
    };
  }

  /** An upsert's entries for one store slot as shuffle records, tagged with their new partition. */
  private Iterator<Tuple2<byte[], Object>> upsertRecords(
      int slot, Iterator<org.apache.spark.sql.catalyst.expressions.UnsafeRow[]> entries) {
    StoreSpec spec = stores.get(slot);
    StateStores.KeyPlacement placement = new StateStores.KeyPlacement(spec, newPartitions);
    RocksDbSnapshotWriter.Encoding encoding =
        rocksDbMode == RocksDbSnapshotWriter.Mode.SST
            ? new RocksDbSnapshotWriter.Encoding(writeSpec(slot))
            : null;
    int firstTarget = slot * newPartitions;
    return new Iterator<>() {
      @Override
      public boolean hasNext() {
        return entries.hasNext();
      }

      @Override
      public Tuple2<byte[], Object> next() {
        var entry = entries.next();
        int target =
            firstTarget + StateStores.KeyPlacement.pmod(placement.hash(entry[0]), newPartitions);
        byte[] record =
            encoding != null
                ? encoding.record(target, entry[0], entry[1])
                : StateRecords.pack(target, entry[0], entry[1]);
        return new Tuple2<>(record, null);
      }
    };
  }

  /** The read side for a store with several column families (transformWithState). */
  private Iterator<Tuple2<byte[], Object>> readColumnFamilies(SourceTask task, StoreSpec spec) {
    ColumnFamilyStates.Reader reader =
        new ColumnFamilyStates.Reader(
            liveStateRoot,
            spec,
            task.partition(),
            readVersion,
            StateStores.checkpointId(readCheckpointIds, spec, task.partition()),
            storeConf,
            hadoopConf());
    TaskContext.get().addTaskCompletionListener((TaskCompletionListener) context -> reader.close());
    StateEdits.Kept<ColumnFamilyStates.Entry> entries =
        edits.keptEntries(
            reader.entries(
                spec,
                newPartitions,
                placementCheck(spec, task.partition()),
                versionFiles(spec, task.partition())),
            spec.slot(),
            task.partition());
    boolean countsLeftOut = edits.leavesOut(spec.slot());
    int firstTarget = spec.slot() * newPartitions;
    return new Iterator<>() {
      long count;
      long bytes;
      boolean reported;

      @Override
      public boolean hasNext() {
        boolean more = entries.hasNext();
        if (!more && !reported) {
          reported = true;
          readCounts.add(
              new PartitionCount(
                  task.slot(), task.partition(), count + entries.leftOut(), bytes, null));
          if (countsLeftOut) {
            deletedCounts.add(
                new PartitionCount(task.slot(), task.partition(), entries.leftOut(), 0, null));
          }
        }
        return more;
      }

      @Override
      public Tuple2<byte[], Object> next() {
        ColumnFamilyStates.Entry entry = entries.next();
        count++;
        bytes += entry.bytes();
        return new Tuple2<>(entry.record(firstTarget + entry.newPartition()), null);
      }
    };
  }

  // ---- write side: runs in a task per new (store, partition) ----

  private Iterator<PartitionCount> write(int target, Iterator<Tuple2<byte[], Object>> shuffled) {
    beginTask();
    StoreSpec spec = writeSpec(target / newPartitions);
    int partition = target % newPartitions;
    if (target == stores.size() * newPartitions - 1) {
      FailPoints.reached("staging-task"); // while other partitions may be half written
    }
    Iterator<byte[]> records =
        new Iterator<>() {
          @Override
          public boolean hasNext() {
            return shuffled.hasNext();
          }

          @Override
          public byte[] next() {
            return shuffled.next()._1();
          }
        };
    String stateRoot = stagingRoot + "/state";
    PartitionCount count;
    if (!writeRocksDb) {
      count = writeHdfsSnapshot(spec, partition, records);
    } else if (spec.hasColumnFamilies()) {
      RocksDbSnapshotWriter.Written written =
          ColumnFamilyStates.write(
              stateRoot, spec, partition, writeStoreConf, hadoopConf(), writeBatchId, records);
      count =
          new PartitionCount(
              spec.slot(), partition, written.rows(), written.bytes(), written.checkpointId());
    } else {
      RocksDbSnapshotWriter.Written written =
          rocksDbMode == RocksDbSnapshotWriter.Mode.SST
              ? RocksDbSnapshotWriter.writeSorted(
                  stateRoot, spec, partition, writeStoreConf, hadoopConf(), writeBatchId, records)
              : RocksDbSnapshotWriter.writeWithPuts(
                  stateRoot, spec, partition, writeStoreConf, hadoopConf(), writeBatchId, records);
      count =
          new PartitionCount(
              spec.slot(), partition, written.rows(), written.bytes(), written.checkpointId());
    }
    return List.of(count).iterator();
  }

  /**
   * The HDFS-backed store's snapshot format is simple enough to write directly: a compressed stream
   * of [keyLength][key][valueLength][value] records ended by -1.
   */
  private PartitionCount writeHdfsSnapshot(
      StoreSpec spec, int partition, Iterator<byte[]> records) {
    Path file = snapshotFile(spec, partition);
    long rows = 0;
    long bytes = 0;
    try (HdfsFileExchange.SnapshotWriter out =
        new HdfsFileExchange.SnapshotWriter(
            file.getFileSystem(hadoopConf()), file, HdfsFileExchange.codec(compressionCodec))) {
      while (records.hasNext()) {
        byte[] record = records.next();
        int keyLength = StateRecords.keyLength(record);
        int valueOffset = StateRecords.valueOffset(record);
        int valueLength = record.length - valueOffset;
        out.append(record, StateRecords.HEADER, keyLength, record, valueOffset, valueLength);
        rows++;
        bytes += keyLength + valueLength;
      }
    } catch (IOException e) {
      throw new UncheckedIOException("Cannot write " + file + ": " + e.getMessage(), e);
    }
    return new PartitionCount(spec.slot(), partition, rows, bytes, null);
  }
}
