package io.stateshift.protocol;

import io.stateshift.RepartitionPlan;
import io.stateshift.RepartitionResult;
import io.stateshift.StateShiftException;
import io.stateshift.StateShiftException.Reason;
import io.stateshift.checkpoint.Checkpoint;
import io.stateshift.checkpoint.CheckpointFiles;
import io.stateshift.checkpoint.OffsetLogEntry;
import io.stateshift.checkpoint.PlacementCheck;
import io.stateshift.checkpoint.PreparedManifest;
import io.stateshift.checkpoint.SessionSettings;
import io.stateshift.checkpoint.StateCheckpointIds;
import io.stateshift.checkpoint.StateLayout;
import io.stateshift.checkpoint.StatefulOperator;
import io.stateshift.checkpoint.StoreSpec;
import io.stateshift.checkpoint.spi.Redistribution;
import io.stateshift.checkpoint.spi.SinkLog;
import io.stateshift.checkpoint.spi.SparkLines;
import io.stateshift.config.StateShiftConf;
import io.stateshift.estimate.CostEstimate;
import io.stateshift.estimate.CostModel;
import io.stateshift.estimate.TaskSlots;
import java.io.FileNotFoundException;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.UUID;
import java.util.function.Consumer;
import org.apache.hadoop.fs.ChecksumException;
import org.apache.hadoop.fs.Path;
import org.apache.spark.sql.SparkSession;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Carries out a repartition with a protocol that never leaves a checkpoint Spark cannot start:
 *
 * <ol>
 *   <li>validate everything, read-only;
 *   <li>take the checkpoint lock and write the journal (phase STAGING);
 *   <li>write the new state into {@code _stateshift/attempts/<id>/staged}, beside the checkpoint;
 *   <li>journal phase SWITCHING, then: offsets/N+1 with the new count, move the staged files into
 *       {@code state/} (new file names only, nothing is overwritten), operator metadata v2 for N+1,
 *       and commits/N+1, the step that makes the new layout the one Spark starts from;
 *   <li>journal phase FINALIZING: operator metadata v1, folders of dropped partitions moved to the
 *       attempt's {@code retired} folder, a history record, the journal removed.
 * </ol>
 *
 * An interrupted attempt is undone if it stopped while STAGING and finished otherwise. See
 * docs/protocol.md.
 */
public final class RepartitionRunner {
  /** Whether a repartition ran in this JVM: the first pays for loading its code (cold start). */
  private static final java.util.concurrent.atomic.AtomicBoolean EXECUTED =
      new java.util.concurrent.atomic.AtomicBoolean();

  private static final Logger LOG = LoggerFactory.getLogger(RepartitionRunner.class);
  private final SparkSession spark;
  private final CheckpointFiles files;

  /** The partition count to end with; for a migration that keeps it, set by {@link #validate}. */
  private int target;

  private final Consumer<String> progress;

  /** Phases SWITCHING and FINALIZING: the new layout into place, then the old one aside. */
  private final LayoutSwitch layoutSwitch;

  /**
   * For a migration: the provider class to write the state for, set by {@link #validate} from the
   * one asked for or, where none was, the checkpoint's; null for a repartition.
   */
  private String targetProvider;

  /** For a migration: the state checkpoint format to write, set by {@link #validate}; else 0. */
  private int targetFormat;

  /** Whether this run is a migration, and what it asks for (null: keep the checkpoint's). */
  private boolean migration;

  private String requestedProvider;
  private Integer requestedFormat;

  /** For a migration without a partition change: the count is the checkpoint's. */
  private boolean keepPartitions;

  /** For an edit: what it deletes, and the operator {@link #validate} resolved it to; else null. */
  private StateEdit edit;

  private long editOperator = -1;

  /** After an edit's staging job: the entries it left out, per store partition. */
  private List<Redistribution.PartitionCount> deleted = List.of();

  /** After a set's staging job: the entries it rewrote; -1 for other changes. */
  private long rewritten = -1;

  /** After an upsert's staging job: the entries it added, per store. */
  private List<Redistribution.PartitionCount> added = List.of();

  private final UUID startingQuery;
  private String backupTo;
  private boolean assumeStopped;
  private final List<String> fileSinks = new ArrayList<>();

  /**
   * The output folder of the query's file sink, whose log gets an empty entry for the repartition's
   * batch (without it the sink's next compaction and every read of its output fail). A sink the
   * checkpoint has on record (written by a query started with StateShiftExtensions) is included
   * without this.
   */
  public RepartitionRunner fileSink(String outputLocation) {
    if (outputLocation != null && !outputLocation.isBlank()) {
      fileSinks.add(outputLocation);
    }
    return this;
  }

  /** The write path the staging job took, for the history record. */
  private String writePath;

  /** Whether the staging job started from a prepared layout, and why not where one was not used. */
  private RepartitionResult.StatePath statePath = RepartitionResult.StatePath.FULL;

  /** The attempt under way, once its journal is written, for a failure's history record. */
  private RepartitionJournal attempt;

  /**
   * Skips the guess that a query without StateShiftExtensions may still be running (its logs were
   * written recently); for a user who knows the query is stopped. A held query lease still refuses.
   */
  public RepartitionRunner assumeStopped(boolean stopped) {
    this.assumeStopped = stopped;
    return this;
  }

  /**
   * Makes this run a migration: the state is read with the checkpoint's provider and written for
   * {@code providerClass}, whose name the new batch's offset log entry records.
   */
  public RepartitionRunner migrateTo(String providerClass) {
    this.migration = true;
    this.requestedProvider = providerClass;
    return this;
  }

  /**
   * Makes this run a migration to state checkpoint format {@code version} (1 or 2): the state is
   * read in the checkpoint's format and written in this one, and commits/N+1 names the new
   * versions' unique ids under format 2 and none under format 1.
   */
  public RepartitionRunner migrateToFormat(int version) {
    this.migration = true;
    this.requestedFormat = version;
    return this;
  }

  /**
   * Makes this run an edit: the entries of one operator for which a SQL predicate over {@code
   * partition_id}, {@code key} and {@code value} is true are deleted from its state, under the same
   * protocol as a repartition. With {@link #keepPartitionCount()} the count is kept.
   */
  public RepartitionRunner edit(StateEdit change) {
    this.edit = change;
    return this;
  }

  /** For an edit, after {@link #plan()} or {@link #execute()}: the operator it applies to. */
  public long editedOperator() {
    return editOperator;
  }

  /** For a migration: keep the checkpoint's partition count (the count given is ignored). */
  public RepartitionRunner keepPartitionCount() {
    this.keepPartitions = true;
    return this;
  }

  /** Keeps the partition folders a decrease drops under this location instead of the checkpoint. */
  public RepartitionRunner backupTo(String location) {
    this.backupTo =
        location == null ? null : files.fs().makeQualified(new Path(location)).toString();
    return this;
  }

  public RepartitionRunner(
      SparkSession spark, String checkpointLocation, int target, Consumer<String> progress) {
    this(spark, checkpointLocation, target, progress, null);
  }

  /**
   * A runner for the query that is starting on this checkpoint (the on-demand path): that query is
   * waiting for the repartition, so it does not count as running on the checkpoint.
   */
  public RepartitionRunner(
      SparkSession spark,
      String checkpointLocation,
      int target,
      Consumer<String> progress,
      UUID startingQuery) {
    this.startingQuery = startingQuery;
    this.spark = spark;
    this.files = CheckpointFiles.at(checkpointLocation, SessionSettings.hadoopConf(spark));
    this.target = target;
    this.progress = progress;
    this.layoutSwitch = new LayoutSwitch(spark, files, progress);
  }

  public RepartitionPlan plan() {
    Checkpoint checkpoint = Checkpoint.load(files);
    Optional<RepartitionJournal> pending = RepartitionJournal.read(files);
    if (pending.isPresent()) {
      RepartitionJournal j = pending.get();
      return new RepartitionPlan(
          files.root().toString(),
          checkpoint.queryId(),
          "(interrupted)",
          j.fromPartitions(),
          target,
          j.baseBatch(),
          j.newBatch(),
          List.of(),
          Optional.of(
              j.attemptId()
                  + " ("
                  + j.phase()
                  + ", "
                  + j.fromPartitions()
                  + " -> "
                  + j.toPartitions()
                  + ")"));
    }
    return planOf(validate(checkpoint), Optional.empty());
  }

  public RepartitionResult execute() {
    long requestsBefore = StoreRequests.count(files.fs());
    RepartitionResult result = executeCounted();
    long requestsAfter = StoreRequests.count(files.fs());
    return requestsBefore < 0 || requestsAfter < 0
        ? result
        : result.withStoreRequests(requestsAfter - requestsBefore);
  }

  @SuppressWarnings("try") // the lock is held for its try block, which never reads it
  private RepartitionResult executeCounted() {
    long started = System.currentTimeMillis();
    EXECUTED.set(true);
    Map<String, Long> phases = new LinkedHashMap<>();
    Checkpoint checkpoint = Checkpoint.load(files);
    Optional<RepartitionJournal> pending = RepartitionJournal.read(files);
    if (pending.isEmpty()) {
      validate(checkpoint); // refuse bad input before the first write, the lock included
    }
    try (CheckpointLock lock = CheckpointLock.acquire(files, action(), lockAnyway(), progress)) {
      refuseIfQueryRunning();
      Optional<String> recovered = Optional.empty();
      if (pending.isPresent()) {
        recovered = Optional.of(recover(pending.get()));
        checkpoint = Checkpoint.load(files);
        if (edit != null
            && pending.get().phase() != RepartitionJournal.Phase.STAGING
            && edit.options().equals(pending.get().edit())) {
          // the same edit, interrupted after its switch began and finished just now: done
          progress.accept("The interrupted edit was finished; nothing more to do.");
          return nothingMore(
              checkpoint,
              pending.get().fromPartitions(),
              pending.get().toPartitions(),
              recovered,
              phases,
              started);
        }
      }
      StateLayout layout;
      try {
        layout = validate(checkpoint);
      } catch (StateShiftException e) {
        if (recovered.isPresent()
            && (e.reason() == Reason.SAME_PARTITION_COUNT
                || (e.reason() == Reason.SAME_PROVIDER && reachedTarget(checkpoint)))) {
          progress.accept("The interrupted attempt already reached " + target + " partitions.");
          return nothingMore(checkpoint, target, target, recovered, phases, started);
        }
        throw e;
      }
      RepartitionPlan plan = planOf(layout, recovered);
      phases.put("validate", System.currentTimeMillis() - started);

      try {
        return writeNewLayout(checkpoint, layout, plan, phases, started);
      } catch (RuntimeException e) {
        StateShiftException failure = interrupted(e);
        if (!failure.reason().isBadInput() && attemptLeftBehind()) {
          // A refusal, or a failure undone before the switch, leaves the checkpoint as it was,
          // its history included ("the checkpoint was not changed" stays true); a failure that
          // left an attempt for the next run to finish is worth a record.
          RepartitionJournal j = attempt;
          HistoryLog.failed(
              files,
              edit != null
                  ? io.stateshift.HistoryEntry.Kind.EDIT
                  : io.stateshift.HistoryEntry.Kind.REPARTITION,
              j != null ? j.attemptId() : java.util.UUID.randomUUID().toString(),
              layout.partitions(),
              target,
              layout.lastCommitted() + 1,
              j != null ? j.startedAtMs() : started,
              writePath,
              HistoryLog.Actor.of(spark),
              failure);
        }
        throw failure;
      }
    }
  }

  /**
   * The result of a run that finished an interrupted attempt which had already done what this run
   * asks: no store moved, the batch the last committed one.
   */
  private RepartitionResult nothingMore(
      Checkpoint checkpoint,
      int from,
      int to,
      Optional<String> recovered,
      Map<String, Long> phases,
      long started) {
    RepartitionPlan plan =
        new RepartitionPlan(
            files.root().toString(),
            checkpoint.queryId(),
            "",
            from,
            to,
            checkpoint.lastCommittedBatch(),
            checkpoint.lastCommittedBatch(),
            List.of(),
            recovered);
    return new RepartitionResult(
        plan,
        List.of(),
        phases,
        checkpoint.lastCommittedBatch(),
        System.currentTimeMillis() - started);
  }

  /** What this run does, for the lock's holder record and the job's description. */
  private String action() {
    if (edit != null) {
      return "edit operator state (" + edit.options() + ")";
    }
    if (!migration) {
      return "repartition to " + target;
    }
    List<String> to = new ArrayList<>();
    if (requestedProvider != null) {
      to.add(ProviderMigration.shortName(requestedProvider));
    }
    if (requestedFormat != null) {
      to.add("checkpoint format v" + requestedFormat);
    }
    if (!keepPartitions) {
      to.add(target + " partitions");
    }
    return "migrate to " + String.join(", ", to);
  }

  /** Whether a failed attempt left its journal for the next run (it had begun the switch). */
  private boolean attemptLeftBehind() {
    try {
      return RepartitionJournal.read(files).isPresent();
    } catch (RuntimeException unreadable) {
      return true;
    }
  }

  /** Steps 3 to 6 of docs/protocol.md: journal, stage, switch, finalize. */
  private RepartitionResult writeNewLayout(
      Checkpoint checkpoint,
      StateLayout layout,
      RepartitionPlan plan,
      Map<String, Long> phases,
      long started) {
    long phaseStart = System.currentTimeMillis();
    FailPoints.reached("locked");
    RepartitionJournal journal =
        RepartitionJournal.start(
            layout.partitions(),
            target,
            layout.lastCommitted(),
            backupTo,
            sinkLogs(layout.lastCommitted()).stream().map(SinkLog::location).toList());
    if (targetProvider != null) {
      journal =
          journal
              .withProviders(layout.provider(), targetProvider)
              .withFormatVersions(layout.checkpointFormatVersion(), targetFormat);
    }
    if (edit != null) {
      journal = journal.withEdit(edit.options());
    }
    journal.save(files);
    attempt = journal;
    FailPoints.reached("journal-staging");
    Redistribution.Outcome outcome;
    String newCommit;
    try {
      outcome = stage(layout, journal);
      newCommit = newCommitText(layout, outcome);
    } catch (Exception e) { // Spark's job failures arrive as checked SparkExceptions too
      undo(journal);
      throw classifyFailure(e);
    }
    FailPoints.reached("staged");
    List<RepartitionResult.StoreMove> moves = summarize(layout, outcome, deleted, added, ".");
    Map<String, Long> rowsBefore = new LinkedHashMap<>();
    if (!statePath.prepared()) {
      // from a prepared layout the rows are the prepared batch's: Spark counts the tail's on load;
      // after an edit, verify expects what the edit kept
      moves.forEach(
          m ->
              rowsBefore.put(
                  m.operatorId() + "/" + m.storeName(),
                  edit != null ? m.rowsWritten() : m.rowsRead()));
    }
    phases.put("stage", System.currentTimeMillis() - phaseStart);

    phaseStart = System.currentTimeMillis();
    List<String> newFiles = layoutSwitch.stagedFiles(journal);
    journal =
        journal
            .withSwitchRecord(
                rowsBefore,
                newFiles,
                layoutSwitch.v1Metadata(checkpoint),
                newCommit,
                statePath.prepared()
                    ? layoutSwitch.replacedFiles(newFiles, journal.baseBatch() + 1)
                    : edit != null && edit.evolves()
                        ? layoutSwitch.replacedSchemaFiles(newFiles)
                        : List.of())
            .withPhase(RepartitionJournal.Phase.SWITCHING);
    journal.save(files);
    FailPoints.reached("journal-switching");
    layoutSwitch.switchLayout(checkpoint, journal);
    phases.put("switch", System.currentTimeMillis() - phaseStart);

    phaseStart = System.currentTimeMillis();
    journal = journal.withPhase(RepartitionJournal.Phase.FINALIZING);
    journal.save(files);
    FailPoints.reached("journal-finalizing");
    layoutSwitch.finalizeLayout(
        Checkpoint.load(files),
        journal,
        new HistoryLog.Details(
            started,
            moves.stream().mapToLong(RepartitionResult.StoreMove::rowsWritten).sum(),
            moves.stream().mapToLong(RepartitionResult.StoreMove::bytesWritten).sum(),
            writePath,
            HistoryLog.Actor.of(spark),
            edit != null ? edit.describe(editOperator, moves, rewritten) : null));
    phases.put("finalize", System.currentTimeMillis() - phaseStart);
    return new RepartitionResult(
            plan, moves, phases, journal.newBatch(), System.currentTimeMillis() - started)
        .withPath(statePath);
  }

  /**
   * An I/O error (or any other) after the lock was taken, as a clear error that says where the
   * checkpoint stands, read from the journal, and how to go on.
   */
  private StateShiftException interrupted(RuntimeException e) {
    if (e instanceof StateShiftException sse) {
      return sse;
    }
    Optional<RepartitionJournal> journal;
    try {
      journal = RepartitionJournal.read(files);
    } catch (RuntimeException unreadable) {
      journal = Optional.empty();
    }
    String where =
        journal.isEmpty()
            ? "The checkpoint was not changed."
            : journal.get().phase() == RepartitionJournal.Phase.STAGING
                ? "The checkpoint still starts with "
                    + journal.get().fromPartitions()
                    + " partitions; running the same command again ("
                    + journal.get().finishingCommand(files.root().toString())
                    + ", or starting the query with StateShiftExtensions) removes the unfinished "
                    + "attempt first."
                : "The switch to "
                    + journal.get().toPartitions()
                    + " partitions had begun (phase "
                    + journal.get().phase()
                    + "); run "
                    + journal.get().finishingCommand(files.root().toString())
                    + ", or start the query with StateShiftExtensions, to finish it.";
    return new StateShiftException(
        Reason.FAILED,
        "Repartitioning " + files.root() + " failed: " + e.getMessage() + ". " + where,
        e);
  }

  /**
   * Finishes or undoes an interrupted attempt, if there is one, and does nothing else. Returns what
   * was done.
   */
  @SuppressWarnings("try") // the lock is held for its try block, which never reads it
  public Optional<String> recoverInterrupted() {
    Optional<RepartitionJournal> pending = RepartitionJournal.read(files);
    if (pending.isEmpty()) {
      return Optional.empty();
    }
    try (CheckpointLock lock =
        CheckpointLock.acquire(files, "recover an interrupted attempt", lockAnyway(), progress)) {
      refuseIfQueryRunning();
      return Optional.of(recover(pending.get()));
    }
  }

  /** For a migration finished by recovery: whether the checkpoint now has the target count. */
  private boolean reachedTarget(Checkpoint checkpoint) {
    if (keepPartitions) {
      target = checkpoint.offsets(checkpoint.lastCommittedBatch()).shufflePartitions();
      return true;
    }
    return checkpoint.offsets(checkpoint.lastCommittedBatch()).shufflePartitions() == target;
  }

  // ---- validation (read-only) ----

  private StateLayout validate(Checkpoint checkpoint) {
    if (!keepPartitions && target <= 0) {
      throw new StateShiftException(
          Reason.INVALID_PARTITION_COUNT,
          "The partition count must be at least 1, got " + target + ".");
    }
    StateLayout layout = StateLayout.read(spark, checkpoint, true);
    if (keepPartitions) {
      target = layout.partitions();
    }
    if (migration) {
      targetProvider = requestedProvider != null ? requestedProvider : layout.provider();
      // the HDFS-backed store has format v1 only: a migration to it from RocksDB v2 converts
      targetFormat =
          requestedFormat != null
              ? requestedFormat
              : targetProvider.equals(StateLayout.HDFS_PROVIDER)
                  ? 1
                  : layout.checkpointFormatVersion();
      ProviderMigration.check(layout, targetProvider, targetFormat, files.root().toString());
    } else if (edit != null) {
      editOperator = StateEditCheck.operator(spark, files, layout, edit);
    } else if (layout.partitions() == target) {
      throw new StateShiftException(
          Reason.SAME_PARTITION_COUNT,
          "The state of "
              + files.root()
              + " already has "
              + target
              + " partitions. Nothing to do.");
    }
    sinkLogs(layout.lastCommitted());
    return layout;
  }

  /**
   * The logs of the file sinks given and on record, each checked to end where the checkpoint does:
   * a log with entries past the last committed batch belongs to another query's run.
   */
  private List<SinkLog> sinkLogs(long lastCommitted) {
    List<SinkLog> logs = SinkLogGaps.logs(spark, files, fileSinks);
    for (SinkLog log : logs) {
      long newBatch = lastCommitted + 1;
      long latest = log.latestBatch().orElse(-1L);
      if (latest > newBatch || (latest == newBatch && log.filesIn(newBatch) != 0)) {
        throw new StateShiftException(
            Reason.INVALID_ARGUMENT,
            "The file sink log "
                + log.location()
                + " has entries up to batch "
                + latest
                + ", but the last batch "
                + "committed in "
                + files.root()
                + " is "
                + lastCommitted
                + ": that output was "
                + "written by another run or query. Pass the output folder of this checkpoint's "
                + "query.");
      }
    }
    return logs;
  }

  private RepartitionPlan planOf(StateLayout layout, Optional<String> interrupted) {
    List<RepartitionPlan.OperatorInfo> ops =
        layout.operators().stream()
            .map(
                op ->
                    new RepartitionPlan.OperatorInfo(
                        op.id(),
                        op.name(),
                        op.stores().stream().map(StatefulOperator.Store::name).toList()))
            .toList();
    return new RepartitionPlan(
        files.root().toString(),
        layout.checkpoint().queryId(),
        layout.provider(),
        layout.partitions(),
        target,
        layout.lastCommitted(),
        layout.lastCommitted() + 1,
        ops,
        interrupted,
        targetProvider != null ? targetProvider : layout.provider(),
        layout.checkpointFormatVersion(),
        targetProvider != null ? targetFormat : layout.checkpointFormatVersion(),
        layout.size().bytes(),
        layout.size().files(),
        Optional.of(estimate(layout)));
  }

  /** What the cost model expects this run to take on the session's task slots. */
  private CostEstimate estimate(StateLayout layout) {
    String writeProvider = targetProvider != null ? targetProvider : layout.provider();
    CostModel.Job job =
        new CostModel.Job(
            layout.partitions(),
            target,
            Math.max(1, layout.stores().size()),
            layout.size().bytes(),
            layout.size().files(),
            layout.rocksDb(),
            writeProvider.equals(StateLayout.ROCKSDB_PROVIDER),
            CostModel.Storage.of(files.root().toString()),
            layout.size().replayBytes());
    return CostModel.standard().estimate(job, TaskSlots.of(spark), !EXECUTED.get());
  }

  /** Runs with the lock held: a query starting from now on sees the lock and is refused. */
  /**
   * Whether to proceed on a store that cannot lock exclusively: on the user's --assume-stopped, and
   * when a query starting with StateShiftExtensions repartitions its own checkpoint (the user
   * started it; a warning says that the lock is not exclusive there).
   */
  private boolean lockAnyway() {
    return assumeStopped || startingQuery != null;
  }

  private void refuseIfQueryRunning() {
    SparkLines.get()
        .refuseIfRunning(spark, files, startingQuery, assumeStopped, "repartition its state");
  }

  // ---- phase STAGING ----

  private Redistribution.Outcome stage(StateLayout layout, RepartitionJournal journal) {
    spark.streams(); // creates the StateStoreCoordinator the RocksDB provider reports to
    String notUsed = null;
    if (targetProvider == null && edit == null) {
      PreparedLayouts.Choice choice = PreparedLayouts.choose(files, layout, target);
      notUsed = choice.reason();
      if (choice.manifest() != null) {
        long prepared = choice.manifest().preparedBatch();
        progress.accept(
            "using the layout prepared at batch "
                + prepared
                + ": replaying batches "
                + (prepared + 1)
                + ".."
                + layout.lastCommitted());
        Redistribution replay =
            SparkLines.get()
                .preparedReplay(
                    layout, choice.manifest(), journal.stagedDir(files).toString(), target);
        try {
          Redistribution.Outcome outcome = runStagingJob(replay, layout, journal);
          statePath =
              new RepartitionResult.StatePath(
                  true, prepared, layout.lastCommitted(), replay.rowsReplayed(), null);
          progress.accept(String.format("replayed %,d changes", replay.rowsReplayed()));
          return outcome;
        } catch (Exception e) { // Spark's job failures arrive as checked SparkExceptions too
          PreparedManifest.Rejected rejected = rejection(e);
          if (rejected == null) {
            throw e;
          }
          files.deleteQuietly(journal.stagedDir(files));
          notUsed = rejected.getMessage();
        }
      }
    }
    if (notUsed != null) {
      LOG.warn("Repartitioning {}: prepared layout not used: {}", files.root(), notUsed);
      progress.accept("prepared layout not used: " + notUsed + "; moving all state");
    }
    statePath = new RepartitionResult.StatePath(false, -1, layout.lastCommitted(), 0, notUsed);
    Redistribution job =
        SparkLines.get()
            .redistribution(
                layout,
                journal.stagedDir(files).toString(),
                target,
                targetProvider != null ? targetProvider : layout.provider(),
                targetProvider != null ? targetFormat : layout.checkpointFormatVersion());
    job.checkPlacement(placementChecks(layout));
    if (edit != null) {
      EditStaging.Applied applied = EditStaging.apply(spark, edit, editOperator, layout, job);
      rewritten = applied.rewritten();
      Redistribution.Outcome outcome = runStagingJob(job, layout, journal);
      deleted = job.deleted();
      added = job.added();
      applied.writeSchemaFile(files, journal.stagedDir(files), edit);
      return outcome;
    }
    return runStagingJob(job, layout, journal);
  }

  /** The prepared layout's refusal inside a failure of its job, if that is what failed it. */
  private static PreparedManifest.Rejected rejection(Throwable e) {
    for (Throwable t = e; t != null; t = t.getCause()) {
      if (t instanceof PreparedManifest.Rejected r) {
        return r;
      }
    }
    return null;
  }

  /**
   * Runs a staging job in the attempt's job group, with progress; waits out its tasks on failure.
   */
  private Redistribution.Outcome runStagingJob(
      Redistribution job, StateLayout layout, RepartitionJournal journal) {
    String group = "stateshift-" + journal.attemptId();
    // On a query's own thread (the on-demand path) the thread's job group is the query's: keep it.
    java.util.Map<String, String> saved = new java.util.HashMap<>();
    for (String key :
        List.of("spark.jobGroup.id", "spark.job.description", "spark.job.interruptOnCancel")) {
      saved.put(key, spark.sparkContext().getLocalProperty(key));
    }
    spark.sparkContext().setJobGroup(group, "stateshift: " + action() + " " + files.root(), false);
    writePath = job.writeStrategy(spark);
    if (targetProvider != null) {
      writePath =
          "migrate "
              + ProviderMigration.optionName(layout.provider())
              + (layout.checkpointFormatVersion() != targetFormat
                  ? " v" + layout.checkpointFormatVersion()
                  : "")
              + " -> "
              + ProviderMigration.optionName(targetProvider)
              + (layout.checkpointFormatVersion() != targetFormat ? " v" + targetFormat : "")
              + ": "
              + writePath;
    }
    progress.accept("moving state: " + writePath);
    try (JobProgress tasks = new JobProgress(spark, group, progress)) {
      try {
        Redistribution.Outcome outcome = job.run(spark);
        outcome.unverifiedPlacement().stream()
            .sorted()
            .forEach(
                note -> {
                  LOG.warn("Repartitioning {}: {}", files.root(), note);
                  progress.accept(note);
                });
        return outcome;
      } catch (Exception e) { // Spark's job failures arrive as checked SparkExceptions too
        // the attempt's files are removed next: no task of the job may still be writing them
        if (!tasks.cancelAndAwaitTasks()) {
          e.addSuppressed(
              new IllegalStateException(
                  "tasks of the failed job were still " + "running when its files were removed"));
        }
        throw e;
      }
    } finally {
      saved.forEach((key, value) -> spark.sparkContext().setLocalProperty(key, value));
    }
  }

  /**
   * How each store's keys are checked against the partition the recorded schema and the old count
   * give them, while they are read (the key is hashed anyway to find its new partition). Every
   * store is checked; a checkpoint written with useStrictDistribution=false may have placed
   * aggregation, deduplication, session window, flatMapGroupsWithState and transformWithState state
   * by part of its key, so for those a misplaced key is noted and not refused, unless the partition
   * key has a single column, which has no part to place by (Spark places a join's state by its
   * whole key under either setting).
   */
  static Map<Integer, PlacementCheck.Mode> placementChecks(StateLayout layout) {
    if (!StateShiftConf.PLACEMENT_CHECK.onDriver()) {
      return Map.of(); // for measuring what the check costs (bench/README.md)
    }
    boolean strict =
        "true"
            .equals(
                layout
                    .checkpoint()
                    .offsets(layout.lastCommitted())
                    .conf()
                    .get(OffsetLogEntry.STRICT_DISTRIBUTION));
    Map<Integer, PlacementCheck.Mode> modes = new LinkedHashMap<>();
    for (StoreSpec spec : layout.stores()) {
      for (StatefulOperator op : layout.operators()) {
        if (op.id() != spec.operatorId()) {
          continue;
        }
        boolean wholeKey =
            strict
                || op.name().equals(StateLayout.JOIN)
                || (!spec.hasColumnFamilies() && SparkLines.get().partitionKeyColumns(spec) == 1);
        modes.put(
            spec.slot(),
            op.metadataVersion() == StatefulOperator.DERIVED
                ? PlacementCheck.Mode.DERIVED
                : wholeKey ? PlacementCheck.Mode.STRICT : PlacementCheck.Mode.SUBSET_ALLOWED);
      }
    }
    return modes;
  }

  /**
   * Rows and bytes moved per store; fails, the message ending with {@code afterMismatch}, when a
   * store's rows written differ from its rows read.
   */
  static List<RepartitionResult.StoreMove> summarize(
      StateLayout layout, Redistribution.Outcome outcome, String afterMismatch) {
    return summarize(layout, outcome, List.of(), List.of(), afterMismatch);
  }

  /**
   * The same for an edit: a store's rows written are its rows read, less those it deleted, plus
   * those it added.
   */
  static List<RepartitionResult.StoreMove> summarize(
      StateLayout layout,
      Redistribution.Outcome outcome,
      List<Redistribution.PartitionCount> deleted,
      List<Redistribution.PartitionCount> added,
      String afterMismatch) {
    List<RepartitionResult.StoreMove> moves = new ArrayList<>();
    for (StoreSpec spec : layout.stores()) {
      long read =
          outcome.read().stream()
              .filter(c -> c.slot() == spec.slot())
              .mapToLong(Redistribution.PartitionCount::rows)
              .sum();
      long written =
          outcome.written().stream()
              .filter(c -> c.slot() == spec.slot())
              .mapToLong(Redistribution.PartitionCount::rows)
              .sum();
      long bytes =
          outcome.written().stream()
              .filter(c -> c.slot() == spec.slot())
              .mapToLong(Redistribution.PartitionCount::bytes)
              .sum();
      long left =
          deleted.stream()
              .filter(c -> c.slot() == spec.slot())
              .mapToLong(Redistribution.PartitionCount::rows)
              .sum();
      long more =
          added.stream()
              .filter(c -> c.slot() == spec.slot())
              .mapToLong(Redistribution.PartitionCount::rows)
              .sum();
      if (read - left + more != written) {
        throw new StateShiftException(
            Reason.FAILED,
            "Operator "
                + spec.operatorId()
                + " store "
                + spec.storeName()
                + ": read "
                + read
                + " rows"
                + (left > 0 ? ", deleted " + left + "," : "")
                + (more > 0 ? ", added " + more + "," : "")
                + " but wrote "
                + written
                + afterMismatch);
      }
      moves.add(
          new RepartitionResult.StoreMove(
              spec.operatorId(), spec.operatorName(), spec.storeName(), read, written, bytes));
    }
    return moves;
  }

  /**
   * Under state checkpoint format v2, commits/N+1 must name the unique id of every new state
   * version, as Spark's own commit would; under v1 it is a copy of commits/N (null here).
   */
  private String newCommitText(StateLayout layout, Redistribution.Outcome outcome) {
    int format = targetProvider != null ? targetFormat : layout.checkpointFormatVersion();
    if (format == 1) {
      // from format v2: commits/N+1 names no ids, as Spark's own v1 commits
      return layout.checkpointIdsEnabled()
          ? StateCheckpointIds.commitWithoutIds(
              layout.checkpoint().commitText(layout.lastCommitted()))
          : null;
    }
    Map<Long, Map<String, String[]>> ids = new LinkedHashMap<>();
    for (StoreSpec spec : layout.stores()) {
      String[] perPartition = new String[target];
      for (Redistribution.PartitionCount written : outcome.written()) {
        if (written.slot() == spec.slot()) {
          perPartition[written.partition()] = written.checkpointId();
        }
      }
      for (int p = 0; p < target; p++) {
        if (perPartition[p] == null) {
          throw new StateShiftException(
              Reason.FAILED,
              "Operator "
                  + spec.operatorId()
                  + " store "
                  + spec.storeName()
                  + " partition "
                  + p
                  + " was written without a state checkpoint "
                  + "id; the checkpoint was not changed.");
        }
      }
      ids.computeIfAbsent(spec.operatorId(), k -> new LinkedHashMap<>())
          .put(spec.storeName(), perPartition);
    }
    return StateCheckpointIds.commitWithIds(
        layout.checkpoint().commitText(layout.lastCommitted()), ids);
  }

  private void undo(RepartitionJournal journal) {
    files.deleteQuietly(RepartitionJournal.attemptDir(files, journal.attemptId()));
    LayoutSwitch.deleteIfEmpty(files, files.path(RepartitionJournal.DIR + "/attempts"));
    RepartitionJournal.delete(files);
  }

  private StateShiftException classifyFailure(Exception e) {
    for (Throwable t = e; t != null; t = t.getCause()) {
      if (t instanceof StateShiftException sse) {
        return sse; // a refusal raised inside a task
      }
    }
    for (Throwable t = e; t != null; t = t.getCause()) {
      // Damage found where the job could not name the file (Spark's own reads of a state file):
      // the decoders' errors, as a task failure reports them.
      String message = String.valueOf(t.getMessage());
      if (t.getClass().getName().startsWith("net.jpountz.lz4.")
          || t instanceof ChecksumException
          || message.contains("LZ4Exception")
          || message.contains("Stream is corrupted")
          || message.contains("ChecksumException")
          || message.contains("Corruption: ")) {
        return new StateShiftException(
            Reason.CORRUPT_CHECKPOINT,
            "A state file of checkpoint "
                + files.root()
                + " is damaged: "
                + t.getMessage()
                + ". The checkpoint was not changed. Restore it from a backup.",
            e);
      }
    }
    for (Throwable t = e; t != null; t = t.getCause()) {
      if (t instanceof FileNotFoundException
          || (t.getMessage() != null
              && (t.getMessage().contains("does not exist")
                  || t.getMessage().contains("CANNOT_LOAD_STATE_STORE")))) {
        return new StateShiftException(
            Reason.CORRUPT_CHECKPOINT,
            "A state file of checkpoint "
                + files.root()
                + " is missing or unreadable: "
                + t.getMessage()
                + ". The checkpoint was not changed. Restore it from a backup.",
            e);
      }
    }
    return new StateShiftException(
        Reason.FAILED,
        "Repartitioning "
            + files.root()
            + " failed while writing the new state; the checkpoint "
            + "was not changed. Cause: "
            + e.getMessage(),
        e);
  }

  /** Finishes or undoes an interrupted attempt; returns a description of what was done. */
  private String recover(RepartitionJournal journal) {
    switch (journal.phase()) {
      case STAGING -> {
        progress.accept(
            "Undoing interrupted attempt "
                + journal.attemptId()
                + " (it stopped before changing the checkpoint).");
        undo(journal);
        return journal.attemptId() + " undone";
      }
      case SWITCHING -> {
        progress.accept(
            "Finishing interrupted attempt "
                + journal.attemptId()
                + " ("
                + journal.fromPartitions()
                + " -> "
                + journal.toPartitions()
                + ").");
        layoutSwitch.switchLayout(Checkpoint.load(files), journal);
        RepartitionJournal next = journal.withPhase(RepartitionJournal.Phase.FINALIZING);
        next.save(files);
        layoutSwitch.finalizeLayout(Checkpoint.load(files), next, null);
        return journal.attemptId() + " finished";
      }
      case ROLLING_BACK -> {
        progress.accept(
            "Finishing the interrupted rollback of attempt " + journal.attemptId() + ".");
        new Rollback(spark, files, progress, HistoryLog.Actor.of(spark), -1).finish(journal);
        return journal.attemptId() + " rolled back";
      }
      default -> {
        progress.accept("Finishing interrupted attempt " + journal.attemptId() + ".");
        layoutSwitch.finalizeLayout(Checkpoint.load(files), journal, null);
        return journal.attemptId() + " finished";
      }
    }
  }
}
