package io.stateshift.spark.state;

import io.stateshift.checkpoint.PlacementCheck;
import io.stateshift.checkpoint.PreparedManifest;
import io.stateshift.checkpoint.StateFileDamage;
import io.stateshift.checkpoint.StoreSpec;
import io.stateshift.checkpoint.spi.Redistribution;
import io.stateshift.config.StateShiftConf;
import io.stateshift.protocol.FailPoints;
import java.io.DataInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.Serializable;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.security.DigestInputStream;
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
import org.apache.spark.sql.execution.streaming.state.RocksDBKeyStateEncoder;
import org.apache.spark.sql.execution.streaming.state.StateStoreConf;
import org.apache.spark.sql.execution.streaming.state.StateStoreId;
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
 * remote checkpoint), checks each prepared file's SHA-256 against the manifest and writes version
 * L+2 into the attempt's staging folder, as the full path would. On the HDFS-backed store it
 * streams the prepared snapshot, leaves out the keys the tail changed and adds the tail's puts; on
 * RocksDB it opens the prepared version and applies the tail to it ({@link RocksDbTailApply}),
 * carrying the prepared SST files over undecoded.
 *
 * <p>A key lives in one old partition, so the tails of different old partitions never touch the
 * same key, and applying each key's newest entry is applying the batches in order.
 */
final class PreparedTailReplay implements Redistribution, Serializable {
  private static final byte PUT = 1;
  private static final byte REMOVE = 0;
  private static final ClassTag<byte[]> BYTES = ClassTag$.MODULE$.apply(byte[].class);
  private static final ClassTag<Object> OBJECT = ClassTag$.MODULE$.Object();
  private static final int LOCAL_TARGETS_PER_TASK = 4;

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
  private final HashMap<String, String> storeSettings;
  private final PreparedManifest manifest;
  private LongAccumulator replayed;
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
      Map<String, String> storeSettings,
      PreparedManifest manifest) {
    this.checkpointRoot = checkpointRoot;
    this.stagingRoot = stagingRoot;
    this.driverConf = new SerializableConfiguration(hadoopConf);
    this.stores = List.copyOf(stores);
    this.oldPartitions = oldPartitions;
    this.newPartitions = newPartitions;
    this.lastCommitted = lastCommitted;
    this.codecName = codecName;
    this.rocksDb = rocksDb;
    this.storeSettings = new HashMap<>(storeSettings);
    this.manifest = manifest;
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
    sharedConf = jsc.broadcast(driverConf);
    replayed = jsc.sc().longAccumulator("stateshift.rowsReplayed");
    try {
      List<SourceTask> sources = new ArrayList<>();
      for (StoreSpec store : stores) {
        for (int p = 0; p < oldPartitions; p++) {
          sources.add(new SourceTask(store.slot(), p));
        }
      }
      // a tail is small: a few tasks per core read all of it, rather than a task per partition
      int readTasks = Math.min(sources.size(), Math.max(1, 2 * jsc.defaultParallelism()));
      RDD<Tuple2<byte[], Object>> tagged =
          jsc.parallelize(sources, readTasks).flatMap(this::readTail).rdd();
      int targets = stores.size() * newPartitions;
      int atOnce = StateRedistributionJob.remoteIoThreads(spark, checkpointRoot, conf());
      int perTask = targetsPerWriteTask(atOnce, targets, jsc.defaultParallelism());
      ShuffledRDD<byte[], Object, Object> shuffled =
          new ShuffledRDD<>(
              tagged, new StateRecords.TargetPartitioner(targets, perTask), BYTES, OBJECT, OBJECT);
      shuffled.setSerializer(new RawRecordSerializer());
      List<PartitionCount> written =
          shuffled
              .toJavaRDD()
              .mapPartitionsWithIndex(
                  (task, records) -> write(task, perTask, atOnce, records), false)
              .collect();
      rowsReplayed = replayed.value();
      // the rows each new partition must hold: its prepared rows, minus the keys the tail
      // changed, plus the tail's puts, counted as they were applied
      return new Outcome(List.copyOf(written), List.copyOf(written), List.of());
    } finally {
      sharedConf.destroy();
      sharedConf = null;
    }
  }

  /** The newest entry of every key the tail changed in one old partition, tagged by target. */
  private Iterator<Tuple2<byte[], Object>> readTail(SourceTask task) throws IOException {
    StoreSpec spec = stores.get(task.slot());
    Path dir = new Path(checkpointRoot, spec.dir(task.partition()));
    FileSystem fs = dir.getFileSystem(conf());
    List<Path> deltas = new ArrayList<>();
    for (long v = lastCommitted + 1; v >= manifest.preparedBatch() + 2; v--) {
      deltas.add(new Path(dir, v + PreparedManifest.tailSuffix(rocksDb)));
    }
    List<Tuple2<byte[], Object>> out = new ArrayList<>();
    if (deltas.isEmpty()) {
      return out.iterator();
    }
    CompressionCodec codec = HdfsFileExchange.codec(codecName);
    DeltaChain chain;
    try {
      chain = DeltaChain.read(fs, deltas, codec);
    } catch (StateFileDamage.DamagedFile e) {
      throw StateFileDamage.refusal(checkpointRoot, e);
    }
    StateStores.KeyPlacement placement = new StateStores.KeyPlacement(spec, newPartitions);
    UnsafeRow keyRow = new UnsafeRow(spec.keySchema().length());
    RocksDBKeyStateEncoder storedKeys = rocksDb ? RocksDbSstExchange.keyDecoder(spec) : null;
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
    replayed.add(out.size());
    return out.iterator();
  }

  /**
   * New partitions a write task takes: on a local disk, four one after another, since a partition's
   * work there (20-30 ms) is close to what Spark spends launching and feeding a task (10-15 ms); on
   * a remote checkpoint ({@link StateShiftConf#TASK_IO_THREADS}) several, written at once on a
   * thread each, as a prepared partition's time there is mostly its download and upload.
   */
  private int targetsPerWriteTask(int atOnce, int targets, int cores) {
    int perCore = Math.max(1, targets / Math.max(1, cores));
    return atOnce > 1 ? Math.min(atOnce, perCore) : Math.min(LOCAL_TARGETS_PER_TASK, perCore);
  }

  /**
   * One write task: the new partitions {@code task * perTask ..}, each its prepared file with the
   * tail applied, as version L+2, {@code atOnce} at a time.
   */
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
      byte[] value =
          record[valueOffset] == PUT
              ? Arrays.copyOfRange(record, valueOffset + 1, record.length)
              : null;
      tails.get(StateRecords.target(record) - first).put(ByteBuffer.wrap(key), value);
    }
    List<Integer> targets = new ArrayList<>();
    for (int t = first; t < end; t++) {
      targets.add(t);
    }
    StateStoreConf storeConf = StateStores.storeConf(storeSettings);
    try (RocksDbTaskScope scope =
        rocksDb
            ? RocksDbTaskScope.open(stagingRoot + "/state", stores.get(0), storeConf, conf())
            : null) {
      if (rocksDb && scope == null) {
        throw new IllegalStateException(
            "The state store settings of " + checkpointRoot + " do not open a RocksDB store");
      }
      return StateRedistributionJob.onThreads(
              targets,
              atOnce,
              t -> {
                try {
                  return writeTarget(t, tails.get(t - first), scope);
                } catch (IOException e) {
                  throw new UncheckedIOException(e);
                }
              })
          .iterator();
    }
  }

  /** Writes one new partition: its prepared file with the tail applied, as version L+2. */
  private PartitionCount writeTarget(
      int target, Map<ByteBuffer, byte[]> tail, RocksDbTaskScope scope) throws IOException {
    StoreSpec spec = stores.get(target / newPartitions);
    int partition = target % newPartitions;
    if (target == stores.size() * newPartitions - 1) {
      FailPoints.reached("staging-task");
    }
    PreparedManifest.PartitionFile prepared = preparedFile(spec, partition);
    Path preparedPath = new Path(checkpointRoot, prepared.file());
    if (rocksDb) {
      return writeRocksDb(scope, spec, partition, prepared, preparedPath, tail);
    }
    Path out =
        new Path(new Path(stagingRoot, spec.dir(partition)), (lastCommitted + 2) + ".snapshot");
    CompressionCodec codec = HdfsFileExchange.codec(codecName);
    FileSystem fs = preparedPath.getFileSystem(conf());
    FileSystem outFs = out.getFileSystem(conf());
    long preparedRows = 0;
    long rows = 0;
    long bytes = 0;
    String digest;
    try (HdfsFileExchange.SnapshotWriter writer =
        new HdfsFileExchange.SnapshotWriter(outFs, out, codec)) {
      MessageDigest sha = sha256();
      InputStream raw;
      try {
        raw = fs.open(preparedPath);
      } catch (IOException e) {
        throw rejected(prepared, "cannot be opened: " + e.getMessage(), e);
      }
      DigestInputStream digesting = new DigestInputStream(raw, sha);
      try (DataInputStream in = HdfsFileExchange.decoding(digesting, codec, preparedPath)) {
        byte[][] entry = new byte[2][];
        while (HdfsFileExchange.nextEntry(in, preparedPath, entry)) {
          preparedRows++;
          if (entry[1] != null && !tail.containsKey(ByteBuffer.wrap(entry[0]))) {
            writer.append(entry[0], 0, entry[0].length, entry[1], 0, entry[1].length);
            rows++;
            bytes += entry[0].length + entry[1].length;
          }
        }
        byte[] rest = new byte[1 << 16];
        while (digesting.read(rest) >= 0) {
          // the bytes after the end marker count for the digest too
        }
      } catch (StateFileDamage.DamagedFile e) {
        throw rejected(prepared, "is damaged: " + e.getMessage(), e);
      }
      digest = HexFormat.of().formatHex(sha.digest());
      for (Map.Entry<ByteBuffer, byte[]> change : tail.entrySet()) {
        if (change.getValue() != null) {
          byte[] key = change.getKey().array();
          byte[] value = change.getValue();
          writer.append(key, 0, key.length, value, 0, value.length);
          rows++;
          bytes += key.length + value.length;
        }
      }
    }
    if (preparedRows != prepared.rows() || !digest.equals(prepared.sha256())) {
      outFs.delete(out, false);
      throw rejected(
          prepared,
          "holds "
              + preparedRows
              + " rows with SHA-256 "
              + digest
              + ", its manifest recorded "
              + prepared.rows()
              + " rows with SHA-256 "
              + prepared.sha256(),
          null);
    }
    return new PartitionCount(spec.slot(), partition, rows, bytes, null);
  }

  /** One new RocksDB partition: the prepared version, its zip checked, with the tail applied. */
  private PartitionCount writeRocksDb(
      RocksDbTaskScope scope,
      StoreSpec spec,
      int partition,
      PreparedManifest.PartitionFile prepared,
      Path preparedZip,
      Map<ByteBuffer, byte[]> tail)
      throws IOException {
    TaskTimer timer = new TaskTimer("prepared " + spec.storeName() + "/" + partition);
    String digest;
    try {
      digest = sha256(preparedZip.getFileSystem(conf()), preparedZip);
    } catch (UncheckedIOException e) {
      throw rejected(prepared, "cannot be read: " + e.getMessage(), e);
    }
    if (!digest.equals(prepared.sha256())) {
      throw rejected(
          prepared, "has SHA-256 " + digest + ", its manifest recorded " + prepared.sha256(), null);
    }
    timer.lap("digest");
    String stateRoot = stagingRoot + "/state";
    // the prepared layout's own state folder: the staged folder that holds state/<op>/<p>/...
    String preparedRoot =
        new Path(
                new Path(checkpointRoot, PreparedManifest.DIR + "/" + manifest.id()),
                "staged/state")
            .toString();
    long rows;
    try {
      rows =
          RocksDbTailApply.apply(
              scope,
              new StateStoreId(preparedRoot, spec.operatorId(), partition, spec.storeName()),
              manifest.preparedBatch() + 2,
              prepared.rows(),
              new StateStoreId(stateRoot, spec.operatorId(), partition, spec.storeName()),
              lastCommitted + 2,
              tail,
              conf(),
              timer);
    } finally {
      timer.report();
    }
    return new PartitionCount(spec.slot(), partition, rows, prepared.bytes(), null);
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
