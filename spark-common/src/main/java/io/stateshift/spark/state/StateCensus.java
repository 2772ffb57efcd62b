package io.stateshift.spark.state;

import io.stateshift.checkpoint.StateCheckpointIds;
import io.stateshift.checkpoint.StoreSpec;
import io.stateshift.checkpoint.spi.StateCount;
import io.stateshift.spark.line.LineCalls;
import io.stateshift.spark.line.StateCalls;
import java.io.Serializable;
import java.util.ArrayList;
import java.util.List;
import org.apache.hadoop.conf.Configuration;
import org.apache.spark.api.java.JavaSparkContext;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.execution.streaming.state.ReadStateStore;
import org.apache.spark.sql.execution.streaming.state.StateStoreConf;
import org.apache.spark.sql.execution.streaming.state.StateStoreIterator;
import org.apache.spark.sql.execution.streaming.state.StateStoreProvider;
import org.apache.spark.sql.execution.streaming.state.UnsafeRowPair;
import org.apache.spark.util.SerializableConfiguration;

/**
 * A Spark job that counts rows and bytes in every partition of every store at one state version,
 * and the keys that sit outside the partition Spark's hash assigns them.
 */
final class StateCensus implements Serializable {

  /** Counts of one store partition. */
  private record Task(int slot, int partition) implements Serializable {}

  private final String stateRoot;
  private final StateStoreConf storeConf;
  private final SerializableConfiguration hadoopConf;
  private final List<StoreSpec> stores;
  private final int partitions;
  private final long version;
  private final StateCheckpointIds checkpointIds;

  StateCensus(
      String stateRoot,
      StateStoreConf storeConf,
      Configuration hadoopConf,
      List<StoreSpec> stores,
      int partitions,
      long version,
      StateCheckpointIds checkpointIds) {
    this.checkpointIds = checkpointIds;
    this.stateRoot = stateRoot;
    this.storeConf = storeConf;
    this.hadoopConf = new SerializableConfiguration(hadoopConf);
    this.stores = List.copyOf(stores);
    this.partitions = partitions;
    this.version = version;
  }

  List<StateCount> run(SparkSession spark) {
    spark.streams(); // creates the StateStoreCoordinator the RocksDB provider reports to
    List<Task> tasks = new ArrayList<>();
    for (StoreSpec store : stores) {
      for (int p = 0; p < partitions; p++) {
        tasks.add(new Task(store.slot(), p));
      }
    }
    if (tasks.isEmpty()) {
      return List.of();
    }
    return JavaSparkContext.fromSparkContext(spark.sparkContext())
        .parallelize(tasks, tasks.size())
        .map(this::count)
        .collect();
  }

  private StateCount count(Task task) {
    StoreSpec spec = stores.get(task.slot());
    if (spec.hasColumnFamilies()) {
      return countColumnFamilies(task, spec);
    }
    StateStoreProvider provider =
        StateStores.open(stateRoot, spec, task.partition(), storeConf, hadoopConf.value());
    try {
      ReadStateStore store =
          StateStores.loadToRead(
              provider, version, StateStores.checkpointId(checkpointIds, spec, task.partition()));
      try {
        StateStoreIterator<UnsafeRowPair> rows = LineCalls.rows(store);
        StateStores.KeyPlacement placement = new StateStores.KeyPlacement(spec, partitions);
        long count = 0;
        long bytes = 0;
        long misplaced = 0;
        while (rows.hasNext()) {
          UnsafeRowPair pair = rows.next();
          count++;
          bytes += pair.key().getSizeInBytes() + pair.value().getSizeInBytes();
          if (placement.partitionOf(pair.key()) != task.partition()) {
            misplaced++;
          }
        }
        rows.close();
        return new StateCount(task.slot(), task.partition(), count, bytes, misplaced);
      } finally {
        StateCalls.release(store);
      }
    } finally {
      provider.close();
    }
  }

  /** The same for a store with several column families: every entry of every family counts. */
  private StateCount countColumnFamilies(Task task, StoreSpec spec) {
    try (ColumnFamilyStates.Reader reader =
        new ColumnFamilyStates.Reader(
            stateRoot,
            spec,
            task.partition(),
            version,
            StateStores.checkpointId(checkpointIds, spec, task.partition()),
            storeConf,
            hadoopConf.value())) {
      long count = 0;
      long bytes = 0;
      long misplaced = 0;
      for (var entries = reader.entries(spec, partitions); entries.hasNext(); ) {
        ColumnFamilyStates.Entry entry = entries.next();
        count++;
        bytes += entry.bytes();
        if (entry.newPartition() != task.partition()) {
          misplaced++;
        }
      }
      return new StateCount(task.slot(), task.partition(), count, bytes, misplaced);
    }
  }
}
