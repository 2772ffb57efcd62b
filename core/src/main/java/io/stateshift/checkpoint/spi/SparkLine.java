package io.stateshift.checkpoint.spi;

import com.codahale.metrics.MetricRegistry;
import io.stateshift.RepartitionResult;
import io.stateshift.checkpoint.Checkpoint;
import io.stateshift.checkpoint.CheckpointFiles;
import io.stateshift.checkpoint.PreparedManifest;
import io.stateshift.checkpoint.StateCheckpointIds;
import io.stateshift.checkpoint.StateLayout;
import io.stateshift.checkpoint.StatefulOperator;
import io.stateshift.checkpoint.StoreSpec;
import java.io.IOException;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.UUID;
import org.apache.hadoop.conf.Configuration;
import org.apache.spark.SparkConf;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.SparkSessionExtensions;
import org.apache.spark.sql.types.StructType;

/**
 * Everything stateshift needs from one Spark line that Spark's public API does not offer: reading
 * state schemas and stores, the state exchanges, the file sink's log, and hooks into a running
 * session. The core calls Spark only through its public API and this interface; each supported
 * Spark line has a module that implements it (found with {@link SparkLines#get()}), so a new Spark
 * line is a new implementation, not a change to the core.
 */
public interface SparkLine {

  /** The Spark line this implementation is built for, such as {@code 4.2}. */
  String sparkLine();

  /**
   * Whether this line's Spark has state checkpoint format v2 (versions named by unique ids, since
   * Spark 4.0): a migration to it is refused where it has not.
   */
  default boolean checkpointFormatV2() {
    return true;
  }

  /**
   * The session of this Spark line's own session class with {@code conf} (master and app name
   * included), the active or default one if there is one, as {@code SparkSession.builder()
   * .config(conf).getOrCreate()} returns it: on 4.x, without that builder's first step, which picks
   * an implementation (classic or Connect) with Scala's runtime reflection, 0.2-0.45 s of CPU in a
   * fresh JVM that no command needs otherwise. Named by the public API only, so the core compiles
   * on every line (3.5 has one session class and no such builder).
   */
  SparkSession getOrCreateSession(SparkConf conf);

  /** The Hadoop configuration of a session, as Spark's own file sources use it. */
  Configuration hadoopConf(SparkSession spark);

  /** Attaches the on-demand repartition to sessions built with these extensions. */
  void installExtensions(SparkSessionExtensions extensions);

  /** The last on-demand repartition of a query in this application, if one happened. */
  Optional<RepartitionResult> lastRepartition(UUID queryId);

  /** Reads and validates the state layout of a checkpoint at its last committed batch. */
  StateLayout readLayout(SparkSession spark, Checkpoint checkpoint, LayoutReading reading);

  /**
   * The operator a checkpoint written without operator metadata (before Spark 3.5) has under {@code
   * state/<operatorId>}, derived from its files and schema.
   */
  StatefulOperator deriveOperator(CheckpointFiles files, long operatorId);

  /** Where a store's state version id sits in a partition's ids (checkpoint format v2). */
  int checkpointIdPosition(String storeName);

  /** How many leading key columns place a store's keys in partitions. */
  int partitionKeyColumns(StoreSpec store);

  /** Rows, bytes and misplaced keys of every store partition at the last committed batch. */
  default List<StateCount> countState(SparkSession spark, StateLayout layout) {
    return countState(spark, layout, layout.lastCommitted() + 1, layout.checkpointIds());
  }

  /** Rows, bytes and misplaced keys of every store partition at one state version. */
  List<StateCount> countState(
      SparkSession spark, StateLayout layout, long version, StateCheckpointIds checkpointIds);

  /** The job that writes the layout's state into {@code newPartitions} under {@code stagingDir}. */
  default Redistribution redistribution(StateLayout layout, String stagingDir, int newPartitions) {
    return redistribution(layout, stagingDir, newPartitions, layout.provider());
  }

  /**
   * The same, written for {@code writeProvider} (a state store provider class), which may differ
   * from the layout's own for a migration.
   */
  default Redistribution redistribution(
      StateLayout layout, String stagingDir, int newPartitions, String writeProvider) {
    return redistribution(
        layout, stagingDir, newPartitions, writeProvider, layout.checkpointFormatVersion());
  }

  /**
   * The same, written in state checkpoint format {@code writeFormatVersion} (1, or 2 where the
   * versions are named by unique ids), which may differ from the layout's own for a migration.
   */
  Redistribution redistribution(
      StateLayout layout,
      String stagingDir,
      int newPartitions,
      String writeProvider,
      int writeFormatVersion);

  /**
   * The job that brings a prepared layout ({@code stateshift prepare}) of the layout's stores from
   * its batch to the layout's last committed batch, replaying the changes the batches in between
   * logged, and writes the result under {@code stagingDir} as {@link #redistribution} would.
   */
  Redistribution preparedReplay(
      StateLayout layout, PreparedManifest prepared, String stagingDir, int newPartitions);

  /**
   * The entries of one store of the layout at its last committed batch, one row per entry: {@code
   * partition_id}, {@code key} and {@code value}, structs of the store's recorded schemas, as
   * Spark's state data source names them. Read-only. A store with column families
   * (transformWithState, a join in state format 3) gives {@code partition_id}, {@code variable},
   * {@code column_family}, {@code kind}, {@code key} (the grouping key), {@code entry_key} and
   * {@code value}: those of {@code columnFamily} typed, or all of them as JSON text where it is
   * null.
   */
  Dataset<Row> readState(
      SparkSession spark, StateLayout layout, StoreSpec store, String columnFamily);

  /**
   * Checks that {@code predicate}, a SQL boolean expression over {@code partition_id}, {@code key}
   * and {@code value}, applies to the entries of {@code store} (every column it names exists, its
   * type is boolean); with {@code keyOnly}, that it names no value column either. Throws a
   * StateShiftException (bad input) that names the columns there are.
   */
  void checkStatePredicate(SparkSession spark, StoreSpec store, String predicate, boolean keyOnly);

  /**
   * Checks that {@code rows} can be upserted into {@code store}: a {@code key} and a {@code value}
   * struct whose fields are the store's, by name, with types that widen safely, and no key twice.
   * Throws a StateShiftException (bad input) that names the schema expected.
   */
  void checkUpsert(SparkSession spark, StoreSpec store, Dataset<Row> rows);

  /**
   * Checks that the values of {@code store} can be rewritten into {@code valueSchema}, old fields
   * carried by name with types that widen safely, new ones filled by {@code fills} or by null or
   * zero. Throws a StateShiftException (bad input) that names the columns there are.
   */
  void checkValueEvolution(
      SparkSession spark, StoreSpec store, StructType valueSchema, Map<String, String> fills);

  /**
   * Checks that the value fields of {@code store} named in {@code sets} (field -> SQL expression
   * over {@code partition_id}, {@code key} and the old {@code value}) can be rewritten in place for
   * the entries {@code where} selects (null: all): every field exists, every expression's type
   * widens safely to the field's recorded type, {@code where} is a predicate. Throws a
   * StateShiftException (bad input) that names the columns there are.
   */
  void checkValueSet(SparkSession spark, StoreSpec store, Map<String, String> sets, String where);

  /**
   * The key and value schema of the state of a streaming query's one aggregation ({@code [key,
   * value]}), as Spark would record them, planned without running it; empty when the query has no
   * single streaming aggregation.
   */
  Optional<StructType[]> aggregationStateSchema(Dataset<?> streamingQuery);

  /** The SHA-256 (lowercase hex) of each file, read by Spark tasks. */
  List<String> sha256(SparkSession spark, Configuration conf, List<String> files);

  /** The log of the file sink writing to {@code location}. */
  SinkLog sinkLog(SparkSession spark, String location, Configuration conf);

  /** Refuses when a query of this application, or a recent writer, runs on the checkpoint. */
  void refuseIfRunning(
      SparkSession spark,
      CheckpointFiles files,
      UUID startingQuery,
      boolean assumeStopped,
      String action);

  /** What the monitor needs to know of a running query of the active session. */
  Optional<StreamingQueryInfo> describeQuery(UUID queryId);

  /**
   * Registers a metrics registry as a source of the driver's metrics system, once per Spark
   * application (again after a new one starts), so that every configured sink exports it.
   */
  void registerMetrics(String sourceName, MetricRegistry registry);

  /**
   * Loads what a command's first checkpoint access needs, and removes the local folders that killed
   * commands left, on a thread of its own at start.
   */
  void warmUpCommandLine() throws IOException;

  /**
   * Makes a command's own session in local mode the owner of its local folders (Spark's state
   * stores' copies and shuffle files), so that the next command removes them if this one is killed,
   * and removes those that killed commands left.
   */
  void claimCommandFolders(SparkSession spark);
}
