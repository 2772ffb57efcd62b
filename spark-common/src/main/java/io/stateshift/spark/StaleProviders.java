package io.stateshift.spark;

import io.stateshift.checkpoint.StateLayout;
import io.stateshift.checkpoint.StatefulOperator;
import io.stateshift.spark.line.StateCalls;
import io.stateshift.spark.state.ScalaBridge;
import java.io.Serializable;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import org.apache.hadoop.fs.Path;
import org.apache.spark.SparkEnv;
import org.apache.spark.api.java.function.Function;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.execution.streaming.state.StateStoreCoordinatorRef;
import org.apache.spark.sql.execution.streaming.state.StateStoreId;
import org.apache.spark.sql.execution.streaming.state.StateStoreProviderId;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import scala.Option;
import scala.Tuple2;
import scala.reflect.ClassTag$;

/**
 * Closes the state store providers a query run loaded before its state moved to another provider.
 * Executors keep a run's providers by store and run id, not by provider class: after a migration in
 * the middle of a run (a pending batch ran first, on the old provider), the next batch would
 * otherwise be handed the old provider's instance. Each provider is closed where the state store
 * coordinator saw it last, by one task per executor placed there, as Spark places state store
 * tasks.
 */
final class StaleProviders {
  private static final Logger LOG = LoggerFactory.getLogger(StaleProviders.class);

  private StaleProviders() {}

  /**
   * Closes the providers of run {@code runId} for the stores of {@code layout} (the layout the run
   * loaded); logs a warning for those that could not be reached.
   */
  static void close(SparkSession session, String checkpointRoot, StateLayout layout, UUID runId) {
    StateStoreCoordinatorRef coordinator =
        org.apache.spark.sql.classic.SparkSession.class
            .cast(session)
            .streams()
            .stateStoreCoordinator();
    String stateRoot = new Path(new Path(checkpointRoot), "state").toString();
    Map<String, ArrayList<StateStoreProviderId>> byLocation = new LinkedHashMap<>();
    for (StatefulOperator op : layout.operators()) {
      for (StatefulOperator.Store store : op.stores()) {
        for (int partition = 0; partition < layout.partitions(); partition++) {
          StateStoreProviderId id =
              new StateStoreProviderId(
                  new StateStoreId(stateRoot, op.id(), partition, store.name()), runId);
          Option<String> location = coordinator.getLocation(id);
          if (location.isDefined()) {
            byLocation.computeIfAbsent(location.get(), l -> new ArrayList<>()).add(id);
          }
        }
      }
    }
    if (byLocation.isEmpty()) {
      return;
    }
    List<Tuple2<Batch, scala.collection.immutable.Seq<String>>> tasks = new ArrayList<>();
    byLocation.forEach(
        (location, ids) ->
            tasks.add(new Tuple2<>(new Batch(location, ids), ScalaBridge.seq(List.of(location)))));
    List<String> missed =
        session
            .sparkContext()
            .<Batch>makeRDD(ScalaBridge.untypedSeq(tasks), ClassTag$.MODULE$.apply(Batch.class))
            .toJavaRDD()
            .map((Function<Batch, String>) Batch::closeHere)
            .collect()
            .stream()
            .filter(s -> !s.isEmpty())
            .toList();
    // The old run's entries would make the next batch prefer executors that no longer hold them.
    coordinator.deactivateInstances(runId);
    if (!missed.isEmpty()) {
      LOG.warn(
          "The state store providers of run {} on {} could not be closed (the task ran "
              + "elsewhere); if the next batch fails to load its state, restart the query.",
          runId,
          missed);
    }
  }

  /** The providers one executor holds; closed by a task that runs on that executor. */
  private record Batch(String location, ArrayList<StateStoreProviderId> ids)
      implements Serializable {
    /** Closes them if this is their executor; returns the location when it is not. */
    String closeHere() {
      SparkEnv env = SparkEnv.get();
      String here =
          "executor_" + env.blockManager().blockManagerId().host() + "_" + env.executorId();
      if (!here.equals(location)) {
        return location;
      }
      for (StateStoreProviderId id : ids) {
        StateCalls.unloadProvider(id);
      }
      return "";
    }
  }
}
