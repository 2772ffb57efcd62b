package io.stateshift.spark;

import com.codahale.metrics.MetricRegistry;
import io.stateshift.RepartitionResult;
import io.stateshift.checkpoint.Checkpoint;
import io.stateshift.checkpoint.CheckpointFiles;
import io.stateshift.checkpoint.StateCheckpointIds;
import io.stateshift.checkpoint.StateLayout;
import io.stateshift.checkpoint.StatefulOperator;
import io.stateshift.checkpoint.StoreSpec;
import io.stateshift.checkpoint.spi.LayoutReading;
import io.stateshift.checkpoint.spi.Redistribution;
import io.stateshift.checkpoint.spi.SinkLog;
import io.stateshift.checkpoint.spi.SparkLine;
import io.stateshift.checkpoint.spi.StateCount;
import io.stateshift.checkpoint.spi.StreamingQueryInfo;
import io.stateshift.spark.state.LocalRunFolders;
import io.stateshift.spark.state.SparkState;
import java.io.IOException;
import java.util.List;
import java.util.Optional;
import java.util.UUID;
import org.apache.hadoop.conf.Configuration;
import org.apache.spark.SparkConf;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.SparkSessionExtensions;
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan;
import org.apache.spark.sql.catalyst.rules.Rule;
import scala.Function1;

/**
 * The {@link SparkLine} every line module compiles against its own Spark; a line's subclass,
 * registered in its META-INF/services, adds only what differs by name.
 */
public abstract class SparkLineBase implements SparkLine {

  @Override
  public SparkSession getOrCreateSession(SparkConf conf) {
    return org.apache.spark.sql.classic.SparkSession.builder().config(conf).getOrCreate();
  }

  @Override
  public Configuration hadoopConf(SparkSession spark) {
    // a class literal and Class.cast, not a pattern: on 3.5, whose one session class is the
    // public one, the build renames this class to SparkSession (spark-common/src/build)
    if (spark instanceof org.apache.spark.sql.classic.SparkSession) {
      return org.apache.spark.sql.classic.SparkSession.class
          .cast(spark)
          .sessionState()
          .newHadoopConf();
    }
    return spark.sparkContext().hadoopConfiguration();
  }

  @Override
  public void installExtensions(SparkSessionExtensions extensions) {
    // Rule builders receive the session as soon as it analyzes its first plan, which every query
    // does before it starts: the moment to attach the listener that acts at query start.
    extensions.injectResolutionRule(
        (Function1<SparkSession, Rule<LogicalPlan>>)
            session -> {
              OnDemandRepartition.installOn(session);
              return new PassThrough();
            });
  }

  /** A rule that changes nothing; it only exists to be handed the session. */
  private static final class PassThrough extends Rule<LogicalPlan> {
    @Override
    public LogicalPlan apply(LogicalPlan plan) {
      return plan;
    }

    @Override
    public String ruleName() {
      return "stateshift.attachOnDemandRepartition";
    }
  }

  @Override
  public Optional<RepartitionResult> lastRepartition(UUID queryId) {
    return OnDemandRepartition.lastRepartition(queryId);
  }

  @Override
  public StateLayout readLayout(SparkSession spark, Checkpoint checkpoint, LayoutReading reading) {
    return SparkState.readLayout(spark, checkpoint, reading);
  }

  @Override
  public StatefulOperator deriveOperator(CheckpointFiles files, long operatorId) {
    return SparkState.deriveOperator(files, operatorId);
  }

  @Override
  public int checkpointIdPosition(String storeName) {
    return SparkState.checkpointIdPosition(storeName);
  }

  @Override
  public int partitionKeyColumns(StoreSpec store) {
    return SparkState.partitionKeyColumns(store);
  }

  @Override
  public List<StateCount> countState(
      SparkSession spark, StateLayout layout, long version, StateCheckpointIds checkpointIds) {
    return SparkState.countState(spark, layout, version, checkpointIds);
  }

  @Override
  public org.apache.spark.sql.Dataset<org.apache.spark.sql.Row> readState(
      SparkSession spark, StateLayout layout, StoreSpec store, String columnFamily) {
    return SparkState.readState(spark, layout, store, columnFamily);
  }

  @Override
  public void checkStatePredicate(
      SparkSession spark, StoreSpec store, String predicate, boolean keyOnly) {
    SparkState.checkStatePredicate(spark, store, predicate, keyOnly);
  }

  @Override
  public void checkUpsert(
      SparkSession spark,
      StoreSpec store,
      org.apache.spark.sql.Dataset<org.apache.spark.sql.Row> rows) {
    SparkState.checkUpsert(spark, store, rows);
  }

  @Override
  public void checkValueSet(
      SparkSession spark, StoreSpec store, java.util.Map<String, String> sets, String where) {
    SparkState.checkValueSet(spark, store, sets, where);
  }

  @Override
  public void checkValueEvolution(
      SparkSession spark,
      StoreSpec store,
      org.apache.spark.sql.types.StructType valueSchema,
      java.util.Map<String, String> fills) {
    SparkState.checkValueEvolution(spark, store, valueSchema, fills);
  }

  @Override
  public Optional<org.apache.spark.sql.types.StructType[]> aggregationStateSchema(
      org.apache.spark.sql.Dataset<?> query) {
    return SparkState.aggregationStateSchema(query);
  }

  @Override
  public Redistribution redistribution(
      StateLayout layout,
      String stagingDir,
      int newPartitions,
      String writeProvider,
      int writeFormatVersion) {
    return SparkState.redistribution(
        layout, stagingDir, newPartitions, writeProvider, writeFormatVersion);
  }

  @Override
  public Redistribution preparedReplay(
      StateLayout layout,
      io.stateshift.checkpoint.PreparedManifest prepared,
      String stagingDir,
      int newPartitions) {
    return SparkState.preparedReplay(layout, prepared, stagingDir, newPartitions);
  }

  @Override
  public List<String> sha256(SparkSession spark, Configuration conf, List<String> files) {
    return SparkState.sha256(spark, conf, files);
  }

  @Override
  public SinkLog sinkLog(SparkSession spark, String location, Configuration conf) {
    return FileSinkLog.at(spark, location, conf);
  }

  @Override
  public void refuseIfRunning(
      SparkSession spark,
      CheckpointFiles files,
      UUID startingQuery,
      boolean assumeStopped,
      String action) {
    RunningQueryCheck.refuseIfRunning(spark, files, startingQuery, assumeStopped, action);
  }

  @Override
  public Optional<StreamingQueryInfo> describeQuery(UUID queryId) {
    return StreamIntrospection.describe(queryId);
  }

  @Override
  public void registerMetrics(String sourceName, MetricRegistry registry) {
    MetricsSource.register(sourceName, registry);
  }

  @Override
  public void warmUpCommandLine() throws IOException {
    LocalRunFolders.removeOrphansFromLocalDir();
    StartupWarmup.rocksDbCheckpointMetadata();
    StartupWarmup.rocksDbNativeLibrary();
  }

  @Override
  public void claimCommandFolders(SparkSession spark) {
    if (!spark.sparkContext().isLocal()) {
      return; // executors' folders are their workers' to remove
    }
    SparkConf conf = spark.sparkContext().getConf();
    List<java.io.File> folders = new java.util.ArrayList<>();
    // Spark's private[spark] method, which has no static forwarder on the Utils class
    for (String root : org.apache.spark.util.Utils$.MODULE$.getOrCreateLocalRootDirs(conf)) {
      folders.add(new java.io.File(root));
    }
    folders.addAll(
        List.of(org.apache.spark.SparkEnv.get().blockManager().diskBlockManager().localDirs()));
    LocalRunFolders.claimSessionFolders(conf, folders);
  }
}
