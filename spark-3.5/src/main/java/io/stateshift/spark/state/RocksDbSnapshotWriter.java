package io.stateshift.spark.state;

import io.stateshift.checkpoint.StoreSpec;
import io.stateshift.spark.line.RocksDbCalls;
import java.io.File;
import java.io.Serializable;
import java.lang.reflect.Field;
import java.util.Iterator;
import org.apache.hadoop.conf.Configuration;
import org.apache.spark.sql.catalyst.expressions.UnsafeRow;
import org.apache.spark.sql.execution.streaming.state.RocksDB;
import org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider;
import org.apache.spark.sql.execution.streaming.state.StateStore;
import org.apache.spark.sql.execution.streaming.state.StateStoreConf;
import org.apache.spark.sql.execution.streaming.state.StateStoreProvider;
import org.apache.spark.unsafe.Platform;

/**
 * Writes one new partition of a RocksDB-backed store on Spark 3.5 as a full snapshot in Spark's own
 * format.
 *
 * <p>Fast path ({@link Mode#SST}), as on the other lines: the records arrive encoded by Spark 3.5's
 * own {@code RocksDBStateEncoder} (its version byte before each UnsafeRow, the prefix-key layout of
 * session windows) and sorted by those key bytes behind Spark's shuffle. They go into one SST file
 * built with the store's own RocksDB options, which is ingested into the empty store the provider
 * opened ({@link io.stateshift.spark.line.StoreCalls#openEmpty}); the key count is set on Spark's
 * {@code RocksDB}, and Spark's own commit takes the RocksDB checkpoint and uploads the snapshot
 * with 3.5's file manager. 3.5's {@code RocksDB} has the same private {@code db} and {@code
 * numKeysOnWritingVersion} as Spark 4 and keeps its local folder in a private field, read here
 * ({@link #available()} is false where they are missing); its options come from {@link
 * RocksDbCalls#rocksDbOptions}.
 *
 * <p>Fallback ({@link Mode#PUTS}): UnsafeRow records, one {@code put} per row, then commit.
 */
final class RocksDbSnapshotWriter {
  private static final Field NATIVE_DB = RocksDbInternals.field("db", org.rocksdb.RocksDB.class);
  private static final Field KEYS_ON_WRITING_VERSION =
      RocksDbInternals.field("numKeysOnWritingVersion", long.class);
  private static final Field LOCAL_ROOT_DIR = RocksDbInternals.field("localRootDir", File.class);

  /** How the job writes RocksDB partitions. */
  enum Mode {
    SST,
    PUTS
  }

  private RocksDbSnapshotWriter() {}

  static Mode mode(StateStoreConf storeConf) {
    return reasonForPuts(storeConf) == null ? Mode.SST : Mode.PUTS;
  }

  /** Why the fast path is not used, or null. */
  static String reasonForPuts(StateStoreConf storeConf) {
    return available()
        ? null
        : "Spark's RocksDB class has no private field 'db' (org.rocksdb.RocksDB),"
            + " 'numKeysOnWritingVersion' (long) or 'localRootDir' (File): its internals differ"
            + " from Spark 3.5.8's";
  }

  private static boolean available() {
    return NATIVE_DB != null && KEYS_ON_WRITING_VERSION != null && LOCAL_ROOT_DIR != null;
  }

  /** What was written to one partition (3.5 names versions by number only: no checkpoint id). */
  record Written(long rows, long bytes, String checkpointId) implements Serializable {
    /** The same: 3.5's commits give no checkpoint id. */
    Written withCheckpointIdOf(StateStore committed, StateStoreConf storeConf) {
      return this;
    }
  }

  /**
   * Fast path: {@code records} are encoded and sorted by key bytes (unsigned). Opens the partition
   * under {@code stateRoot}, ingests them as one SST file and commits version {@code batchId + 1}.
   */
  static Written writeSorted(
      String stateRoot,
      StoreSpec spec,
      int partition,
      StateStoreConf storeConf,
      Configuration hadoopConf,
      long batchId,
      Iterator<byte[]> records) {
    TaskTimer timer = new TaskTimer("write " + spec.storeName() + "/" + partition);
    StateStoreProvider provider =
        StateStores.open(stateRoot, spec, partition, storeConf, hadoopConf);
    try {
      return StateStores.writeNewVersion(
          provider,
          batchId,
          store -> {
            timer.lap("open");
            RocksDB db = RocksDBStateStoreProvider.class.cast(provider).rocksDB();
            Written written;
            if (records.hasNext()) {
              written = ingest(db, records, timer);
            } else {
              // no SST file to upload creates the folder the snapshot's zip goes into
              StateStores.createStoreFolder(stateRoot, spec, partition, hadoopConf);
              written = new Written(0, 0, null);
            }
            set(KEYS_ON_WRITING_VERSION, db, written.rows());
            store.commit();
            timer.lap("commit");
            return written;
          });
    } finally {
      timer.lap("close");
      timer.report();
    }
  }

  private static Written ingest(RocksDB db, Iterator<byte[]> records, TaskTimer timer) {
    org.rocksdb.RocksDB nativeDb = (org.rocksdb.RocksDB) get(NATIVE_DB, db);
    if (nativeDb == null) {
      throw new IllegalStateException("Spark's RocksDB instance has no open native database");
    }
    SstFileIngest.Ingested ingested =
        SstFileIngest.ingest(
            nativeDb,
            RocksDbCalls.rocksDbOptions(db),
            (File) get(LOCAL_ROOT_DIR, db),
            records,
            timer);
    return new Written(ingested.rows(), ingested.bytes(), null);
  }

  /** Fallback: UnsafeRow records through the provider's put, loading an empty store. */
  static Written writeWithPuts(
      String stateRoot,
      StoreSpec spec,
      int partition,
      StateStoreConf storeConf,
      Configuration hadoopConf,
      long batchId,
      Iterator<byte[]> records) {
    StateStoreProvider provider =
        StateStores.open(stateRoot, spec, partition, storeConf, hadoopConf);
    return StateStores.writeNewVersion(
        provider,
        batchId,
        store -> {
          long rows = 0;
          long bytes = 0;
          UnsafeRow key = new UnsafeRow(spec.keySchema().length());
          UnsafeRow value = new UnsafeRow(spec.valueSchema().length());
          while (records.hasNext()) {
            byte[] record = records.next();
            int keyLength = StateRecords.keyLength(record);
            int valueOffset = StateRecords.HEADER + keyLength;
            int valueLength = record.length - valueOffset;
            key.pointTo(record, Platform.BYTE_ARRAY_OFFSET + StateRecords.HEADER, keyLength);
            value.pointTo(record, Platform.BYTE_ARRAY_OFFSET + valueOffset, valueLength);
            store.put(key, value);
            rows++;
            bytes += keyLength + valueLength;
          }
          if (rows == 0) {
            StateStores.createStoreFolder(stateRoot, spec, partition, hadoopConf);
          }
          store.commit();
          return new Written(rows, bytes, null);
        });
  }

  private static Object get(Field field, Object target) {
    try {
      return field.get(target);
    } catch (IllegalAccessException e) {
      throw new IllegalStateException("Cannot read RocksDB." + field.getName() + ": " + e, e);
    }
  }

  private static void set(Field field, Object target, long value) {
    try {
      field.setLong(target, value);
    } catch (IllegalAccessException e) {
      throw new IllegalStateException("Cannot set RocksDB." + field.getName() + ": " + e, e);
    }
  }
}
