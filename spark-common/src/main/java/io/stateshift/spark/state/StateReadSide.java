package io.stateshift.spark.state;

import io.stateshift.checkpoint.PlacementCheck;
import io.stateshift.checkpoint.StoreSpec;
import io.stateshift.checkpoint.spi.Redistribution.PartitionCount;
import io.stateshift.spark.line.LineCalls;
import io.stateshift.spark.line.StateCalls;
import io.stateshift.spark.line.StoredEntries;
import java.io.Serializable;
import java.util.Iterator;
import java.util.NoSuchElementException;
import java.util.function.Function;
import java.util.function.ToLongFunction;
import org.apache.spark.TaskContext;
import org.apache.spark.sql.catalyst.expressions.UnsafeRow;
import org.apache.spark.sql.execution.streaming.state.ReadStateStore;
import org.apache.spark.sql.execution.streaming.state.StateStoreId;
import org.apache.spark.sql.execution.streaming.state.StateStoreIterator;
import org.apache.spark.sql.execution.streaming.state.StateStoreProvider;
import org.apache.spark.sql.execution.streaming.state.UnsafeRowPair;
import org.apache.spark.unsafe.Platform;
import org.apache.spark.util.TaskCompletionListener;
import scala.Tuple2;

/**
 * The read side of the shuffle and of the in-place rewrite: runs in a task per old (store,
 * partition), loads it with Spark's provider (or, on Spark 3.5, opens a RocksDB version's own
 * snapshot read-only: {@link #readsSnapshots}) and gives every entry the edit keeps as a record
 * tagged with its new (store, partition) target, counting what it read and left out.
 */
final class StateReadSide implements Serializable {
  private final RedistributionContext ctx;

  StateReadSide(RedistributionContext ctx) {
    this.ctx = ctx;
  }

  Iterator<Tuple2<byte[], Object>> read(SourceTask task) {
    ctx.beginTask();
    StoreSpec spec = ctx.stores.get(task.slot());
    if (spec.hasColumnFamilies()) {
      return readColumnFamilies(task, spec);
    }
    TaskTimer timer = new TaskTimer("read " + spec.storeName() + "/" + task.partition());
    if (readsSnapshots()) {
      Iterator<Tuple2<byte[], Object>> fromSnapshot = readSnapshot(task, spec, timer);
      if (fromSnapshot != null) {
        return fromSnapshot;
      }
    }
    StateStoreProvider provider =
        StateStores.open(
            ctx.liveStateRoot, spec, task.partition(), ctx.storeConf, ctx.hadoopConf());
    ReadStateStore store;
    try {
      store =
          StateStores.loadToRead(
              provider,
              ctx.readVersion,
              StateStores.checkpointId(ctx.readCheckpointIds, spec, task.partition()));
    } catch (RuntimeException e) {
      provider.close();
      throw loadFailure(spec, task.partition(), e);
    }
    StateStoreIterator<UnsafeRowPair> entries = LineCalls.rows(store);
    StateEdits.Kept<UnsafeRowPair> rows = ctx.edits.kept(entries, spec.slot(), task.partition());
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
    return records(task, spec, rows);
  }

  /** A failed load of an old version: RocksDB's damage named with the version's files. */
  private RuntimeException loadFailure(StoreSpec spec, int partition, RuntimeException e) {
    return RocksDbSstExchange.isCorruption(e)
        ? ctx.rocksDbDamage(spec, partition, ctx.versionFiles(spec, partition), e)
        : e;
  }

  /**
   * Whether this job's read side opens each old RocksDB version's own snapshot read-only ({@link
   * LineCalls#SHUFFLE_READS_SNAPSHOTS}: Spark 3.5, where no file exchange reads them).
   */
  boolean readsSnapshots() {
    return LineCalls.SHUFFLE_READS_SNAPSHOTS && RocksDbSnapshotReader.ENABLED && ctx.readRocksDb;
  }

  /**
   * The records of one old partition read from its version's own snapshot, opened read-only ({@link
   * RocksDbSnapshotReader}), or null where that version has none (written under changelog
   * checkpointing): the provider loads it then.
   */
  private Iterator<Tuple2<byte[], Object>> readSnapshot(
      SourceTask task, StoreSpec spec, TaskTimer timer) {
    RocksDbTaskScope scope = ctx.taskScope(ctx.liveStateRoot, ctx.storeConf);
    if (scope == null) {
      return null;
    }
    RocksDbSnapshotReader snapshot;
    try {
      snapshot =
          RocksDbSnapshotReader.open(
              scope,
              new StateStoreId(
                  ctx.liveStateRoot, spec.operatorId(), task.partition(), spec.storeName()),
              ctx.readVersion,
              StateStores.checkpointId(ctx.readCheckpointIds, spec, task.partition()),
              ctx.hadoopConf(),
              timer,
              null);
    } catch (RuntimeException e) {
      scope.close();
      throw loadFailure(spec, task.partition(), e);
    }
    if (snapshot == null) {
      scope.close();
      return null;
    }
    int plainRowVersion = plainRowVersion(spec);
    Runnable closeEntries;
    Iterator<Tuple2<byte[], Object>> records;
    try {
      if (plainRowVersion >= 0) {
        StoredEntries stored = new StoredEntries(snapshot.db());
        closeEntries = stored::close;
        records = storedRecords(task, spec, stored, (byte) plainRowVersion);
      } else {
        StateStoreIterator<UnsafeRowPair> rows = LineCalls.snapshotRows(snapshot.db(), spec);
        closeEntries = rows::close;
        records = records(task, spec, ctx.edits.kept(rows, spec.slot(), task.partition()));
      }
    } catch (RuntimeException e) {
      snapshot.close();
      scope.close();
      throw e;
    }
    timer.lap("open-read-only");
    TaskContext.get()
        .addTaskCompletionListener(
            (TaskCompletionListener)
                context -> {
                  timer.lap("iterate+shuffle-write");
                  try {
                    closeEntries.run();
                    snapshot.close();
                  } finally {
                    scope.close();
                  }
                  timer.lap("close");
                  timer.report();
                });
    return records;
  }

  /**
   * The byte before each stored key and value row of a store whose snapshot records are made from
   * the stored bytes as they are, or -1: where the write side ingests an SST file in the same
   * encoding, the edit neither leaves out nor rewrites any of the store's entries, and the line
   * stores each key and value as one version byte and the UnsafeRow ({@link
   * LineCalls#plainRowVersion}: Spark 3.5, keys without a prefix). Nothing is then decoded and
   * encoded again: a record is the stored key and value behind its header.
   */
  private int plainRowVersion(StoreSpec spec) {
    return ctx.rocksDbMode == RocksDbSnapshotWriter.Mode.SST
            && ctx.edits.entryEdit(spec.slot()) == null
            && !ctx.edits.leavesOut(spec.slot())
        ? LineCalls.plainRowVersion(spec)
        : -1;
  }

  /**
   * The records of one old partition made from its snapshot's stored bytes ({@link
   * #plainRowVersion}): the key is placed by its row (after the version byte), read where it lies,
   * and the record holds the stored key and value with the encoder's version byte, the bytes
   * Spark's encoder would write for the decoded rows.
   */
  private Iterator<Tuple2<byte[], Object>> storedRecords(
      SourceTask task, StoreSpec spec, StoredEntries entries, byte version) {
    StateStores.KeyPlacement placement = new StateStores.KeyPlacement(spec, ctx.newPartitions);
    PlacementCheck check = ctx.placementCheck(spec, task.partition());
    String source = ctx.versionFiles(spec, task.partition());
    int firstTarget = spec.slot() * ctx.newPartitions;
    UnsafeRow key = new UnsafeRow(spec.keySchema().length());
    return counted(
        task,
        StateEdits.Kept.all(entries),
        entry -> entry.key.length - 1 + entry.value.length - 1,
        entry -> {
          key.pointTo(entry.key, Platform.BYTE_ARRAY_OFFSET + 1, entry.key.length - 1);
          int hash = placement.hash(key);
          if (check != null && check.misplaced(hash)) {
            check.report(source);
          }
          int target = firstTarget + StateStores.KeyPlacement.pmod(hash, ctx.newPartitions);
          return StateRecords.packStored(target, entry.key, entry.value, version);
        });
  }

  /** The kept rows of one old partition as records tagged with their new partition. */
  private Iterator<Tuple2<byte[], Object>> records(
      SourceTask task, StoreSpec spec, StateEdits.Kept<UnsafeRowPair> rows) {
    StateStores.KeyPlacement placement = new StateStores.KeyPlacement(spec, ctx.newPartitions);
    PlacementCheck check = ctx.placementCheck(spec, task.partition());
    String source = ctx.versionFiles(spec, task.partition());
    RocksDbEncoding encoding = ctx.sstEncoding(spec.slot());
    int firstTarget = spec.slot() * ctx.newPartitions;
    return counted(
        task,
        rows,
        pair -> pair.key().getSizeInBytes() + pair.value().getSizeInBytes(),
        pair -> {
          int hash = placement.hash(pair.key());
          if (check != null && check.misplaced(hash)) {
            check.report(source);
          }
          int target = firstTarget + StateStores.KeyPlacement.pmod(hash, ctx.newPartitions);
          UnsafeRow value =
              ctx.edits.value(spec.slot(), task.partition(), pair.key(), pair.value());
          return encoding != null
              ? encoding.record(target, pair.key(), value)
              : StateRecords.pack(target, pair.key(), value);
        });
  }

  /** An upsert's entries for one store slot as shuffle records, tagged with their new partition. */
  Iterator<Tuple2<byte[], Object>> upsertRecords(int slot, Iterator<UnsafeRow[]> entries) {
    StoreSpec spec = ctx.stores.get(slot);
    int newPartitions = ctx.newPartitions;
    StateStores.KeyPlacement placement = new StateStores.KeyPlacement(spec, newPartitions);
    RocksDbEncoding encoding = ctx.sstEncoding(slot);
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
            ctx.liveStateRoot,
            spec,
            task.partition(),
            ctx.readVersion,
            StateStores.checkpointId(ctx.readCheckpointIds, spec, task.partition()),
            ctx.storeConf,
            ctx.hadoopConf());
    TaskContext.get().addTaskCompletionListener((TaskCompletionListener) context -> reader.close());
    StateEdits.Kept<ColumnFamilyStates.Entry> entries =
        ctx.edits.keptEntries(
            reader.entries(
                spec,
                ctx.newPartitions,
                ctx.placementCheck(spec, task.partition()),
                ctx.versionFiles(spec, task.partition())),
            spec.slot(),
            task.partition());
    int firstTarget = spec.slot() * ctx.newPartitions;
    return counted(
        task,
        entries,
        ColumnFamilyStates.Entry::bytes,
        entry -> entry.record(firstTarget + entry.newPartition()));
  }

  /**
   * The kept entries of one old (store, partition) as records, each made by {@code record}; when
   * they run out, what was read ({@code size}: an entry's key and value bytes) and left out is
   * added to the job's counts, once.
   */
  private <T> Iterator<Tuple2<byte[], Object>> counted(
      SourceTask task,
      StateEdits.Kept<T> entries,
      ToLongFunction<T> size,
      Function<T, byte[]> record) {
    boolean countsLeftOut = ctx.edits.leavesOut(task.slot());
    return new Iterator<>() {
      long count;
      long bytes;
      boolean reported;

      @Override
      public boolean hasNext() {
        boolean more = entries.hasNext();
        if (!more && !reported) {
          reported = true;
          ctx.readCounts.add(
              new PartitionCount(
                  task.slot(), task.partition(), count + entries.leftOut(), bytes, null));
          if (countsLeftOut) {
            ctx.deletedCounts.add(
                new PartitionCount(task.slot(), task.partition(), entries.leftOut(), 0, null));
          }
        }
        return more;
      }

      @Override
      public Tuple2<byte[], Object> next() {
        if (!hasNext()) {
          throw new NoSuchElementException();
        }
        T entry = entries.next();
        byte[] bytesOut = record.apply(entry);
        count++;
        bytes += size.applyAsLong(entry);
        return new Tuple2<>(bytesOut, null);
      }
    };
  }
}
