package io.stateshift.spark.state;

import io.stateshift.checkpoint.PlacementCheck;
import io.stateshift.checkpoint.PreparedManifest;
import io.stateshift.checkpoint.StateFileDamage;
import io.stateshift.checkpoint.StoreSpec;
import io.stateshift.checkpoint.TailFiles;
import io.stateshift.checkpoint.spi.Redistribution;
import io.stateshift.config.StateShiftConf;
import io.stateshift.protocol.FailPoints;
import java.io.IOException;
import java.io.InputStream;
import java.io.Serializable;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.HexFormat;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;
import org.apache.spark.api.java.JavaSparkContext;
import org.apache.spark.broadcast.Broadcast;
import org.apache.spark.io.CompressionCodec;
import org.apache.spark.rdd.RDD;
import org.apache.spark.rdd.ShuffledRDD;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.catalyst.expressions.UnsafeRow;
import org.apache.spark.sql.execution.streaming.state.RocksDBCheckpointMetadata;
import org.apache.spark.sql.execution.streaming.state.RocksDBKeyStateEncoder;
import org.apache.spark.sql.execution.streaming.state.RocksDBSstFile;
import org.apache.spark.sql.execution.streaming.state.UnsafeRowDataEncoder;
import org.apache.spark.unsafe.Platform;
import org.apache.spark.util.LongAccumulator;
import org.apache.spark.util.SerializableConfiguration;
import scala.Tuple2;
import scala.reflect.ClassTag;
import scala.reflect.ClassTag$;

/**
 * Brings a prepared layout (the state of batch V in the new partition count) up to the last
 * committed batch L: one task per old (store, partition) reads the logs of state versions V+2..L+1
 * (batches V+1..L), the HDFS-backed store's delta files or RocksDB's changelog files (the same
 * record format), keeps the newest entry of each key, a put or a removal ({@link DeltaChain}), and
 * sends it to its new partition with the repartition's placement ({@link
 * StateStores.KeyPlacement}); each write task takes a few new (store, partition)s (at once on a
 * remote checkpoint), checks each prepared file against the manifest (SHA-256, and for RocksDB the
 * key count and SST file sizes its zip records) and stages two versions: the prepared state as
 * version L+1, its files carried over as they are, and the tail as version L+2, a log of the newest
 * put or removal of each key it changed. Spark's provider loads L+2 as after any restart: the
 * snapshot of L+1, then the log.
 *
 * <p>A key lives in one old partition, so the tails of different old partitions never touch the
 * same key, and applying each key's newest entry is applying the batches in order.
 */
final class PreparedTailReplay implements Redistribution, Serializable {
  private static final byte PUT = 1;
  private static final byte REMOVE = 0;
  private static final ClassTag<byte[]> BYTES = ClassTag$.MODULE$.apply(byte[].class);
  private static final ClassTag<Object> OBJECT = ClassTag$.MODULE$.Object();
  private static final int LOCAL_THREADS = 4;

  /** Threads the driver reads a small tail on, at most (the driver's cores are few). */
  private static final int DRIVER_THREADS = 32;

  private record SourceTask(int slot, int partition) implements Serializable {}

  private final String checkpointRoot;
  private final String stagingRoot;
  private final transient SerializableConfiguration driverConf;
  private Broadcast<SerializableConfiguration> sharedConf;
  private final List<StoreSpec> stores;
  private final int oldPartitions;
  private final int newPartitions;
  private final long lastCommitted;
  private final String codecName;
  private final boolean rocksDb;
  private final PreparedManifest manifest;
  private final TailFiles logs;

  /** State checkpoint format v2: each version's files are named by a unique id too. */
  private final boolean checkpointIds;

  private LongAccumulator replayed;

  /**
   * Each thread's placement per store slot: building one (Spark's generated hash code) costs about
   * a millisecond, more than placing a partition's share of a small tail, and it is not
   * thread-safe.
   */
  private transient volatile ThreadLocal<Map<Integer, StateStores.KeyPlacement>> placements;

  private transient long rowsReplayed;

  PreparedTailReplay(
      String checkpointRoot,
      String stagingRoot,
      Configuration hadoopConf,
      List<StoreSpec> stores,
      int oldPartitions,
      int newPartitions,
      long lastCommitted,
      String codecName,
      boolean rocksDb,
      PreparedManifest manifest,
      TailFiles logs,
      boolean checkpointIds) {
    this.checkpointRoot = checkpointRoot;
    this.stagingRoot = stagingRoot;
    this.driverConf = new SerializableConfiguration(hadoopConf);
    this.stores = List.copyOf(stores);
    this.oldPartitions = oldPartitions;
    this.newPartitions = newPartitions;
    this.lastCommitted = lastCommitted;
    this.codecName = codecName;
    this.rocksDb = rocksDb;
    this.manifest = manifest;
    this.logs = logs;
    this.checkpointIds = checkpointIds;
  }

  private Configuration conf() {
    return sharedConf != null ? sharedConf.value().value() : driverConf.value();
  }

  @Override
  public Redistribution checkPlacement(Map<Integer, PlacementCheck.Mode> modes) {
    return this; // the prepared keys were checked when the layout was prepared
  }

  @Override
  public String writeStrategy(SparkSession spark) {
    return "prepared-tail-replay (prepared at batch "
        + manifest.preparedBatch()
        + ", batches "
        + (manifest.preparedBatch() + 1)
        + ".."
        + lastCommitted
        + " replayed from the "
        + (rocksDb ? "changelog" : "delta")
        + " files)";
  }

  @Override
  public long rowsReplayed() {
    return rowsReplayed;
  }

  @Override
  public Outcome run(SparkSession spark) {
    JavaSparkContext jsc = JavaSparkContext.fromSparkContext(spark.sparkContext());
    replayed = jsc.sc().longAccumulator("stateshift.rowsReplayed");
    try {
      List<SourceTask> sources = new ArrayList<>();
      for (StoreSpec store : stores) {
        for (int p = 0; p < oldPartitions; p++) {
          sources.add(new SourceTask(store.slot(), p));
        }
      }
      int targets = stores.size() * newPartitions;
      int remote = StateRedistributionJob.remoteIoThreads(spark, checkpointRoot, conf());
      int perTask = targetsPerWriteTask(remote, targets, jsc.defaultParallelism());
      // a write task's partitions are mostly file operations, which overlap: on a local disk too
      int atOnce = Math.max(remote, LOCAL_THREADS);
      List<List<byte[]>> shares =
          readOnDriver(
              sources,
              Math.min(DRIVER_THREADS, Math.max(remote, LOCAL_THREADS * jsc.defaultParallelism())),
              (targets + perTask - 1) / perTask,
              perTask,
              StateShiftConf.PREPARED_DRIVER_TAIL_BYTES.from(spark));
      List<PartitionCount> written;
      if (shares != null && jsc.sc().isLocal()) {
        // local mode: Spark's tasks would run on this JVM's threads; running the writes here
        // spares the job's scheduling and the configuration's broadcast
        written = writeOnDriver(shares, perTask, atOnce, jsc.defaultParallelism());
      } else if (shares != null) {
        sharedConf = jsc.broadcast(driverConf);
        written =
            jsc.parallelize(shares, shares.size())
                .mapPartitionsWithIndex(
                    (task, share) -> write(task, perTask, atOnce, records(share)), false)
                .collect();
      } else {
        // a large tail: a few tasks per core read it, a shuffle takes it to the write tasks
        sharedConf = jsc.broadcast(driverConf);
        int readTasks = Math.min(sources.size(), Math.max(1, 2 * jsc.defaultParallelism()));
        RDD<Tuple2<byte[], Object>> tagged =
            jsc.parallelize(sources, readTasks)
                .flatMap(
                    source -> {
                      List<Tuple2<byte[], Object>> out = readTail(source);
                      replayed.add(out.size());
                      return out.iterator();
                    })
                .rdd();
        ShuffledRDD<byte[], Object, Object> shuffled =
            new ShuffledRDD<>(
                tagged,
                new StateRecords.TargetPartitioner(targets, perTask),
                BYTES,
                OBJECT,
                OBJECT);
        shuffled.setSerializer(new RawRecordSerializer());
        written =
            shuffled
                .toJavaRDD()
                .mapPartitionsWithIndex(
                    (task, records) -> write(task, perTask, atOnce, records), false)
                .collect();
      }
      rowsReplayed = replayed.value();
      // the rows each new partition must hold: its prepared rows, minus the keys the tail
      // changed, plus the tail's puts, counted as they were applied
      return new Outcome(List.copyOf(written), List.copyOf(written), List.of());
    } finally {
      if (sharedConf != null) {
        sharedConf.destroy();
        sharedConf = null;
      }
    }
  }

  private StateStores.KeyPlacement placement(StoreSpec spec) {
    if (placements == null) {
      placements = ThreadLocal.withInitial(HashMap::new);
    }
    return placements
        .get()
        .computeIfAbsent(spec.slot(), slot -> new StateStores.KeyPlacement(spec, newPartitions));
  }

  /**
   * Reads the whole tail on the driver, on {@code threads} threads, and returns each write task's
   * records; null, having read no more than about {@code budget} bytes, when the tail is larger. A
   * tail is usually small (the batches since the prepared one), and a Spark stage to read it and a
   * shuffle to route it cost more than the reading.
   */
  private List<List<byte[]>> readOnDriver(
      List<SourceTask> sources, int threads, int writeTasks, int perTask, long budget) {
    if (budget <= 0) {
      return null;
    }
    java.util.concurrent.atomic.AtomicLong bytes = new java.util.concurrent.atomic.AtomicLong();
    List<List<Tuple2<byte[], Object>>> read =
        StateRedistributionJob.onThreads(
            sources,
            threads,
            source -> {
              if (bytes.get() > budget) {
                return List.of();
              }
              try {
                List<Tuple2<byte[], Object>> out = readTail(source);
                bytes.addAndGet(out.stream().mapToLong(r -> r._1().length).sum());
                return out;
              } catch (IOException e) {
                throw new UncheckedIOException(e);
              }
            });
    if (bytes.get() > budget) {
      return null;
    }
    List<List<byte[]>> shares = new ArrayList<>();
    for (int t = 0; t < writeTasks; t++) {
      shares.add(new ArrayList<>());
    }
    long count = 0;
    for (List<Tuple2<byte[], Object>> partition : read) {
      for (Tuple2<byte[], Object> record : partition) {
        shares.get(StateRecords.target(record._1()) / perTask).add(record._1());
        count++;
      }
    }
    replayed.add(count);
    return shares;
  }

  /** Each write task's share written on {@code cores} driver threads, as local mode's tasks. */
  private List<PartitionCount> writeOnDriver(
      List<List<byte[]>> shares, int perTask, int atOnce, int cores) {
    List<Integer> tasks = new ArrayList<>();
    for (int t = 0; t < shares.size(); t++) {
      tasks.add(t);
    }
    List<PartitionCount> written = new ArrayList<>();
    StateRedistributionJob.onThreads(
            tasks,
            cores,
            task -> {
              List<PartitionCount> out = new ArrayList<>();
              try {
                write(task, perTask, atOnce, records(List.of(shares.get(task)).iterator()))
                    .forEachRemaining(out::add);
              } catch (IOException e) {
                throw new UncheckedIOException(e);
              }
              return out;
            })
        .forEach(written::addAll);
    return written;
  }

  /** A write task's share as the shuffle would hand it over. */
  private static Iterator<Tuple2<byte[], Object>> records(Iterator<List<byte[]>> share) {
    List<Tuple2<byte[], Object>> out = new ArrayList<>();
    share.forEachRemaining(records -> records.forEach(r -> out.add(new Tuple2<>(r, null))));
    return out.iterator();
  }

  /** The newest entry of every key the tail changed in one old partition, tagged by target. */
  private List<Tuple2<byte[], Object>> readTail(SourceTask task) throws IOException {
    StoreSpec spec = stores.get(task.slot());
    TaskTimer timer = new TaskTimer("tail " + spec.storeName() + "/" + task.partition());
    Path dir = new Path(checkpointRoot, spec.dir(task.partition()));
    FileSystem fs = dir.getFileSystem(conf());
    List<Path> deltas = new ArrayList<>();
    for (long v = lastCommitted + 1; v >= manifest.preparedBatch() + 2; v--) {
      String name = logs.name(spec, task.partition(), v);
      if (name == null) {
        throw new PreparedManifest.Rejected(
            "the commit of batch " + (v - 1) + " names no state file for " + dir);
      }
      deltas.add(new Path(dir, name));
    }
    List<Tuple2<byte[], Object>> out = new ArrayList<>();
    if (deltas.isEmpty()) {
      return out;
    }
    CompressionCodec codec = HdfsFileExchange.codec(codecName);
    if (spec.hasColumnFamilies()) {
      List<Path> oldestFirst = new ArrayList<>(deltas);
      java.util.Collections.reverse(oldestFirst);
      return readColumnFamilyTail(spec, fs, dir, oldestFirst, codec);
    }
    DeltaChain chain;
    timer.lap("names");
    try {
      chain =
          checkpointIds
              ? DeltaChain.readWithLineage(fs, deltas, codec)
              : DeltaChain.read(fs, deltas, codec);
    } catch (StateFileDamage.DamagedFile e) {
      throw StateFileDamage.refusal(checkpointRoot, e);
    }
    timer.lap("read");
    StateStores.KeyPlacement placement = placement(spec);
    UnsafeRow keyRow = new UnsafeRow(spec.keySchema().length());
    RocksDbEncoding storedKeys = rocksDb ? new RocksDbEncoding(spec) : null;
    int firstTarget = spec.slot() * newPartitions;
    chain.forEachNewest(
        (data, keyOffset, keyLength, valueOffset, valueLength) -> {
          byte[] key = Arrays.copyOfRange(data, keyOffset, keyOffset + keyLength);
          UnsafeRow row = keyRow;
          if (storedKeys != null) {
            row = storedKeys.decodeKey(key); // RocksDB stores the row behind Spark's encoding
          } else {
            keyRow.pointTo(data, Platform.BYTE_ARRAY_OFFSET + keyOffset, keyLength);
          }
          int target =
              firstTarget + StateStores.KeyPlacement.pmod(placement.hash(row), newPartitions);
          byte[] value;
          if (valueLength < 0) {
            value = new byte[] {REMOVE};
          } else {
            value = new byte[valueLength + 1];
            value[0] = PUT;
            System.arraycopy(data, valueOffset, value, 1, valueLength);
          }
          out.add(new Tuple2<>(StateRecords.pack(target, key, value), null));
        });
    timer.lap("tag");
    timer.report();
    return out;
  }

  /**
   * The changes of every key the tail changed in one old partition of a store with column families
   * ({@link ColumnFamilyTail}), tagged by target; each key is sent as its family's index in the
   * store's list of families and its bytes after the old partition's family id.
   */
  private List<Tuple2<byte[], Object>> readColumnFamilyTail(
      StoreSpec spec, FileSystem fs, Path dir, List<Path> oldestFirst, CompressionCodec codec)
      throws IOException {
    Map<ByteBuffer, byte[]> changes = ColumnFamilyTail.read(fs, oldestFirst, codec);
    List<Tuple2<byte[], Object>> out = new ArrayList<>();
    if (changes.isEmpty()) {
      return out;
    }
    Map<Short, String> oldNames = ColumnFamilyTail.oldFamilies(fs, dir, lastCommitted + 1);
    List<ColumnFamilySchema> families = ColumnFamilySchema.of(spec);
    Map<String, Integer> indexOf = new HashMap<>();
    for (int i = 0; i < families.size(); i++) {
      indexOf.put(families.get(i).name(), i);
    }
    StateStores.KeyPlacement[] placements = new StateStores.KeyPlacement[families.size()];
    RocksDBKeyStateEncoder[] keys = new RocksDBKeyStateEncoder[families.size()];
    int firstTarget = spec.slot() * newPartitions;
    for (Map.Entry<ByteBuffer, byte[]> change : changes.entrySet()) {
      byte[] stored = change.getKey().array();
      short id = ColumnFamilyTail.familyId(stored);
      Integer family = indexOf.get(oldNames.get(id));
      if (family == null) {
        throw new PreparedManifest.Rejected(
            "the changelog of "
                + dir
                + " changes column family "
                + id
                + " ("
                + oldNames.get(id)
                + "), which is not one the state schema lists");
      }
      if (keys[family] == null) {
        ColumnFamilySchema schema = families.get(family);
        keys[family] =
            schema
                .encoderSpec()
                .toEncoder(
                    new UnsafeRowDataEncoder(schema.encoderSpec(), schema.valueSchema()), true);
        placements[family] = new StateStores.KeyPlacement(spec, schema, newPartitions);
      }
      byte[] key = Arrays.copyOf(stored, stored.length);
      key[0] = (byte) (family >>> 8); // the family's index, not the old partition's id for it
      key[1] = (byte) (int) family;
      UnsafeRow row =
          keys[family].decodeKey(
              Arrays.copyOfRange(stored, ColumnFamilyTail.FAMILY_ID_BYTES, stored.length));
      int target =
          firstTarget + StateStores.KeyPlacement.pmod(placements[family].hash(row), newPartitions);
      out.add(new Tuple2<>(StateRecords.pack(target, key, change.getValue()), null));
    }
    return out;
  }

  /**
   * New partitions a write task takes: on a local disk, a core's share, since a partition's work
   * there (a few links and one small file, 2-8 ms) is less than what Spark spends launching and
   * feeding a task (10-15 ms); on a remote checkpoint ({@link StateShiftConf#TASK_IO_THREADS}), as
   * many as it writes at once, as a partition's time there is round trips.
   */
  private int targetsPerWriteTask(int remote, int targets, int cores) {
    int perCore = (targets + Math.max(1, cores) - 1) / Math.max(1, cores);
    return remote > 1 ? Math.min(remote, Math.max(1, targets / Math.max(1, cores))) : perCore;
  }

  /** One write task: the new partitions {@code task * perTask ..}, {@code atOnce} at a time. */
  private Iterator<PartitionCount> write(
      int task, int perTask, int atOnce, Iterator<Tuple2<byte[], Object>> records)
      throws IOException {
    int first = task * perTask;
    int end = Math.min(first + perTask, stores.size() * newPartitions);
    List<Map<ByteBuffer, byte[]>> tails = new ArrayList<>();
    for (int t = first; t < end; t++) {
      tails.add(new HashMap<>());
    }
    while (records.hasNext()) {
      byte[] record = records.next()._1();
      int keyLength = StateRecords.keyLength(record);
      int valueOffset = StateRecords.valueOffset(record);
      byte[] key = Arrays.copyOfRange(record, StateRecords.HEADER, StateRecords.HEADER + keyLength);
      byte[] change = Arrays.copyOfRange(record, valueOffset, record.length);
      tails.get(StateRecords.target(record) - first).put(ByteBuffer.wrap(key), change);
    }
    List<Integer> targets = new ArrayList<>();
    for (int t = first; t < end; t++) {
      targets.add(t);
    }
    return StateRedistributionJob.onThreads(
            targets,
            atOnce,
            t -> {
              try {
                return writeTarget(t, tails.get(t - first));
              } catch (IOException e) {
                throw new UncheckedIOException(e);
              }
            })
        .iterator();
  }

  /**
   * Writes one new partition as two versions: the prepared state, checked against its manifest, as
   * version L+1 (its files carried over as they are: hard-linked on a local disk, renamed
   * elsewhere), and the tail as version L+2, a log of puts and removals in the store's own format
   * (RocksDB's changelog file, the HDFS-backed store's delta file), which Spark's provider applies
   * to L+1 when it loads L+2, as it does after any restart. Nothing of the state is decoded,
   * rewritten or opened.
   */
  private PartitionCount writeTarget(int target, Map<ByteBuffer, byte[]> tail) throws IOException {
    StoreSpec spec = stores.get(target / newPartitions);
    int partition = target % newPartitions;
    if (target == stores.size() * newPartitions - 1) {
      FailPoints.reached("staging-task");
    }
    TaskTimer timer = new TaskTimer("prepared " + spec.storeName() + "/" + partition);
    PreparedManifest.PartitionFile prepared = preparedFile(spec, partition);
    Path preparedFile = new Path(checkpointRoot, prepared.file());
    Path staged = new Path(stagingRoot, spec.dir(partition));
    FileSystem fs = preparedFile.getFileSystem(conf());
    long base = lastCommitted + 1;
    // format v2: the new versions' ids, and the log's lineage back to the version it builds on
    String baseId = checkpointIds ? java.util.UUID.randomUUID().toString() : null;
    String logId = checkpointIds ? java.util.UUID.randomUUID().toString() : null;
    String lineage =
        checkpointIds
            ? "[{\"version\":" + base + ",\"checkpointUniqueId\":\"" + baseId + "\"}]"
            : null;
    RocksDBCheckpointMetadata metadata = null;
    if (rocksDb) {
      byte[] zip = readChecked(fs, prepared, preparedFile);
      metadata = zipMetadata(zip, prepared, !spec.hasColumnFamilies());
      timer.lap("check");
      for (RocksDBSstFile sst : ScalaBridge.javaList(metadata.sstFiles())) {
        Path source = new Path(preparedFile.getParent(), "SSTs/" + sst.dfsSstFileName());
        long length;
        try {
          length = fs.getFileStatus(source).getLen();
        } catch (IOException e) {
          throw rejected(prepared, "names " + source + ", which cannot be read: " + e, e);
        }
        if (length != sst.sizeBytes()) {
          throw rejected(
              prepared,
              "names " + source + " of " + sst.sizeBytes() + " bytes; it holds " + length,
              null);
        }
        carry(fs, source, new Path(staged, "SSTs/" + sst.dfsSstFileName()), prepared);
      }
      try (java.io.OutputStream out =
          HdfsFileExchange.SnapshotWriter.create(
              withoutChecksums(fs), new Path(staged, versionFile(base, baseId, ".zip")))) {
        out.write(zip);
      }
    } else {
      String digest;
      try {
        digest = sha256(withoutChecksums(fs), preparedFile);
      } catch (UncheckedIOException e) {
        throw rejected(prepared, "cannot be read: " + e.getMessage(), e);
      }
      checkDigest(prepared, digest);
      timer.lap("check");
      carry(fs, preparedFile, new Path(staged, base + ".snapshot"), prepared);
    }
    timer.lap("carry");
    long logBytes = 0;
    Path log = new Path(staged, versionFile(base + 1, logId, PreparedManifest.tailSuffix(rocksDb)));
    FileSystem logFs = withoutChecksums(fs);
    if (spec.hasColumnFamilies()) {
      logBytes =
          ColumnFamilyTail.write(
              HdfsFileExchange.SnapshotWriter.create(logFs, log),
              HdfsFileExchange.codec(codecName),
              tail,
              familyIds(spec, metadata, prepared),
              lineage);
    } else {
      try (HdfsFileExchange.SnapshotWriter writer =
          new HdfsFileExchange.SnapshotWriter(logFs, log, HdfsFileExchange.codec(codecName))) {
        if (lineage != null) {
          writer.text(DeltaChain.LINEAGE_FORMAT);
          writer.text(lineage);
        }
        for (Map.Entry<ByteBuffer, byte[]> change : tail.entrySet()) {
          byte[] key = change.getKey().array();
          byte[] put = change.getValue();
          if (put[0] == REMOVE) {
            writer.remove(key);
          } else {
            writer.append(key, 0, key.length, put, 1, put.length - 1);
            logBytes += put.length - 1;
          }
          logBytes += key.length;
        }
      }
    }
    timer.lap("log");
    timer.report();
    return new PartitionCount(
        spec.slot(), partition, prepared.rows(), prepared.bytes() + logBytes, logId);
  }

  /**
   * On a local disk, the file system under Hadoop's checksum layer: a read through it skips the
   * {@code .crc} check (the SHA-256 checks every byte), a write makes no {@code .crc} beside the
   * file (Spark reads a file without one unchecked). Elsewhere, {@code fs}.
   */
  private static FileSystem withoutChecksums(FileSystem fs) {
    return fs instanceof org.apache.hadoop.fs.LocalFileSystem local ? local.getRawFileSystem() : fs;
  }

  /** A version's file name: {@code <v><suffix>}, or {@code <v>_<id><suffix>} under format v2. */
  private static String versionFile(long version, String id, String suffix) {
    return version + (id != null ? "_" + id : "") + suffix;
  }

  /** The prepared file's bytes (a RocksDB version's zip: small), their SHA-256 checked. */
  private static byte[] readChecked(
      FileSystem fs, PreparedManifest.PartitionFile prepared, Path file) {
    byte[] bytes;
    try (InputStream in = fs.open(file)) {
      bytes = in.readAllBytes();
    } catch (IOException e) {
      throw rejected(prepared, "cannot be read: " + e.getMessage(), e);
    }
    MessageDigest sha = sha256();
    checkDigest(prepared, HexFormat.of().formatHex(sha.digest(bytes)));
    return bytes;
  }

  /** Refuses a prepared file whose SHA-256 is not the one its manifest recorded. */
  private static void checkDigest(PreparedManifest.PartitionFile prepared, String digest) {
    if (!digest.equals(prepared.sha256())) {
      throw rejected(
          prepared, "has SHA-256 " + digest + ", its manifest recorded " + prepared.sha256(), null);
    }
  }

  /**
   * The new partition's id of each of the store's column families, by the family's index in the
   * store's list, from the prepared zip's metadata.
   */
  private static short[] familyIds(
      StoreSpec spec, RocksDBCheckpointMetadata metadata, PreparedManifest.PartitionFile prepared) {
    Map<String, Short> ids = new HashMap<>();
    ColumnFamilyTail.namesById(metadata).forEach((id, name) -> ids.put(name, id));
    List<ColumnFamilySchema> families = ColumnFamilySchema.of(spec);
    short[] out = new short[families.size()];
    for (int i = 0; i < out.length; i++) {
      Short id = ids.get(families.get(i).name());
      if (id == null) {
        throw rejected(prepared, "has no column family " + families.get(i).name(), null);
      }
      out[i] = id;
    }
    return out;
  }

  /**
   * The metadata inside a prepared RocksDB zip; with {@code countKeys}, its key count checked
   * against the manifest (a store with column families counts a list state's key once and its
   * values apart, so there the SHA-256 and the SST sizes are the check).
   */
  private static RocksDBCheckpointMetadata zipMetadata(
      byte[] zip, PreparedManifest.PartitionFile prepared, boolean countKeys) {
    RocksDBCheckpointMetadata metadata;
    try {
      metadata = ColumnFamilyTail.zipMetadata(new java.io.ByteArrayInputStream(zip));
    } catch (IOException e) {
      throw rejected(prepared, "is not a readable zip: " + e.getMessage(), e);
    }
    if (metadata == null) {
      throw rejected(prepared, "holds no RocksDB metadata this Spark line writes", null);
    }
    if (!metadata.logFiles().isEmpty()) {
      throw rejected(prepared, "names RocksDB log files, which a prepared version never has", null);
    }
    if (countKeys && metadata.numKeys() != prepared.rows()) {
      throw rejected(
          prepared,
          "holds " + metadata.numKeys() + " keys, its manifest recorded " + prepared.rows(),
          null);
    }
    return metadata;
  }

  /**
   * Puts a prepared file at its staged path: a hard link on a local disk (the prepared layout stays
   * whole, so an attempt undone can use it again), a rename elsewhere (one request on HDFS, a copy
   * inside the store on S3; an attempt undone after it leaves the prepared layout incomplete, and
   * the next attempt moves all state).
   */
  private static void carry(
      FileSystem fs, Path from, Path to, PreparedManifest.PartitionFile prepared)
      throws IOException {
    if (fs instanceof org.apache.hadoop.fs.LocalFileSystem local) {
      java.nio.file.Path target = local.pathToFile(to).toPath();
      java.nio.file.Files.createDirectories(target.getParent());
      java.nio.file.Files.deleteIfExists(target); // left by an earlier attempt of the task
      RocksDbTaskScope.linkOrCopy(local.pathToFile(from).toPath(), target);
      return;
    }
    if (!"s3a".equals(fs.getUri().getScheme())) {
      fs.mkdirs(to.getParent());
    }
    if (!fs.rename(from, to) && !fs.exists(to)) {
      throw rejected(prepared, "could not be moved to " + to, null);
    }
  }

  private PreparedManifest.PartitionFile preparedFile(StoreSpec spec, int partition) {
    return manifest
        .store(spec)
        .flatMap(s -> s.partitions().stream().filter(f -> f.partition() == partition).findFirst())
        .orElseThrow(
            () ->
                new PreparedManifest.Rejected(
                    "the prepared layout has no file for operator "
                        + spec.operatorId()
                        + " store "
                        + spec.storeName()
                        + " partition "
                        + partition));
  }

  private static PreparedManifest.Rejected rejected(
      PreparedManifest.PartitionFile file, String problem, Throwable cause) {
    return new PreparedManifest.Rejected("the prepared file " + file.file() + " " + problem, cause);
  }

  static MessageDigest sha256() {
    try {
      return MessageDigest.getInstance("SHA-256");
    } catch (NoSuchAlgorithmException e) {
      throw new IllegalStateException(e);
    }
  }

  /** The SHA-256 of a file's bytes, as lowercase hex. */
  static String sha256(FileSystem fs, Path file) {
    MessageDigest sha = sha256();
    byte[] buffer = new byte[1 << 16];
    try (InputStream in = fs.open(file)) {
      for (int n = in.read(buffer); n >= 0; n = in.read(buffer)) {
        sha.update(buffer, 0, n);
      }
    } catch (IOException e) {
      throw new UncheckedIOException("Cannot read " + file + ": " + e.getMessage(), e);
    }
    return HexFormat.of().formatHex(sha.digest());
  }
}
