package io.stateshift.testing;

import java.util.Map;

/** The state store set-ups the tests cover, as the session confs that select them. */
public enum StateStores {
  HDFS(
      Map.of(
          "spark.sql.streaming.stateStore.providerClass",
          "org.apache.spark.sql.execution.streaming.state.HDFSBackedStateStoreProvider")),
  ROCKSDB(
      Map.of(
          "spark.sql.streaming.stateStore.providerClass",
          "org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider",
          "spark.sql.streaming.stateStore.rocksdb.changelogCheckpointing.enabled",
          "false")),
  ROCKSDB_CHANGELOG(
      Map.of(
          "spark.sql.streaming.stateStore.providerClass",
          "org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider",
          "spark.sql.streaming.stateStore.rocksdb.changelogCheckpointing.enabled",
          "true"));

  private final Map<String, String> conf;

  StateStores(Map<String, String> conf) {
    this.conf = conf;
  }

  public Map<String, String> conf() {
    return conf;
  }

  public Map<String, String> withPartitions(int partitions) {
    Map<String, String> out = new java.util.HashMap<>(conf);
    out.put("spark.sql.shuffle.partitions", Integer.toString(partitions));
    return out;
  }
}
