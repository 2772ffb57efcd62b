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

/**
 * The state store calls of lines before 4.2, by the names and signatures those lines have. What
 * only transformWithState needs is unreachable here: these lines refuse its state ({@link
 * LineFeatures#TRANSFORM_WITH_STATE}).
 */
public final class StoreCalls {
  private StoreCalls() {}

  /** Version {@code version} of the provider's partition, as committed. */
  public static StateStore open(
      StateStoreProvider provider, long version, scala.Option<String> checkpointId) {
    return provider.getStore(version, checkpointId);
  }

  /** An empty store whose commit writes version {@code version + 1}, whatever came before. */
  public static StateStore openEmpty(StateStoreProvider provider, long version) {
    return EmptyStores.open(provider, version);
  }

  public static StateStoreIterator<UnsafeRowPair> iteratorWithMultiValues(
      StateStore store, String family) {
    throw new IllegalStateException("transformWithState state is refused on this Spark line");
  }

  public static boolean keyExists(StateStore store, UnsafeRow key, String family) {
    throw new IllegalStateException("transformWithState state is refused on this Spark line");
  }

  /** Row checksums came with Spark 4.2. */
  public static boolean rowChecksumEnabled(StateStoreConf conf) {
    return false;
  }

  /** RocksDB's value encoder for one value per key. */
  public static RocksDBValueStateEncoder valueEncoder(
      RocksDBDataEncoder data, StructType valueSchema) {
    return RocksDBStateEncoder.getValueEncoder(data, valueSchema, false);
  }

  /** Spark's own choice before 4.2, where the pool size was not a setting. */
  public static scala.Option<Object> fileChecksumThreadPoolSize(RocksDBConf conf) {
    return scala.Option.apply((Object) 4);
  }
}
