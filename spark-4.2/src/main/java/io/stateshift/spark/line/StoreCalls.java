package io.stateshift.spark.line;

import org.apache.spark.sql.catalyst.expressions.UnsafeRow;
import org.apache.spark.sql.execution.streaming.state.RocksDBConf;
import org.apache.spark.sql.execution.streaming.state.RocksDBDataEncoder;
import org.apache.spark.sql.execution.streaming.state.RocksDBStateEncoder;
import org.apache.spark.sql.execution.streaming.state.RocksDBValueStateEncoder;
import org.apache.spark.sql.execution.streaming.state.StateStore;
import org.apache.spark.sql.execution.streaming.state.StateStoreConf;
import org.apache.spark.sql.execution.streaming.state.StateStoreIterator;
import org.apache.spark.sql.execution.streaming.state.StateStoreProvider;
import org.apache.spark.sql.execution.streaming.state.UnsafeRowPair;
import org.apache.spark.sql.types.StructType;

/** The state store calls whose signatures Spark 4.2 changed or added. */
public final class StoreCalls {
  private StoreCalls() {}

  /** Version {@code version} of the provider's partition, as committed. */
  public static StateStore open(
      StateStoreProvider provider, long version, scala.Option<String> checkpointId) {
    return provider.getStore(version, checkpointId, false, false);
  }

  /** An empty store whose commit writes version {@code version + 1}, whatever came before. */
  public static StateStore openEmpty(StateStoreProvider provider, long version) {
    return provider.getStore(version, scala.Option.empty(), false, true);
  }

  /** Every value of a column family of several values per key (a list state), one per row. */
  public static StateStoreIterator<UnsafeRowPair> iteratorWithMultiValues(
      StateStore store, String family) {
    return store.iteratorWithMultiValues(family);
  }

  public static boolean keyExists(StateStore store, UnsafeRow key, String family) {
    return store.keyExists(key, family);
  }

  /** Whether state rows carry checksums (spark.sql.streaming.stateStore.rowChecksum.enabled). */
  public static boolean rowChecksumEnabled(StateStoreConf conf) {
    return conf.rowChecksumEnabled();
  }

  /** RocksDB's value encoder for one value per key, without row checksums. */
  public static RocksDBValueStateEncoder valueEncoder(
      RocksDBDataEncoder data, StructType valueSchema) {
    return RocksDBStateEncoder.getValueEncoder(data, valueSchema, false, 1);
  }

  public static scala.Option<Object> fileChecksumThreadPoolSize(RocksDBConf conf) {
    return scala.Option.apply((Object) conf.fileChecksumThreadPoolSize());
  }
}
