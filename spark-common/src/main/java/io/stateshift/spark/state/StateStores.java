package io.stateshift.spark.state;

import io.stateshift.checkpoint.StateCheckpointIds;
import io.stateshift.checkpoint.StoreSpec;
import io.stateshift.spark.line.LineCalls;
import io.stateshift.spark.line.PartitionKeys;
import io.stateshift.spark.line.StoreCalls;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import java.util.function.Function;
import org.apache.hadoop.conf.Configuration;
import org.apache.spark.sql.catalyst.expressions.BoundReference;
import org.apache.spark.sql.catalyst.expressions.Expression;
import org.apache.spark.sql.catalyst.expressions.Pmod;
import org.apache.spark.sql.catalyst.expressions.UnsafeProjection;
import org.apache.spark.sql.catalyst.expressions.UnsafeRow;
import org.apache.spark.sql.catalyst.plans.physical.HashPartitioning;
import org.apache.spark.sql.execution.streaming.state.ReadStateStore;
import org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider;
import org.apache.spark.sql.execution.streaming.state.StateStore;
import org.apache.spark.sql.execution.streaming.state.StateStoreConf;
import org.apache.spark.sql.execution.streaming.state.StateStoreId;
import org.apache.spark.sql.execution.streaming.state.StateStoreProvider;
import org.apache.spark.sql.execution.streaming.state.StateStoreProviderId;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;

/** Opens Spark's state store providers and computes where Spark places a state key. */
public final class StateStores {
  static final String DEFAULT_COLUMN_FAMILY = LineCalls.DEFAULT_COLUMN_FAMILY;

  private StateStores() {}

  /** A provider for one partition of one store, rooted at {@code stateRoot} (a state/ folder). */
  static StateStoreProvider open(
      String stateRoot,
      StoreSpec spec,
      int partition,
      StateStoreConf storeConf,
      Configuration hadoopConf) {
    StateStoreId id = new StateStoreId(stateRoot, spec.operatorId(), partition, spec.storeName());
    return LineCalls.createAndInit(
        new StateStoreProviderId(id, UUID.randomUUID()),
        spec,
        false,
        storeConf,
        new Configuration(hadoopConf));
  }

  /**
   * A provider for one partition of a store with several column families (transformWithState). Its
   * default column family is a placeholder; every real one must be registered on each store the
   * provider opens ({@link ColumnFamilyStates#registerAll}).
   */
  static StateStoreProvider openWithColumnFamilies(
      String stateRoot,
      StoreSpec spec,
      int partition,
      StateStoreConf storeConf,
      Configuration hadoopConf) {
    StateStoreId id = new StateStoreId(stateRoot, spec.operatorId(), partition, spec.storeName());
    return LineCalls.createAndInit(
        new StateStoreProviderId(id, UUID.randomUUID()),
        spec,
        true,
        storeConf,
        new Configuration(hadoopConf));
  }

  /**
   * Opens version {@code batchId + 1} of {@code provider}'s partition empty, lets {@code write}
   * fill and commit it, aborts it if {@code write} did not commit, and closes the provider in every
   * case: a failed task leaves no open RocksDB instance and no half-made version behind.
   */
  static <T> T writeNewVersion(
      StateStoreProvider provider, long batchId, Function<StateStore, T> write) {
    try {
      StateStore store = StoreCalls.openEmpty(provider, batchId);
      try {
        return write.apply(store);
      } finally {
        if (!store.hasCommitted()) {
          store.abort();
        }
      }
    } finally {
      provider.close();
    }
  }

  /**
   * Loads {@code version} of a partition to read it once. A RocksDB store does not compact itself
   * meanwhile ({@link RocksDbInternals#disableCompactions}): the output would be thrown away.
   */
  static ReadStateStore loadToRead(
      StateStoreProvider provider, long version, scala.Option<String> checkpointId) {
    boolean disabled = RocksDbInternals.disableCompactions(provider);
    ReadStateStore store = LineCalls.readStore(provider, version, checkpointId);
    if (!disabled
        && store instanceof RocksDBStateStoreProvider.RocksDBStateStore rocksDb
        && RocksDbInternals.available()) {
      RocksDbInternals.stopCompactions(rocksDb.dbInstance());
    }
    return store;
  }

  /**
   * Creates the folder of a new partition of a store. Spark's RocksDB commit of an empty store
   * uploads only the version's zip file, and creates the folder first only for version 1 (4.0,
   * 3.5): a new partition no key went to needs it.
   */
  static void createStoreFolder(
      String stateRoot, StoreSpec spec, int partition, Configuration hadoopConf) {
    org.apache.hadoop.fs.Path dir =
        new StateStoreId(stateRoot, spec.operatorId(), partition, spec.storeName())
            .storeCheckpointLocation();
    try {
      dir.getFileSystem(hadoopConf).mkdirs(dir);
    } catch (java.io.IOException e) {
      throw new java.io.UncheckedIOException(e);
    }
  }

  /** The unique id to load a version by under state checkpoint format v2; none under v1. */
  static scala.Option<String> checkpointId(StateCheckpointIds ids, StoreSpec spec, int partition) {
    return ids == null
        ? ScalaBridge.none()
        : scala.Option.apply(ids.idOf(spec.operatorId(), partition, spec.storeName()));
  }

  /** Spark's store settings from the SQL settings a layout records. */
  static StateStoreConf storeConf(java.util.Map<String, String> settings) {
    org.apache.spark.sql.internal.SQLConf sqlConf = new org.apache.spark.sql.internal.SQLConf();
    settings.forEach(sqlConf::setConfString);
    return new StateStoreConf(sqlConf, scala.collection.immutable.Map$.MODULE$.empty());
  }

  /**
   * Spark's own placement of a state key among {@code partitions}: the operator's partition key
   * (the whole key for aggregations, deduplication, flatMapGroupsWithState and a join's
   * keyToNumValues store; the key without its last field for session windows and a join's
   * keyWithIndexToValue store), hashed with Murmur3 seed 42, modulo n.
   */
  static final class KeyPlacement {
    private final PartitionKeyExtractor extractor;
    private final int partitions;

    /** Spark's hash evaluated directly ({@link PartitionHash}); else its generated code. */
    private final PartitionHash direct;

    /** Spark's hash of the partition key (before the modulo), as generated code. */
    private final UnsafeProjection hashCode;

    KeyPlacement(StoreSpec spec, int partitions) {
      this(extractor(spec), partitions);
    }

    private static PartitionKeyExtractor extractor(StoreSpec spec) {
      return PartitionKeys.of(
          spec.operatorName(),
          spec.keySchema(),
          spec.storeName(),
          DEFAULT_COLUMN_FAMILY,
          spec.stateFormatVersion(),
          null);
    }

    /** How many columns the partition key of a store's keys has (one store, no families). */
    static int partitionKeyColumns(StoreSpec spec) {
      return extractor(spec).partitionKeySchema().length();
    }

    /**
     * Placement of the keys of one column family of a transformWithState store: Spark's extractor
     * for the family's state variable finds the grouping key inside its key (the whole key of value
     * and list state, the first field of a map state or timer key, the element key inside a TTL
     * index entry, the second field of a timer's expiry-ordered index). For a join in state format
     * 3 the family's name tells the extractor which of the four stores it is (keys are the join
     * key, or the join key and an index).
     */
    KeyPlacement(StoreSpec spec, ColumnFamilySchema family, int partitions) {
      this(
          PartitionKeys.of(
              spec.operatorName(),
              family.keySchema(),
              spec.storeName(),
              family.name(),
              spec.stateFormatVersion(),
              family.stateVariable()),
          partitions);
    }

    private KeyPlacement(PartitionKeyExtractor extractor, int partitions) {
      this.extractor = extractor;
      this.partitions = partitions;
      StructField[] keyFields = extractor.partitionKeySchema().fields();
      this.direct = PartitionHash.of(keyFields);
      this.hashCode = direct != null ? null : hashCode(keyFields);
    }

    /** Spark's own expression for the partition of a key, as generated code. */
    static UnsafeProjection partitionIdCode(StructField[] keyFields, int partitions) {
      return UnsafeProjection.create(
          ScalaBridge.seq(List.of(partitionIdExpression(keyFields, partitions))));
    }

    /**
     * Spark's hash of the partition key, the operand of the {@code Pmod} in its partition id
     * expression: one hash serves the placement under any partition count ({@link #pmod}).
     */
    private static UnsafeProjection hashCode(StructField[] keyFields) {
      Expression hash = ((Pmod) partitionIdExpression(keyFields, 1)).left();
      return UnsafeProjection.create(ScalaBridge.seq(List.of(hash)));
    }

    private static Expression partitionIdExpression(StructField[] keyFields, int partitions) {
      List<Expression> fields = new ArrayList<>();
      for (int i = 0; i < keyFields.length; i++) {
        fields.add(new BoundReference(i, keyFields[i].dataType(), keyFields[i].nullable()));
      }
      return new HashPartitioning(ScalaBridge.seq(fields), partitions).partitionIdExpression();
    }

    int partitionOf(UnsafeRow key) {
      return pmod(hash(key), partitions);
    }

    /**
     * Spark's partitioning hash of the key's partition key; {@link #pmod} of it is the key's
     * partition under a count. Hashed once, a key is placed under the new count and checked against
     * the old one.
     */
    int hash(UnsafeRow key) {
      return hashOfPartitionKey(extractor.partitionKey(key));
    }

    /** The partition key inside {@code key}; the extractor may reuse the row between calls. */
    UnsafeRow partitionKey(UnsafeRow key) {
      return extractor.partitionKey(key);
    }

    /** The schema of {@link #partitionKey}: a grouping key, a join key. */
    StructType partitionKeySchema() {
      return extractor.partitionKeySchema();
    }

    /** Spark's partitioning hash of a partition key. */
    int hashOfPartitionKey(UnsafeRow partitionKey) {
      return direct != null
          ? direct.hash(partitionKey, PartitionHash.SEED)
          : hashCode.apply(partitionKey).getInt(0);
    }

    /** Spark's {@code Pmod}: the partition of a hash among {@code partitions}. */
    static int pmod(int hash, int partitions) {
      int r = hash % partitions;
      return r < 0 ? (r + partitions) % partitions : r;
    }
  }
}
