package io.stateshift.spark.state;

import io.stateshift.checkpoint.Checkpoint;
import io.stateshift.checkpoint.CheckpointFiles;
import io.stateshift.checkpoint.StateLayout;
import io.stateshift.checkpoint.StoreSpec;
import io.stateshift.spark.line.StateCalls;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.Map;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.execution.streaming.state.StateStoreConf;
import org.apache.spark.sql.execution.streaming.state.StateStoreProvider;

/**
 * Runs Spark's own maintenance of every state store partition of a stopped checkpoint, as the
 * maintenance task of a running query would: the provider loads the last committed version, then
 * {@code doMaintenance()} writes its snapshot where enough delta files precede it and removes the
 * files older than the newest version to retain.
 */
public final class StoreMaintenance {
  private StoreMaintenance() {}

  /**
   * Uploads the snapshots that RocksDB stores of {@code checkpoint} still loaded in this JVM have
   * queued, as the periodic maintenance would (which never fires in a test JVM): a store that logs
   * its changes creates a snapshot at commit and leaves its upload to the maintenance, unless the
   * provider unloads on commit ({@code stateStore.unloadOnCommit}, from Spark 4.1), which uploads
   * it then. Nothing where no provider of the checkpoint is loaded.
   */
  public static void uploadQueuedSnapshots(Path checkpoint) {
    Object loaded = null;
    for (java.lang.reflect.Field field :
        org.apache.spark.sql.execution.streaming.state.StateStore$.class.getDeclaredFields()) {
      if (field.getName().endsWith("loadedProviders")) {
        try {
          field.setAccessible(true);
          loaded = field.get(org.apache.spark.sql.execution.streaming.state.StateStore$.MODULE$);
        } catch (ReflectiveOperationException e) {
          throw new IllegalStateException(e);
        }
      }
    }
    if (!(loaded instanceof scala.collection.mutable.Map<?, ?> providers)) {
      throw new IllegalStateException("Spark's StateStore keeps no map of loaded providers");
    }
    java.util.List<StateStoreProvider> ofCheckpoint = new java.util.ArrayList<>();
    synchronized (providers) {
      for (Object provider : ScalaBridge.javaList(providers.values())) {
        StateStoreProvider p = (StateStoreProvider) provider;
        if (p.stateStoreId().checkpointRootLocation().contains(checkpoint.toString())) {
          ofCheckpoint.add(p);
        }
      }
    }
    ofCheckpoint.forEach(StateStoreProvider::doMaintenance);
  }

  public static void run(
      SparkSession spark, Path checkpoint, int minDeltasForSnapshot, int minBatchesToRetain) {
    CheckpointFiles files =
        CheckpointFiles.at(checkpoint.toString(), spark.sessionState().newHadoopConf());
    StateLayout layout = StateLayout.read(spark, Checkpoint.load(files), true);
    Map<String, String> settings = new HashMap<>(layout.storeConf());
    settings.put(
        "spark.sql.streaming.stateStore.minDeltasForSnapshot",
        Integer.toString(minDeltasForSnapshot));
    settings.put("spark.sql.streaming.minBatchesToRetain", Integer.toString(minBatchesToRetain));
    StateStoreConf storeConf = StateStores.storeConf(settings);
    long version = layout.lastCommitted() + 1;
    for (StoreSpec spec : layout.stores()) {
      for (int p = 0; p < layout.partitions(); p++) {
        StateStoreProvider provider =
            StateStores.open(files.path("state").toString(), spec, p, storeConf, files.conf());
        try {
          StateCalls.release(provider.getReadStore(version, ScalaBridge.none()));
          provider.doMaintenance();
        } finally {
          provider.close();
        }
      }
    }
  }
}
