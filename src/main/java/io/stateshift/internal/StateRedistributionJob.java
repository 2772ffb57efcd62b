package io.stateshift.internal;

import java.io.DataOutputStream;
import java.io.IOException;
import java.io.Serializable;
import java.io.UncheckedIOException;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.NoSuchElementException;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;
import org.apache.spark.Partitioner;
import org.apache.spark.SparkEnv;
import org.apache.spark.TaskContext;
import org.apache.spark.api.java.JavaPairRDD;
import org.apache.spark.api.java.JavaSparkContext;
import org.apache.spark.io.CompressionCodec;
import org.apache.spark.io.CompressionCodec$;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.catalyst.expressions.UnsafeRow;
import org.apache.spark.sql.execution.streaming.state.ReadStateStore;
import org.apache.spark.sql.execution.streaming.state.StateStore;
import org.apache.spark.sql.execution.streaming.state.StateStoreConf;
import org.apache.spark.sql.execution.streaming.state.StateStoreIterator;
import org.apache.spark.sql.execution.streaming.state.StateStoreProvider;
import org.apache.spark.sql.execution.streaming.state.UnsafeRowPair;
import org.apache.spark.unsafe.Platform;
import org.apache.spark.util.CollectionAccumulator;
import org.apache.spark.util.SerializableConfiguration;
import org.apache.spark.util.TaskCompletionListener;
import scala.Tuple2;

/**
 * The Spark job that moves state: one task per old (store, partition) reads it and tags every
 * record with its new partition; one shuffle groups records by (store, new partition); one task per
 * new (store, partition) writes it into the staging area. Key and value bytes travel as they are:
 * only the key's partition is computed, with Spark's own hash.
 */
final class StateRedistributionJob implements Serializable {

  /**
   * Counts of one partition of one store, read or written; for a written one under state
   * checkpoint format v2, the unique id of the version it committed (else null).
   */
  record PartitionCount(int slot, int partition, long rows, long bytes, String checkpointId)
      implements Serializable {}

  /** What the job moved, per store partition on each side. */
  record Outcome(List<PartitionCount> read, List<PartitionCount> written) {}

  private record SourceTask(int slot, int partition) implements Serializable {}

  private final String liveStateRoot;
  private final String stagingRoot;
  private final StateStoreConf storeConf;
  private final SerializableConfiguration hadoopConf;
  private final List<StoreSpec> stores;
  private final int oldPartitions;
  private final int newPartitions;
  private final long readVersion;
  private final long writeBatchId;
  private final boolean rocksDb;
  private final String compressionCodec;
  private final StateCheckpointIds readCheckpointIds;
  private java.util.Set<Integer> verifyPlacementSlots = java.util.Set.of();
  private CollectionAccumulator<PartitionCount> readCounts;

  StateRedistributionJob(String liveStateRoot, String stagingRoot, StateStoreConf storeConf,
      Configuration hadoopConf, List<StoreSpec> stores, int oldPartitions, int newPartitions,
      long lastCommittedBatch, boolean rocksDb, String compressionCodec,
      StateCheckpointIds readCheckpointIds) {
    this.readCheckpointIds = readCheckpointIds;
    this.liveStateRoot = liveStateRoot;
    this.stagingRoot = stagingRoot;
    this.storeConf = storeConf;
    this.hadoopConf = new SerializableConfiguration(hadoopConf);
    this.stores = List.copyOf(stores);
    this.oldPartitions = oldPartitions;
    this.newPartitions = newPartitions;
    // Batch b commits state version b + 1; the repartition writes batch N + 1, so version N + 2.
    this.readVersion = lastCommittedBatch + 1;
    this.writeBatchId = lastCommittedBatch + 1;
    this.rocksDb = rocksDb;
    this.compressionCodec = compressionCodec;
  }

  /**
   * Stores whose placement was derived rather than read from operator metadata: the read side
   * checks that every key sits in the partition that placement gives it under the old count, and
   * fails the job (changing nothing) on the first key that does not.
   */
  StateRedistributionJob verifyPlacementOf(java.util.Set<Integer> slots) {
    this.verifyPlacementSlots = java.util.Set.copyOf(slots);
    return this;
  }

  long writtenVersion() {
    return writeBatchId + 1;
  }

  Outcome run(SparkSession spark) {
    JavaSparkContext jsc = JavaSparkContext.fromSparkContext(spark.sparkContext());
    readCounts = new CollectionAccumulator<>();
    jsc.sc().register(readCounts, "stateshift.readCounts");
    List<SourceTask> sources = new ArrayList<>();
    for (StoreSpec store : stores) {
      for (int p = 0; p < oldPartitions; p++) {
        sources.add(new SourceTask(store.slot(), p));
      }
    }
    int targets = stores.size() * newPartitions;
    JavaPairRDD<Integer, byte[]> tagged =
        jsc.parallelize(sources, sources.size()).flatMapToPair(this::read);
    List<PartitionCount> written = tagged
        .partitionBy(new TargetPartitioner(targets))
        .mapPartitionsWithIndex(this::write, false)
        .collect();
    return new Outcome(List.copyOf(readCounts.value()), List.copyOf(written));
  }

  // ---- read side: runs in a task per old (store, partition) ----

  private Iterator<Tuple2<Integer, byte[]>> read(SourceTask task) {
    StoreSpec spec = stores.get(task.slot());
    StateStoreProvider provider = StateStores.open(liveStateRoot, spec, task.partition(), storeConf,
        hadoopConf.value());
    ReadStateStore store = provider.getReadStore(readVersion,
        StateStores.checkpointId(readCheckpointIds, spec, task.partition()));
    StateStoreIterator<UnsafeRowPair> rows = store.iterator(StateStores.DEFAULT_COLUMN_FAMILY);
    TaskContext.get().addTaskCompletionListener((TaskCompletionListener) context -> {
      rows.close();
      store.release();
      provider.close();
    });
    StateStores.KeyPlacement placement = new StateStores.KeyPlacement(spec, newPartitions);
    StateStores.KeyPlacement oldPlacement = verifyPlacementSlots.contains(spec.slot())
        ? new StateStores.KeyPlacement(spec, oldPartitions) : null;
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
          readCounts.add(new PartitionCount(task.slot(), task.partition(), count, bytes,
              null));
        }
        return more;
      }

      @Override
      public Tuple2<Integer, byte[]> next() {
        if (!hasNext()) {
          throw new NoSuchElementException();
        }
        UnsafeRowPair pair = rows.next();
        if (oldPlacement != null && oldPlacement.partitionOf(pair.key()) != task.partition()) {
          throw OperatorWithoutMetadata.refuse(new Path(liveStateRoot).getParent().toString(),
              spec.operatorId(), "a key in its partition " + task.partition() + " is not placed "
                  + "by its whole state key as derived from its state schema");
        }
        byte[] record = StateRecords.pack(pair.key(), pair.value());
        count++;
        bytes += record.length - 4;
        return new Tuple2<>(firstTarget + placement.partitionOf(pair.key()), record);
      }
    };
  }

  // ---- write side: runs in a task per new (store, partition) ----

  private Iterator<PartitionCount> write(int target, Iterator<Tuple2<Integer, byte[]>> records) {
    StoreSpec spec = stores.get(target / newPartitions);
    int partition = target % newPartitions;
    if (target == stores.size() * newPartitions - 1) {
      FailPoints.reached("staging-task"); // while other partitions may be half written
    }
    PartitionCount count = rocksDb
        ? writeWithRocksDbProvider(spec, partition, records)
        : writeHdfsSnapshot(spec, partition, records);
    return List.of(count).iterator();
  }

  /**
   * The HDFS-backed store's snapshot format is simple enough to write directly: a compressed stream
   * of [keyLength][key][valueLength][value] records ended by -1.
   */
  private PartitionCount writeHdfsSnapshot(StoreSpec spec, int partition,
      Iterator<Tuple2<Integer, byte[]>> records) {
    Path file = new Path(new Path(stagingRoot, spec.dir(partition)), writtenVersion() + ".snapshot");
    long rows = 0;
    long bytes = 0;
    try {
      FileSystem fs = file.getFileSystem(hadoopConf.value());
      fs.mkdirs(file.getParent());
      CompressionCodec codec =
          CompressionCodec$.MODULE$.createCodec(SparkEnv.get().conf(), compressionCodec);
      try (DataOutputStream out =
          new DataOutputStream(codec.compressedOutputStream(fs.create(file, false)))) {
        while (records.hasNext()) {
          byte[] record = records.next()._2();
          int keyLength = StateRecords.keyLength(record);
          int valueLength = record.length - 4 - keyLength;
          out.writeInt(keyLength);
          out.write(record, 4, keyLength);
          out.writeInt(valueLength);
          out.write(record, 4 + keyLength, valueLength);
          rows++;
          bytes += keyLength + valueLength;
        }
        out.writeInt(-1);
      }
    } catch (IOException e) {
      throw new UncheckedIOException("Cannot write " + file + ": " + e.getMessage(), e);
    }
    return new PartitionCount(spec.slot(), partition, rows, bytes, null);
  }

  /** RocksDB through Spark's provider, loading an empty store so the commit is a full snapshot. */
  private PartitionCount writeWithRocksDbProvider(StoreSpec spec, int partition,
      Iterator<Tuple2<Integer, byte[]>> records) {
    StateStoreProvider provider = StateStores.open(stagingRoot + "/state", spec, partition,
        storeConf, hadoopConf.value());
    long rows = 0;
    long bytes = 0;
    String checkpointId;
    try {
      StateStore store = provider.getStore(writeBatchId, ScalaBridge.none(), false, true);
      try {
        UnsafeRow key = new UnsafeRow(spec.keySchema().length());
        UnsafeRow value = new UnsafeRow(spec.valueSchema().length());
        while (records.hasNext()) {
          byte[] record = records.next()._2();
          int keyLength = StateRecords.keyLength(record);
          int valueLength = record.length - 4 - keyLength;
          key.pointTo(record, Platform.BYTE_ARRAY_OFFSET + 4, keyLength);
          value.pointTo(record, Platform.BYTE_ARRAY_OFFSET + 4 + keyLength, valueLength);
          store.put(key, value, StateStores.DEFAULT_COLUMN_FAMILY);
          rows++;
          bytes += keyLength + valueLength;
        }
        store.commit();
        // Format v2: the commit named the new version N_<id>.zip; the commit log must name it too.
        checkpointId = storeConf.enableStateStoreCheckpointIds()
            ? store.getStateStoreCheckpointInfo().stateStoreCkptId().get() : null;
      } finally {
        if (!store.hasCommitted()) {
          store.abort();
        }
      }
    } finally {
      provider.close();
    }
    return new PartitionCount(spec.slot(), partition, rows, bytes, checkpointId);
  }

  /** Sends each record to the task of its (store, new partition), numbered in the record's key. */
  private static final class TargetPartitioner extends Partitioner {
    private final int targets;

    TargetPartitioner(int targets) {
      this.targets = targets;
    }

    @Override
    public int numPartitions() {
      return targets;
    }

    @Override
    public int getPartition(Object key) {
      return (Integer) key;
    }

    @Override
    public boolean equals(Object other) {
      return other instanceof TargetPartitioner t && t.targets == targets;
    }

    @Override
    public int hashCode() {
      return targets;
    }
  }
}
