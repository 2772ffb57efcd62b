package io.stateshift.protocol;

import io.stateshift.StateShiftException;
import io.stateshift.StateShiftException.Reason;
import io.stateshift.checkpoint.Checkpoint;
import io.stateshift.checkpoint.CheckpointFiles;
import io.stateshift.checkpoint.StatefulOperator;
import io.stateshift.checkpoint.spi.SparkLines;
import java.util.Map;
import java.util.function.Consumer;
import org.apache.hadoop.fs.Path;

/**
 * Restores the layout a repartition started from, as long as no batch has run on the new one.
 * Steps, each idempotent and journaled (phase ROLLING_BACK) so a crash is finished by the next run:
 * delete commits/N+1 (from here Spark refuses to start until the rollback is finished), delete the
 * files the switch created, move dropped partitions back, restore operator metadata, delete
 * offsets/N+1 (from here the old layout starts).
 */
public final class Rollback {
  private final org.apache.spark.sql.SparkSession spark;
  private final CheckpointFiles files;
  private final Consumer<String> progress;
  private final HistoryLog.Actor actor;

  /** When this rollback started; -1 when it finishes an interrupted one. */
  private final long startedAtMs;

  Rollback(
      org.apache.spark.sql.SparkSession spark,
      CheckpointFiles files,
      Consumer<String> progress,
      HistoryLog.Actor actor,
      long startedAtMs) {
    this.spark = spark;
    this.files = files;
    this.progress = progress;
    this.actor = actor;
    this.startedAtMs = startedAtMs;
  }

  /** Rolls back the newest repartition of the checkpoint; returns what it undid. */
  @SuppressWarnings("try") // the lock is held for its try block, which never reads it
  public static RepartitionJournal run(
      org.apache.spark.sql.SparkSession spark,
      CheckpointFiles files,
      boolean assumeStopped,
      Consumer<String> progress) {
    long started = System.currentTimeMillis();
    Checkpoint checkpoint = Checkpoint.load(files);
    java.util.Optional<RepartitionJournal> pending = RepartitionJournal.read(files);
    if (pending.isPresent()) {
      throw new StateShiftException(
          Reason.INTERRUPTED_REPARTITION,
          "Checkpoint "
              + files.root()
              + " has an interrupted "
              + pending.get().kind()
              + ". Run '"
              + pending.get().finishingCommand(files.root().toString())
              + "' (or start the query with StateShiftExtensions) to finish it first.");
    }
    RepartitionJournal last =
        RepartitionHistory.latest(files)
            .orElseThrow(
                () ->
                    new StateShiftException(
                        Reason.INVALID_ARGUMENT,
                        "Checkpoint "
                            + files.root()
                            + " has no repartition recorded by stateshift, so there is nothing to roll back."));
    long planned = checkpoint.lastPlannedBatch();
    if (planned > last.newBatch()) {
      throw new StateShiftException(
          Reason.INVALID_ARGUMENT,
          "Batch "
              + planned
              + " has run on the new layout ("
              + last.toPartitions()
              + " partitions) since the repartition in batch "
              + last.newBatch()
              + "; rolling "
              + "back would lose its state. Repartition to "
              + last.fromPartitions()
              + " partitions instead: stateshift repartition --checkpoint "
              + files.root()
              + " --partitions "
              + last.fromPartitions());
    }
    if (planned != last.newBatch() || checkpoint.lastCommittedBatch() != last.newBatch()) {
      throw Checkpoint.corrupt(
          files,
          "the logs end at batch "
              + planned
              + " but the last "
              + "repartition committed batch "
              + last.newBatch());
    }
    try (CheckpointLock lock = CheckpointLock.acquire(files, "rollback", assumeStopped, progress)) {
      SparkLines.get()
          .refuseIfRunning(spark, files, null, assumeStopped, "roll back its repartition");
      RepartitionJournal journal = last.withPhase(RepartitionJournal.Phase.ROLLING_BACK);
      HistoryLog.Actor actor = HistoryLog.Actor.of(spark);
      try {
        journal.save(files);
        new Rollback(spark, files, progress, actor, started).finish(journal);
      } catch (RuntimeException e) {
        StateShiftException failure =
            e instanceof StateShiftException sse
                ? sse
                : new StateShiftException(Reason.FAILED, String.valueOf(e.getMessage()), e);
        if (!failure.reason().isBadInput()) {
          HistoryLog.failed(
              files,
              io.stateshift.HistoryEntry.Kind.ROLLBACK,
              last.attemptId(),
              last.toPartitions(),
              last.fromPartitions(),
              last.newBatch(),
              started,
              "",
              actor,
              failure);
        }
        throw e;
      }
      return last;
    }
  }

  void finish(RepartitionJournal journal) {
    progress.accept(
        "rolling back batch "
            + journal.newBatch()
            + ": "
            + journal.toPartitions()
            + " -> "
            + journal.fromPartitions()
            + " partitions");
    files.deleteQuietly(files.path("commits/" + journal.newBatch()));
    // After the commit (from here Spark refuses to start until the rollback ends): a sink entry
    // outliving offsets/N+1 would make the sink skip the real batch N+1.
    for (String sinkLog : journal.fileSinkLogs()) {
      try {
        SparkLines.get().sinkLog(spark, sinkLog, files.conf()).remove(journal.newBatch());
      } catch (StateShiftException gone) {
        progress.accept("the file sink log " + sinkLog + " is gone; nothing to remove there");
      }
    }
    for (String relative : journal.newFiles()) {
      if (!journal.replacedFiles().contains(relative)) {
        files.deleteQuietly(files.path(relative));
      }
    }
    // A new file that took an old file's name: deleted only while the old one is still aside, so
    // a rollback run again after the old file is back leaves it there.
    for (String relative : journal.replacedFiles()) {
      Path retired = new Path(journal.retiredDir(files), relative);
      if (files.exists(retired)) {
        Path live = files.path(relative);
        if (journal.newFiles().contains(relative)) {
          files.deleteQuietly(live);
        }
        try {
          files.rename(retired, live, false);
        } catch (java.io.IOException e) {
          throw new java.io.UncheckedIOException(
              "Cannot move " + retired + " back to " + live + ": " + e.getMessage(), e);
        }
      }
    }
    if (journal.changesProvider() || journal.changesFormat()) {
      // RocksDB's SSTs folder, made by the migration in a partition folder it kept
      for (String relative : journal.newFiles()) {
        Path parent = files.path(relative).getParent();
        if (parent.getName().equals("SSTs")
            && files.exists(parent)
            && files.list(parent).isEmpty()) {
          files.deleteQuietly(parent);
        }
      }
    }
    for (StatefulOperator op : Checkpoint.load(files).operatorsQuietly()) {
      files.deleteQuietly(files.path("state/" + op.id() + "/_metadata/v2/" + journal.newBatch()));
      for (int p = journal.fromPartitions(); p < journal.toPartitions(); p++) {
        files.deleteQuietly(
            files.path("state/" + op.id() + "/" + p)); // partitions an increase added
      }
      // the old format's version files a change of state checkpoint format moved aside
      for (int p = 0; journal.changesFormat() && p < journal.toPartitions(); p++) {
        Path retired = new Path(journal.retiredDir(files), "state/" + op.id() + "/" + p);
        if (p < journal.fromPartitions() && files.exists(retired)) {
          files.moveTree(retired, files.path("state/" + op.id() + "/" + p));
        }
      }
      for (int p = journal.toPartitions(); p < journal.fromPartitions(); p++) {
        Path retired = new Path(journal.retiredDir(files), "state/" + op.id() + "/" + p);
        Path live = files.path("state/" + op.id() + "/" + p);
        if (files.exists(retired)) {
          files.moveTree(retired, live); // finishes a move a crash left half done
        }
      }
    }
    for (Map.Entry<String, String> metadata : journal.replacedMetadata().entrySet()) {
      files.replace(
          files.path("state/" + metadata.getKey() + "/_metadata/metadata"), metadata.getValue());
    }
    files.deleteQuietly(files.path("offsets/" + journal.newBatch()));
    RepartitionHistory.markRolledBack(files, journal);
    HistoryLog.rolledBack(files, journal, startedAtMs, actor, startedAtMs < 0);
    RepartitionJournal.delete(files);
  }
}
