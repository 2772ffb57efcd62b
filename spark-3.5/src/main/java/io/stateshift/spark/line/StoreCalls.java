package io.stateshift.spark.line;

import org.apache.spark.sql.catalyst.expressions.UnsafeRow;
import org.apache.spark.sql.execution.streaming.state.StateStore;
import org.apache.spark.sql.execution.streaming.state.StateStoreConf;
import org.apache.spark.sql.execution.streaming.state.StateStoreProvider;
import org.apache.spark.sql.execution.streaming.state.UnsafeRowPair;

/**
 * The state store calls of Spark 3.5 (before-4.2's StoreCalls on 4.0 and 4.1): versions by number
 * only (no checkpoint ids), no column families. What only transformWithState needs is unreachable
 * here: 3.5 has none ({@link LineFeatures#TRANSFORM_WITH_STATE}).
 */
public final class StoreCalls {
  private StoreCalls() {}

  /** Version {@code version} of the provider's partition, as committed. */
  public static StateStore open(
      StateStoreProvider provider, long version, scala.Option<String> checkpointId) {
    if (checkpointId.isDefined()) {
      throw new IllegalStateException("Spark 3.5 has no state checkpoint format v2");
    }
    return provider.getStore(version);
  }

  /** An empty store whose commit writes version {@code version + 1}, whatever came before. */
  public static StateStore openEmpty(StateStoreProvider provider, long version) {
    return EmptyStores.open(provider, version);
  }

  public static StateStoreIterator<UnsafeRowPair> iteratorWithMultiValues(
      StateStore store, String family) {
    throw new IllegalStateException("Spark 3.5 has no transformWithState");
  }

  public static boolean keyExists(StateStore store, UnsafeRow key, String family) {
    throw new IllegalStateException("Spark 3.5 has no transformWithState");
  }

  /** Row checksums came with Spark 4.2. */
  public static boolean rowChecksumEnabled(StateStoreConf conf) {
    return false;
  }
}
