package io.stateshift.spark.state;

import io.stateshift.checkpoint.StoreSpec;
import java.io.Serializable;
import java.util.Iterator;
import org.apache.hadoop.conf.Configuration;
import org.apache.spark.sql.catalyst.expressions.UnsafeRow;
import org.apache.spark.sql.execution.streaming.state.StateStoreConf;
import org.apache.spark.sql.execution.streaming.state.StateStoreProvider;
import org.apache.spark.unsafe.Platform;

/**
 * Spark 3.5's RocksDB writes: through the provider's puts only ({@link RocksDbFastPaths}); the SST
 * fast path of the other lines is absent.
 */
final class RocksDbSnapshotWriter {

  /** How the job writes RocksDB partitions: always {@link #PUTS} on 3.5. */
  enum Mode {
    SST,
    PUTS
  }

  private RocksDbSnapshotWriter() {}

  static Mode mode(StateStoreConf storeConf) {
    return Mode.PUTS;
  }

  static String reasonForPuts(StateStoreConf storeConf) {
    return RocksDbInternals.problem();
  }

  /** The encoding of the SST fast path; never made on 3.5. */
  static final class Encoding {
    Encoding(StoreSpec spec) {
      throw RocksDbFastPaths.unavailable();
    }

    byte[] record(int target, UnsafeRow key, UnsafeRow value) {
      throw RocksDbFastPaths.unavailable();
    }

    byte[] key(UnsafeRow key) {
      throw RocksDbFastPaths.unavailable();
    }

    byte[] value(UnsafeRow value) {
      throw RocksDbFastPaths.unavailable();
    }
  }

  /** What was written to one partition (3.5 names versions by number only: no checkpoint id). */
  record Written(long rows, long bytes, String checkpointId) implements Serializable {}

  static Written writeSorted(
      String stateRoot,
      StoreSpec spec,
      int partition,
      StateStoreConf storeConf,
      Configuration hadoopConf,
      long batchId,
      Iterator<byte[]> records) {
    throw RocksDbFastPaths.unavailable();
  }

  /** UnsafeRow records through the provider's put, loading an empty store. */
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
}
