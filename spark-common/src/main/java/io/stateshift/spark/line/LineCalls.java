package io.stateshift.spark.line;

import io.stateshift.checkpoint.StoreSpec;
import io.stateshift.spark.state.ScalaBridge;
import java.util.List;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FSDataInputStream;
import org.apache.spark.sql.catalyst.util.CollationFactory;
import org.apache.spark.sql.execution.streaming.state.KeyStateEncoderSpec;
import org.apache.spark.sql.execution.streaming.state.NoPrefixKeyStateEncoderSpec;
import org.apache.spark.sql.execution.streaming.state.PrefixKeyScanStateEncoderSpec;
import org.apache.spark.sql.execution.streaming.state.ReadStateStore;
import org.apache.spark.sql.execution.streaming.state.StateSchemaCompatibilityChecker$;
import org.apache.spark.sql.execution.streaming.state.StateStoreColFamilySchema;
import org.apache.spark.sql.execution.streaming.state.StateStoreConf;
import org.apache.spark.sql.execution.streaming.state.StateStoreIterator;
import org.apache.spark.sql.execution.streaming.state.StateStoreProvider;
import org.apache.spark.sql.execution.streaming.state.StateStoreProvider$;
import org.apache.spark.sql.execution.streaming.state.StateStoreProviderId;
import org.apache.spark.sql.execution.streaming.state.UnsafeRowPair;
import org.apache.spark.sql.types.StringType;

/**
 * The state store calls whose signatures Spark 4.0 changed (column families, key encoder specs,
 * checkpoint ids, collations), as every 4.x line makes them. Spark 3.5 has the older ones: the 3.5
 * line compiles its own class of this name (spark-3.5/src/main/java) instead of this one.
 */
public final class LineCalls {
  private LineCalls() {}

  /** The name of a store's one column family (a store without column families). */
  public static final String DEFAULT_COLUMN_FAMILY = "default";

  /** A provider of the store, initialized. */
  public static StateStoreProvider createAndInit(
      StateStoreProviderId id,
      StoreSpec spec,
      boolean columnFamilies,
      StateStoreConf storeConf,
      Configuration hadoopConf) {
    return StateStoreProvider$.MODULE$.createAndInit(
        id,
        spec.keySchema(),
        spec.valueSchema(),
        columnFamilies ? new NoPrefixKeyStateEncoderSpec(spec.keySchema()) : keyEncoderSpec(spec),
        columnFamilies,
        storeConf,
        hadoopConf,
        false,
        scala.Option.empty());
  }

  /** How the store's keys are encoded: whole-key, or prefix-scannable on the first n columns. */
  public static KeyStateEncoderSpec keyEncoderSpec(StoreSpec spec) {
    return spec.numColsPrefixKey() > 0
        ? new PrefixKeyScanStateEncoderSpec(spec.keySchema(), spec.numColsPrefixKey())
        : new NoPrefixKeyStateEncoderSpec(spec.keySchema());
  }

  /** Version {@code version} of the provider's partition, to read. */
  public static ReadStateStore readStore(
      StateStoreProvider provider, long version, scala.Option<String> checkpointId) {
    return provider.getReadStore(version, checkpointId);
  }

  /** Every row of a store without column families; the caller closes it. */
  public static StateStoreIterator<UnsafeRowPair> rows(ReadStateStore store) {
    return store.iterator(DEFAULT_COLUMN_FAMILY);
  }

  /**
   * Whether the shuffle's read side opens a RocksDB version's own snapshot read-only: not on Spark
   * 4, whose RocksDB stores are read from their snapshots by the file exchanges and whose shuffle
   * loads them with the provider.
   */
  public static final boolean SHUFFLE_READS_SNAPSHOTS = false;

  /** Spark 4's shuffle reads no snapshot ({@link #SHUFFLE_READS_SNAPSHOTS}). */
  public static StateStoreIterator<UnsafeRowPair> snapshotRows(
      org.rocksdb.RocksDB db, StoreSpec spec) {
    throw new UnsupportedOperationException("the shuffle loads RocksDB stores with the provider");
  }

  /** Spark 4's shuffle reads no snapshot ({@link #SHUFFLE_READS_SNAPSHOTS}). */
  public static int plainRowVersion(StoreSpec spec) {
    return -1;
  }

  /** The column families' schemas of a schema file Spark wrote in a store's _metadata folder. */
  public static List<StateStoreColFamilySchema> readSchemaFile(FSDataInputStream in) {
    return ScalaBridge.javaList(StateSchemaCompatibilityChecker$.MODULE$.readSchemaFile(in));
  }

  /** Whether a string type compares its bytes (no collation), as Spark's plain hash assumes. */
  public static boolean binaryString(StringType type) {
    return type.collationId() == CollationFactory.UTF8_BINARY_COLLATION_ID;
  }
}
