package io.stateshift.spark.state;

import io.stateshift.checkpoint.StoreSpec;
import io.stateshift.spark.line.StateCalls;
import io.stateshift.spark.line.StoreCalls;
import java.io.Serializable;
import java.util.Iterator;
import java.util.Locale;
import org.apache.hadoop.conf.Configuration;
import org.apache.spark.sql.catalyst.expressions.UnsafeRow;
import org.apache.spark.sql.execution.streaming.state.RocksDB;
import org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider;
import org.apache.spark.sql.execution.streaming.state.StateStore;
import org.apache.spark.sql.execution.streaming.state.StateStoreConf;
import org.apache.spark.sql.execution.streaming.state.StateStoreProvider;
import org.apache.spark.unsafe.Platform;

/**
 * Writes one new partition of a RocksDB-backed store as a full snapshot in Spark's own format.
 *
 * <p>Fast path ({@link Mode#SST}): the records arrive already encoded as Spark's RocksDB encoders
 * would store them and sorted by those key bytes (the shuffle sorts them, spilling to disk, so
 * memory does not grow with the state). They go straight into one SST file built with the store's
 * own RocksDB options, which is ingested into the empty store Spark's provider opened with {@code
 * loadEmpty=true}; Spark's own commit then takes the RocksDB checkpoint and uploads the snapshot
 * (zip metadata, SST names, key count, checkpoint ids: all Spark's). This skips what dominates
 * puts: a read per key for Spark's row count, a JNI write per key into the memtable, and the flush
 * that turns the memtable into the same SST afterwards.
 *
 * <p>Fallback ({@link Mode#PUTS}): UnsafeRow records, one {@code put} per row, then commit, when
 * the fast path's assumptions do not hold (see {@link #mode}).
 */
final class RocksDbSnapshotWriter {

  /** How the job writes RocksDB partitions. */
  enum Mode {
    SST,
    PUTS
  }

  private RocksDbSnapshotWriter() {}

  /**
   * SST ingestion when Spark's internals are as expected and every byte of a row can be produced
   * here exactly as Spark would: UnsafeRow encoding, no per-row checksums (which Spark computes
   * inside {@code put}). Otherwise the provider's puts.
   */
  static Mode mode(StateStoreConf storeConf) {
    return reasonForPuts(storeConf) == null ? Mode.SST : Mode.PUTS;
  }

  /** Why the fast path is not used, or null. */
  static String reasonForPuts(StateStoreConf storeConf) {
    if (!RocksDbInternals.available()) {
      return RocksDbInternals.problem();
    }
    if (!"unsaferow".equals(storeConf.stateStoreEncodingFormat().toLowerCase(Locale.ROOT))) {
      return "state encoding format " + storeConf.stateStoreEncodingFormat();
    }
    if (StoreCalls.rowChecksumEnabled(storeConf)) {
      return "row checksums are enabled";
    }
    return null;
  }

  /**
   * What was written to one partition; {@code checkpointId} is the unique id the commit gave the
   * new version under state checkpoint format v2 (the commit log must name it), else null.
   */
  record Written(long rows, long bytes, String checkpointId) implements Serializable {
    Written withCheckpointIdOf(StateStore committed, StateStoreConf storeConf) {
      return new Written(
          rows,
          bytes,
          storeConf.enableStateStoreCheckpointIds()
              ? committed.getStateStoreCheckpointInfo().stateStoreCkptId().get()
              : null);
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
            RocksDB db = ((RocksDBStateStoreProvider.RocksDBStateStore) store).dbInstance();
            Written written;
            if (records.hasNext()) {
              written = ingest(db, records, timer);
            } else {
              written = new Written(0, 0, null);
              StateStores.createStoreFolder(stateRoot, spec, partition, hadoopConf);
            }
            RocksDbInternals.setKeysOnWritingVersion(db, written.rows());
            store.commit();
            timer.lap("commit");
            return written.withCheckpointIdOf(store, storeConf);
          });
    } finally {
      timer.lap("close");
      timer.report();
    }
  }

  private static Written ingest(RocksDB db, Iterator<byte[]> records, TaskTimer timer) {
    SstFileIngest.Ingested ingested =
        SstFileIngest.ingest(
            RocksDbInternals.nativeDb(db),
            db.rocksDbOptions(),
            StateCalls.localRootDir(db),
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
            store.put(key, value, StateStores.DEFAULT_COLUMN_FAMILY);
            rows++;
            bytes += keyLength + valueLength;
          }
          if (rows == 0) {
            StateStores.createStoreFolder(stateRoot, spec, partition, hadoopConf);
          }
          store.commit();
          return new Written(rows, bytes, null).withCheckpointIdOf(store, storeConf);
        });
  }
}
