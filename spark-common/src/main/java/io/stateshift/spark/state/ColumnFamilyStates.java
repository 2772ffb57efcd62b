package io.stateshift.spark.state;

import io.stateshift.checkpoint.PlacementCheck;
import io.stateshift.checkpoint.StoreSpec;
import io.stateshift.spark.line.StoreCalls;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.NoSuchElementException;
import org.apache.hadoop.conf.Configuration;
import org.apache.spark.sql.catalyst.expressions.UnsafeRow;
import org.apache.spark.sql.execution.streaming.state.StateStore;
import org.apache.spark.sql.execution.streaming.state.StateStoreConf;
import org.apache.spark.sql.execution.streaming.state.StateStoreIterator;
import org.apache.spark.sql.execution.streaming.state.StateStoreProvider;
import org.apache.spark.sql.execution.streaming.state.UnsafeRowPair;
import org.apache.spark.unsafe.Platform;

/**
 * Reads and writes a partition of a store with several column families (transformWithState: one
 * RocksDB store per partition holding every state variable, the timers and the TTL indexes; a join
 * in state format 3: one store holding the four join stores).
 *
 * <p>Every column family is registered, with its key encoder and value layout from the state
 * schema, on the store that reads and on the store that writes: RocksDB keeps them as virtual
 * column families in one database, and a family not registered is neither iterated nor written.
 * Each key goes to the partition of its grouping key (Spark's partition key extractor for the
 * family finds it in the key). Records carry the family's index in two bytes ahead of the key. A
 * list state keeps several values under one key: they are read one by one and written back with a
 * put and then a merge per further value, so the list keeps all of them in order.
 */
final class ColumnFamilyStates {
  private static final int FAMILY_INDEX_BYTES = 2;

  private ColumnFamilyStates() {}

  /** Registers every column family of {@code spec} on an open (writable) store. */
  static void registerAll(StateStore store, StoreSpec spec) {
    for (ColumnFamilySchema family : ColumnFamilySchema.of(spec)) {
      store.createColFamilyIfAbsent(
          family.name(),
          family.keySchema(),
          family.valueSchema(),
          family.encoderSpec(),
          family.multipleValues(),
          family.internal());
    }
  }

  /** A partition being read: call {@link #records} once, then {@link #close}. */
  static final class Reader implements AutoCloseable {
    private final StateStoreProvider provider;
    private final StateStore store;
    private final List<StateStoreIterator<UnsafeRowPair>> open = new ArrayList<>();

    Reader(
        String stateRoot,
        StoreSpec spec,
        int partition,
        long version,
        scala.Option<String> checkpointId,
        StateStoreConf storeConf,
        Configuration hadoopConf) {
      this.provider =
          StateStores.openWithColumnFamilies(stateRoot, spec, partition, storeConf, hadoopConf);
      // a writable store: families can only be registered on one; it is aborted, never committed,
      // so it has no use for the compactions it would start (see RocksDbInternals)
      RocksDbInternals.disableCompactions(provider);
      this.store = StoreCalls.open(provider, version, checkpointId);
      registerAll(store, spec);
    }

    /**
     * Every entry of every column family, one value per record (a list state yields one record per
     * element), tagged with the new partition of its grouping key; with a {@code check}, each key's
     * partition under the old count is checked too.
     */
    Iterator<Entry> entries(StoreSpec spec, int newPartitions) {
      return entries(spec, newPartitions, null, null);
    }

    Iterator<Entry> entries(
        StoreSpec spec, int newPartitions, PlacementCheck check, String source) {
      List<ColumnFamilySchema> families = ColumnFamilySchema.of(spec);
      return new Iterator<>() {
        int family = -1;
        StateStoreIterator<UnsafeRowPair> rows;
        StateStores.KeyPlacement placement;

        @Override
        public boolean hasNext() {
          while (rows == null || !rows.hasNext()) {
            if (++family >= families.size()) {
              return false;
            }
            ColumnFamilySchema next = families.get(family);
            rows =
                next.multipleValues()
                    ? StoreCalls.iteratorWithMultiValues(store, next.name())
                    : store.iterator(next.name());
            open.add(rows);
            placement = new StateStores.KeyPlacement(spec, next, newPartitions);
          }
          return true;
        }

        @Override
        public Entry next() {
          if (!hasNext()) {
            throw new NoSuchElementException();
          }
          UnsafeRowPair pair = rows.next();
          UnsafeRow partitionKey = placement.partitionKey(pair.key());
          int hash = placement.hashOfPartitionKey(partitionKey);
          if (check != null && check.misplaced(hash)) {
            check.report(source);
          }
          return new Entry(
              family,
              StateStores.KeyPlacement.pmod(hash, newPartitions),
              pair.key(),
              pair.value(),
              partitionKey);
        }
      };
    }

    @Override
    public void close() {
      open.forEach(StateStoreIterator::close);
      try {
        if (!store.hasCommitted()) {
          store.abort();
        }
      } finally {
        provider.close();
      }
    }
  }

  /**
   * One state entry of column family number {@code family}, with its grouping key (a join's key) as
   * Spark's partition key extractor finds it in the family's key; the rows are reused.
   */
  record Entry(
      int family, int newPartition, UnsafeRow key, UnsafeRow value, UnsafeRow groupingKey) {
    /** The shuffle record: the family index in two bytes, then the key row, then the value row. */
    byte[] record(int target) {
      int keySize = key.getSizeInBytes();
      byte[] keyBytes = new byte[FAMILY_INDEX_BYTES + keySize];
      keyBytes[0] = (byte) (family >>> 8);
      keyBytes[1] = (byte) family;
      key.writeToMemory(keyBytes, Platform.BYTE_ARRAY_OFFSET + FAMILY_INDEX_BYTES);
      byte[] valueBytes = new byte[value.getSizeInBytes()];
      value.writeToMemory(valueBytes, Platform.BYTE_ARRAY_OFFSET);
      return StateRecords.pack(target, keyBytes, valueBytes);
    }

    long bytes() {
      return key.getSizeInBytes() + value.getSizeInBytes();
    }
  }

  /**
   * Writes one new partition: an empty store at {@code batchId}, every family registered, one put
   * per record (a merge for further values of a list state's key), committed as version {@code
   * batchId + 1}.
   */
  static RocksDbSnapshotWriter.Written write(
      String stateRoot,
      StoreSpec spec,
      int partition,
      StateStoreConf storeConf,
      Configuration hadoopConf,
      long batchId,
      Iterator<byte[]> records) {
    List<ColumnFamilySchema> families = ColumnFamilySchema.of(spec);
    StateStoreProvider provider =
        StateStores.openWithColumnFamilies(stateRoot, spec, partition, storeConf, hadoopConf);
    return StateStores.writeNewVersion(
        provider,
        batchId,
        store -> {
          long rows = 0;
          long bytes = 0;
          registerAll(store, spec);
          UnsafeRow[] keys = new UnsafeRow[families.size()];
          UnsafeRow[] values = new UnsafeRow[families.size()];
          for (int i = 0; i < families.size(); i++) {
            keys[i] = new UnsafeRow(families.get(i).keySchema().length());
            values[i] = new UnsafeRow(families.get(i).valueSchema().length());
          }
          while (records.hasNext()) {
            byte[] record = records.next();
            int familyIndex =
                (record[StateRecords.HEADER] & 0xff) << 8
                    | (record[StateRecords.HEADER + 1] & 0xff);
            ColumnFamilySchema family = families.get(familyIndex);
            int keyOffset = StateRecords.HEADER + FAMILY_INDEX_BYTES;
            int keyLength = StateRecords.keyLength(record) - FAMILY_INDEX_BYTES;
            int valueOffset = StateRecords.valueOffset(record);
            int valueLength = record.length - valueOffset;
            UnsafeRow key = keys[familyIndex];
            UnsafeRow value = values[familyIndex];
            key.pointTo(record, Platform.BYTE_ARRAY_OFFSET + keyOffset, keyLength);
            value.pointTo(record, Platform.BYTE_ARRAY_OFFSET + valueOffset, valueLength);
            if (family.multipleValues() && StoreCalls.keyExists(store, key, family.name())) {
              store.merge(key, value, family.name());
            } else {
              store.put(key, value, family.name());
            }
            rows++;
            bytes += keyLength + valueLength;
          }
          store.commit();
          return new RocksDbSnapshotWriter.Written(rows, bytes, null)
              .withCheckpointIdOf(store, storeConf);
        });
  }
}
