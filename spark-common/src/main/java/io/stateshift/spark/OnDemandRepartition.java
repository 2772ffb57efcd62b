package io.stateshift.spark;

import io.stateshift.RepartitionResult;
import io.stateshift.StateShiftException;
import io.stateshift.StateShiftException.Reason;
import io.stateshift.StateShiftExtensions;
import io.stateshift.checkpoint.Checkpoint;
import io.stateshift.checkpoint.CheckpointFiles;
import io.stateshift.checkpoint.OffsetLogEntry;
import io.stateshift.checkpoint.SessionSettings;
import io.stateshift.checkpoint.StateCheckpointIds;
import io.stateshift.checkpoint.StateLayout;
import io.stateshift.config.StateShiftConf;
import io.stateshift.protocol.FileSinkRecord;
import io.stateshift.protocol.ProviderMigration;
import io.stateshift.protocol.QueryLease;
import io.stateshift.protocol.RepartitionJournal;
import io.stateshift.protocol.RepartitionRunner;
import io.stateshift.protocol.SinkLogGaps;
import io.stateshift.spark.line.StateCalls;
import java.util.Map;
import java.util.Optional;
import java.util.UUID;
import java.util.WeakHashMap;
import java.util.concurrent.ConcurrentHashMap;
import org.apache.spark.sql.RuntimeConfig;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.execution.streaming.runtime.MicroBatchExecution;
import org.apache.spark.sql.execution.streaming.runtime.StreamExecution;
import org.apache.spark.sql.execution.streaming.runtime.StreamingQueryWrapper;
import org.apache.spark.sql.streaming.StreamingQuery;
import org.apache.spark.sql.streaming.StreamingQueryListener;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The listener behind {@code spark.sql.streaming.stateStore.partitions} and {@code
 * spark.stateshift.migrate.enabled}. Spark delivers the query-started event synchronously on the
 * query's own thread, before the query reads its offset and commit logs, so a repartition or
 * migration done here is what the query then starts from. The query's session still holds the
 * provider the user set at that point: Spark replaces it with the offset log's only when it reads
 * the log.
 */
public final class OnDemandRepartition extends StreamingQueryListener {
  static final String STATE_PARTITIONS = StateShiftExtensions.STATE_PARTITIONS;
  static final String PROGRESS_KEY = StateShiftExtensions.PROGRESS_KEY;
  static final String INTERNAL_STATE_PARTITIONS = StateCalls.NEW_CHECKPOINT_PARTITIONS;
  private static final Logger LOG = LoggerFactory.getLogger(OnDemandRepartition.class);
  private static final Map<SparkSession, OnDemandRepartition> INSTALLED = new WeakHashMap<>();
  private static final Map<UUID, RepartitionResult> LAST_BY_QUERY = new ConcurrentHashMap<>();

  private final SparkSession session;

  /** A repartition time to report in the first progress of a run after {@code afterBatch}. */
  private record Unreported(long millis, long preparedReplayMillis, long afterBatch) {}

  private final Map<UUID, Unreported> unreported = new ConcurrentHashMap<>();

  private OnDemandRepartition(SparkSession session) {
    this.session = session;
  }

  /** Attaches the listener to a session once. */
  public static void installOn(SparkSession session) {
    synchronized (INSTALLED) {
      if (!INSTALLED.containsKey(session)) {
        OnDemandRepartition listener = new OnDemandRepartition(session);
        INSTALLED.put(session, listener);
        session.streams().addListener(listener);
      }
    }
  }

  /** The last on-demand repartition of a query (by query id) in this application, if any. */
  public static Optional<RepartitionResult> lastRepartition(UUID queryId) {
    return Optional.ofNullable(LAST_BY_QUERY.get(queryId));
  }

  @Override
  public void onQueryStarted(QueryStartedEvent event) {
    StreamExecution execution = execution(event.id());
    if (execution == null) {
      return; // not a query of this SparkSession
    }
    String wanted = session.conf().get(STATE_PARTITIONS, null);
    // The provider the user started the query with: read now, before the query reads its offset
    // log, where Spark replaces the session's value with the checkpoint's
    // (OffsetSeqMetadata.setSessionConf, called from MicroBatchExecution.populateStartOffsets).
    RuntimeConfig queryConf = QueryCalls.session(execution).conf();
    String wantedProvider = queryConf.get(OffsetLogEntry.PROVIDER_CLASS, null);
    // Spark does not record the state checkpoint format: only a value the user set counts.
    String wantedFormat = queryConf.get(StateCheckpointIds.FORMAT_VERSION_CONF, null);
    try {
      CheckpointFiles files =
          CheckpointFiles.at(
              execution.resolvedCheckpointRoot(), SessionSettings.hadoopConf(session));
      // Held while the query runs, so repartitions in other processes see it (released at the end).
      QueryLease.take(files, event.id(), event.runId(), execution::isActive);
      Optional<String> sinkLog = recordAndRepairFileSink(execution, files);
      boolean migrate = StateShiftConf.MIGRATE_ENABLED.from(key -> queryConf.get(key, null));
      if (wanted == null || wanted.isBlank()) {
        // Not asked to repartition, but never start on a half-switched layout.
        new RepartitionRunner(
                session,
                files.root().toString(),
                1,
                message -> LOG.info("stateshift: {}", message),
                event.id())
            .recoverInterrupted()
            .ifPresent(done -> LOG.warn("Interrupted repartition of {}: {}", files.root(), done));
        if (wantedProvider == null && wantedFormat == null) {
          return;
        }
        if (!migrate) {
          if (wantedProvider != null) {
            warnOfProviderMismatch(event, files, wantedProvider);
          }
          if (wantedFormat != null) {
            refuseFormatMismatch(event, files, wantedProvider, wantedFormat);
          }
          return;
        }
      }
      Integer partitions = wanted == null || wanted.isBlank() ? null : parse(wanted);
      if (partitions != null) {
        // A new checkpoint takes its count from this setting (absent an offset log): an internal
        // one since 4.1, the query session's shuffle partitions on 4.0.
        QueryCalls.session(execution)
            .conf()
            .set(INTERNAL_STATE_PARTITIONS, Integer.toString(partitions));
      }
      if (!files.exists(files.path("offsets"))) {
        return; // a new checkpoint whose offset log is not made yet (Spark before 4.2 makes it
        // late)
      }
      Checkpoint checkpoint = Checkpoint.load(files);
      boolean interrupted = RepartitionJournal.read(files).isPresent();
      if (checkpoint.lastPlannedBatch() < 0 && !interrupted) {
        return; // a new checkpoint: the session's settings are all it takes
      }
      if (!interrupted && checkpoint.operators().isEmpty()) {
        return; // a stateless query: the settings do not apply
      }
      long planned = checkpoint.lastPlannedBatch();
      int current = checkpoint.offsets(planned).shufflePartitions();
      // An interrupted attempt is finished first (by the runner); the provider is looked at again
      // at the next start.
      String provider =
          interrupted
              ? null
              : providerChange(
                  event,
                  files,
                  checkpoint.offsets(planned).providerClass(),
                  wantedProvider,
                  migrate);
      Integer format =
          interrupted
              ? null
              : formatChange(
                  event,
                  files,
                  checkpoint,
                  provider != null ? provider : checkpoint.offsets(planned).providerClass(),
                  wantedFormat,
                  migrate);
      boolean repartition = partitions != null && current != partitions;
      if (!repartition && provider == null && format == null && !interrupted) {
        return;
      }
      int target = partitions != null ? partitions : current;
      if (provider == null && format != null) {
        LOG.info(
            "Query {} starts on checkpoint {} in state checkpoint format v{}; its state is "
                + "converted to v{}{} ({}=true).",
            event.id(),
            files.root(),
            format == 2 ? 1 : 2,
            format,
            repartition ? " and " + target + " partitions" : "",
            StateShiftConf.MIGRATE_ENABLED.key());
      } else if (provider == null) {
        LOG.info(
            "Query {} starts on checkpoint {} with {} state partitions; {} is set to {}.",
            event.id(),
            files.root(),
            current,
            STATE_PARTITIONS,
            target);
      } else {
        LOG.info(
            "Query {} starts on checkpoint {} with {} state partitions in the {} state store; its "
                + "state is migrated to the {} state store{} ({}=true).",
            event.id(),
            files.root(),
            current,
            ProviderMigration.shortName(checkpoint.offsets(planned).providerClass()),
            ProviderMigration.shortName(provider),
            repartition ? " and " + target + " partitions" : "",
            StateShiftConf.MIGRATE_ENABLED.key());
      }
      Change change = new Change(target, provider, format, repartition);
      boolean pending = planned > checkpoint.lastCommittedBatch() && !interrupted;
      StateLayout layout = null;
      if (!interrupted) {
        // Refuse now, before any batch runs or any state moves, what would be refused later.
        layout = StateLayout.read(session, checkpoint, true, pending);
        QueryShapeCheck.refuseIfChanged(logicalPlan(execution), layout);
        if (provider != null || format != null) {
          String targetProvider = provider != null ? provider : layout.provider();
          // the HDFS-backed store has format v1 only: a migration to it converts (as the runner)
          int targetFormat =
              format != null
                  ? format
                  : StateLayout.HDFS_PROVIDER.equals(targetProvider)
                      ? 1
                      : layout.checkpointFormatVersion();
          ProviderMigration.check(layout, targetProvider, targetFormat, files.root().toString());
        }
      }
      if (pending) {
        if (format != null) {
          // the pending batch runs on the old layout, in the checkpoint's format
          queryConf.set(
              StateCheckpointIds.FORMAT_VERSION_CONF, Integer.toString(format == 2 ? 1 : 2));
        }
        runPendingBatchFirst(execution, event, files, change, layout, planned, sinkLog);
        return;
      }
      change(event, files, change, -1, sinkLog);
    } catch (StateShiftException e) {
      QueryLease.release(event.runId());
      throw new QueryStartRefused(e);
    } catch (RuntimeException e) {
      QueryLease.release(event.runId());
      throw new QueryStartRefused(
          new StateShiftException(
              Reason.FAILED, "On-demand repartition failed: " + e.getMessage(), e));
    }
  }

  /**
   * What a starting query changes: the partition count to end with, the provider to migrate to
   * (null: the checkpoint's), and whether the count changes.
   */
  private record Change(
      int partitions, String provider, Integer formatVersion, boolean repartition) {
    boolean migrates() {
      return provider != null || formatVersion != null;
    }
  }

  /**
   * The state checkpoint format to convert to, when the session sets another one than the
   * checkpoint's and migrating is enabled; null when they agree. Without the setting the start is
   * refused: Spark cannot switch the format at a restart (the first batch fails), so the query
   * would fail anyway, with a less helpful error.
   */
  private static Integer formatChange(
      QueryStartedEvent event,
      CheckpointFiles files,
      Checkpoint checkpoint,
      String provider,
      String wantedFormat,
      boolean migrate) {
    if (wantedFormat == null
        || wantedFormat.isBlank()
        || !StateLayout.ROCKSDB_PROVIDER.equals(provider)
        || checkpoint.lastCommittedBatch() < 0) {
      return null; // Spark supports format v2 on RocksDB only; the HDFS-backed store ignores it
    }
    int wanted;
    try {
      wanted = Integer.parseInt(wantedFormat.trim());
    } catch (NumberFormatException e) {
      return null; // Spark reports its own setting's bad value
    }
    int current = checkpoint.checkpointIds(checkpoint.lastCommittedBatch()) != null ? 2 : 1;
    if (wanted == current || (wanted != 1 && wanted != 2)) {
      return null;
    }
    if (!migrate) {
      throw new StateShiftException(
          Reason.UNSUPPORTED_CHECKPOINT,
          "Query "
              + event.id()
              + " starts on checkpoint "
              + files.root()
              + ", whose state is in state checkpoint format v"
              + current
              + ", but its session sets "
              + StateCheckpointIds.FORMAT_VERSION_CONF
              + "="
              + wanted
              + ": Spark cannot switch the format at a restart (its first batch would fail). "
              + "Stop the query and run 'stateshift migrate --checkpoint "
              + files.root()
              + " --format-version "
              + wanted
              + "', or set "
              + StateShiftConf.MIGRATE_ENABLED.key()
              + "=true (with StateShiftExtensions) to convert when the query starts, or start "
              + "it with "
              + StateCheckpointIds.FORMAT_VERSION_CONF
              + "="
              + current
              + ". The checkpoint was not changed.");
    }
    return wanted;
  }

  /** Without {@code spark.stateshift.migrate.enabled}: {@link #formatChange} refuses a mismatch. */
  private static void refuseFormatMismatch(
      QueryStartedEvent event, CheckpointFiles files, String wantedProvider, String wantedFormat) {
    Checkpoint checkpoint;
    try {
      if (!files.exists(files.path("offsets"))) {
        return;
      }
      checkpoint = Checkpoint.load(files);
      if (checkpoint.lastPlannedBatch() < 0 || checkpoint.operators().isEmpty()) {
        return;
      }
    } catch (RuntimeException e) {
      LOG.debug("Could not read the state checkpoint format of {}", files.root(), e);
      return; // left to Spark
    }
    formatChange(
        event,
        files,
        checkpoint,
        checkpoint.offsets(checkpoint.lastPlannedBatch()).providerClass(),
        wantedFormat,
        false);
  }

  /**
   * The provider class to migrate to, when the session names another one than the checkpoint's
   * offset log and migrating is enabled; null otherwise, with a warning when they differ.
   */
  private static String providerChange(
      QueryStartedEvent event,
      CheckpointFiles files,
      String checkpointProvider,
      String wantedProvider,
      boolean migrate) {
    if (wantedProvider == null
        || wantedProvider.isBlank()
        || checkpointProvider == null
        || wantedProvider.trim().equals(checkpointProvider)) {
      return null;
    }
    if (!migrate) {
      LOG.warn(mismatch(event, files, checkpointProvider, wantedProvider));
      return null;
    }
    String target = ProviderMigration.resolve(wantedProvider);
    return target.equals(checkpointProvider) ? null : target;
  }

  /**
   * Without {@code spark.stateshift.migrate.enabled}: reports a session provider that differs from
   * the checkpoint's, which Spark silently replaces. Never stops the query: a checkpoint that
   * cannot be read here is left to Spark.
   */
  private static void warnOfProviderMismatch(
      QueryStartedEvent event, CheckpointFiles files, String wantedProvider) {
    try {
      if (!files.exists(files.path("offsets"))) {
        return;
      }
      Checkpoint checkpoint = Checkpoint.load(files);
      if (checkpoint.lastPlannedBatch() < 0 || checkpoint.operators().isEmpty()) {
        return;
      }
      providerChange(
          event,
          files,
          checkpoint.offsets(checkpoint.lastPlannedBatch()).providerClass(),
          wantedProvider,
          false);
    } catch (RuntimeException e) {
      LOG.debug("Could not compare the state store providers of {}", files.root(), e);
    }
  }

  private static String mismatch(
      QueryStartedEvent event,
      CheckpointFiles files,
      String checkpointProvider,
      String wantedProvider) {
    boolean known =
        wantedProvider.trim().equals(StateLayout.ROCKSDB_PROVIDER)
            || wantedProvider.trim().equals(StateLayout.HDFS_PROVIDER);
    String fix =
        known
            ? "To move the state, stop the query and run 'stateshift migrate --checkpoint "
                + files.root()
                + " --provider "
                + ProviderMigration.optionName(wantedProvider.trim())
                + "', or set "
                + StateShiftConf.MIGRATE_ENABLED.key()
                + "=true (with StateShiftExtensions) to migrate when the query starts."
            : "stateshift migrates between "
                + StateLayout.HDFS_PROVIDER
                + " and "
                + StateLayout.ROCKSDB_PROVIDER
                + " only.";
    return "Query "
        + event.id()
        + " starts on checkpoint "
        + files.root()
        + ", whose state is in the "
        + ProviderMigration.shortName(checkpointProvider)
        + " state store ("
        + checkpointProvider
        + "), but its session sets "
        + OffsetLogEntry.PROVIDER_CLASS
        + "="
        + wantedProvider
        + ": Spark keeps the checkpoint's provider. "
        + fix;
  }

  private void change(
      QueryStartedEvent event,
      CheckpointFiles files,
      Change change,
      long afterBatch,
      Optional<String> sinkLog) {
    RepartitionRunner runner =
        new RepartitionRunner(
                session,
                files.root().toString(),
                change.partitions(),
                message -> LOG.info("stateshift: {}", message),
                event.id())
            .fileSink(sinkLog.orElse(null));
    if (change.provider() != null) {
      runner.migrateTo(change.provider());
    }
    if (change.formatVersion() != null) {
      runner.migrateToFormat(change.formatVersion());
    }
    if (change.migrates() && !change.repartition()) {
      runner.keepPartitionCount();
    }
    RepartitionResult result = runner.execute();
    LAST_BY_QUERY.put(event.id(), result);
    long replay = result.path().prepared() ? result.phaseMillis().getOrDefault("stage", 0L) : -1;
    unreported.put(event.runId(), new Unreported(result.totalMillis(), replay, afterBatch));
    LOG.info(
        "State {} of query {} completed in {} ms: {}",
        change.migrates() ? "migration" : "repartition",
        event.id(),
        result.totalMillis(),
        result);
  }

  /**
   * The pending batch must complete with the layout it was planned with before the state can move:
   * the query's trigger executor is wrapped so that it runs that batch, then the repartition, then
   * continues as the query would after a restart.
   */
  private void runPendingBatchFirst(
      StreamExecution execution,
      QueryStartedEvent event,
      CheckpointFiles files,
      Change change,
      StateLayout layout,
      long pendingBatch,
      Optional<String> sinkLog) {
    if (!(execution instanceof MicroBatchExecution microBatch)) {
      throw new StateShiftException(
          Reason.UNSUPPORTED_CHECKPOINT,
          "Query "
              + event.id()
              + " does not run in micro-batches; on-demand repartitioning "
              + "needs a micro-batch query.");
    }
    LOG.info(
        "Batch {} was planned but not committed: it runs first with the old layout.", pendingBatch);
    logicalPlan(microBatch); // creates the trigger executor, so it can be wrapped
    QueryCalls.runPendingBatchFirst(
        microBatch,
        () -> {
          change(event, files, change, pendingBatch, sinkLog);
          if (change.formatVersion() != null) {
            QueryCalls.session(execution)
                .conf()
                .set(
                    StateCheckpointIds.FORMAT_VERSION_CONF,
                    Integer.toString(change.formatVersion()));
          }
          if (change.migrates()) {
            // The pending batch loaded the old provider's (or format's) stores under this
            // run's id.
            StaleProviders.close(session, files.root().toString(), layout, event.runId());
          }
        });
  }

  /**
   * Puts the query's file sink on record, so that offline repartitions find its log, and gives that
   * log the entries of earlier repartition batches it lacks (left by a repartition that did not
   * know the sink, or by Spark's built-in runner) before the sink writes again.
   */
  private Optional<String> recordAndRepairFileSink(
      StreamExecution execution, CheckpointFiles files) {
    Optional<String> location = FileSinkLog.ofQuery(execution);
    if (location.isEmpty()) {
      return location;
    }
    FileSinkLog log = FileSinkLog.at(QueryCalls.session(execution), location.get(), files.conf());
    FileSinkRecord.write(files, log.location());
    if (files.exists(files.path("commits"))) {
      Checkpoint checkpoint = Checkpoint.load(files);
      if (checkpoint.lastCommittedBatch() >= 0) {
        for (SinkLogGaps.Gap gap : SinkLogGaps.find(checkpoint, log)) {
          if (gap.fillable()) {
            log.addEmpty(gap.batchId());
            LOG.warn(
                "File sink log {}: added the missing entry of repartition batch {}.",
                log.location(),
                gap.batchId());
          } else {
            LOG.warn("File sink log {}: {}", log.location(), gap.explanation());
          }
        }
      }
    }
    return Optional.of(log.location());
  }

  @Override
  public void onQueryProgress(QueryProgressEvent event) {
    Unreported pending = unreported.get(event.progress().runId());
    if (pending != null && event.progress().batchId() > pending.afterBatch()) {
      unreported.remove(event.progress().runId());
      // This listener is attached before any the user adds, so it runs first: every listener,
      // lastProgress and recentProgress see the same, completed progress object.
      event.progress().durationMs().put(PROGRESS_KEY, pending.millis());
      if (pending.preparedReplayMillis() >= 0) {
        event
            .progress()
            .durationMs()
            .put(StateShiftExtensions.PROGRESS_PREPARED_KEY, pending.preparedReplayMillis());
      }
    }
  }

  @Override
  public void onQueryIdle(QueryIdleEvent event) {}

  @Override
  public void onQueryTerminated(QueryTerminatedEvent event) {
    unreported.remove(event.runId());
    QueryLease.release(event.runId());
  }

  /**
   * The query's logical plan. The query builds it right after this event anyway (creating its
   * sources and its trigger executor); building it now lets both be inspected first.
   */
  private static org.apache.spark.sql.catalyst.plans.logical.LogicalPlan logicalPlan(
      StreamExecution execution) {
    return QueryCalls.session(execution)
        .withActive(
            (scala.Function0<org.apache.spark.sql.catalyst.plans.logical.LogicalPlan>)
                execution::logicalPlan);
  }

  private StreamExecution execution(UUID queryId) {
    StreamingQuery query = session.streams().get(queryId);
    return query instanceof StreamingQueryWrapper wrapper ? wrapper.streamingQuery() : null;
  }

  private static int parse(String value) {
    try {
      int n = Integer.parseInt(value.trim());
      if (n > 0) {
        return n;
      }
    } catch (NumberFormatException ignored) {
      // reported below
    }
    throw new StateShiftException(
        Reason.INVALID_PARTITION_COUNT,
        STATE_PARTITIONS
            + "="
            + value
            + " is not a partition count; set it to a whole number of "
            + "at least 1.");
  }

  /**
   * Carries a refusal out of the listener. Spark's listener bus logs and swallows ordinary
   * exceptions; an Error passes through, and the query then terminates with it as the cause of its
   * StreamingQueryException, before it has read or written anything.
   */
  public static final class QueryStartRefused extends LinkageError {
    QueryStartRefused(StateShiftException cause) {
      super("Query refused to start: " + cause.getMessage(), cause);
    }
  }
}
