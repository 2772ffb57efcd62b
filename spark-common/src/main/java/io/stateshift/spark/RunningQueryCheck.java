package io.stateshift.spark;

import io.stateshift.StateShiftException;
import io.stateshift.StateShiftException.Reason;
import io.stateshift.checkpoint.Checkpoint;
import io.stateshift.checkpoint.CheckpointFiles;
import io.stateshift.config.StateShiftConf;
import io.stateshift.protocol.QueryLease;
import io.stateshift.protocol.RepartitionJournal;
import java.time.Instant;
import java.util.Comparator;
import java.util.Optional;
import java.util.Set;
import java.util.UUID;
import java.util.stream.Collectors;
import org.apache.hadoop.fs.FileStatus;
import org.apache.hadoop.fs.Path;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.execution.streaming.runtime.StreamingQueryWrapper;
import org.apache.spark.sql.streaming.StreamingQuery;

/**
 * Refuses to change a checkpoint a streaming query may be running on. Called with the checkpoint
 * lock held, so a query that starts later sees the lock and is refused in turn. Three kinds of
 * evidence, strongest first:
 *
 * <ol>
 *   <li>a query of this Spark application is active on the checkpoint;
 *   <li>a query in any process holds the {@link QueryLease} (queries run with
 *       StateShiftExtensions);
 *   <li>for queries run without the extension, a guess: the offset or commit log was written within
 *       the last {@link #DEFAULT_RECENT_WRITE_WINDOW_MS} ms, in an entry stateshift did not write
 *       (an interrupted attempt's own entries are not a query's). Unless explained (the query ran
 *       in this process and had ended by then, or an expired lease shows its holder died), this is
 *       refused; {@code assumeStopped} overrides it for a user who knows the query is stopped.
 * </ol>
 *
 * The on-demand path (a query repartitioning its own checkpoint as it starts) skips the guess: the
 * recent writes are its own previous run's, and a crashed run's pending batch is completed first.
 */
final class RunningQueryCheck {
  static final long DEFAULT_RECENT_WRITE_WINDOW_MS =
      StateShiftConf.RECENT_WRITE_WINDOW_MS.parse(null);

  private RunningQueryCheck() {}

  static void refuseIfRunning(
      SparkSession spark,
      CheckpointFiles files,
      UUID startingQuery,
      boolean assumeStopped,
      String action) {
    for (StreamingQuery query : spark.streams().active()) {
      if (query.id().equals(startingQuery)) {
        continue;
      }
      if (query instanceof StreamingQueryWrapper wrapper) {
        Path running = new Path(wrapper.streamingQuery().resolvedCheckpointRoot());
        if (files.root().equals(running)) {
          throw new StateShiftException(
              Reason.CHECKPOINT_IN_USE,
              "Query "
                  + query.id()
                  + " is running on checkpoint "
                  + files.root()
                  + ". Stop it "
                  + "(query.stop()) before you "
                  + action
                  + ".");
        }
      }
    }
    Optional<String> leased = QueryLease.refusal(files, startingQuery);
    if (leased.isPresent()) {
      throw new StateShiftException(Reason.CHECKPOINT_IN_USE, leased.get());
    }
    if (startingQuery != null || assumeStopped) {
      return;
    }
    long window = StateShiftConf.RECENT_WRITE_WINDOW_MS.onDriver();
    Optional<FileStatus> newest = newestLogFile(files);
    if (newest.isEmpty()) {
      return;
    }
    long ageMs = System.currentTimeMillis() - newest.get().getModificationTime();
    if (ageMs >= window
        || QueryLease.expiredLeasePresent(files)
        || QueryLease.stoppedInThisProcessBy(
            Checkpoint.load(files).queryId(), newest.get().getModificationTime())) {
      return;
    }
    throw new StateShiftException(
        Reason.CHECKPOINT_IN_USE,
        "A streaming query may still be running on checkpoint "
            + files.root()
            + ": "
            + files.relativize(newest.get().getPath())
            + " was written "
            + ageMs / 1000
            + " s ago ("
            + Instant.ofEpochMilli(newest.get().getModificationTime())
            + "), and a "
            + "query running without StateShiftExtensions holds no lease to tell. Stop the query "
            + "first. If it is stopped (or crashed), pass --assume-stopped (API: assumeStopped()) "
            + "to "
            + action
            + " now, or wait "
            + (window - ageMs + 999) / 1000
            + " s.");
  }

  /**
   * The most recently written file of the offset and commit logs, leaving out the entries
   * stateshift wrote itself ({@link RepartitionJournal#ownLogBatches}): the last repartition's
   * batch, and an interrupted attempt's, whose entries are moments old when it is run again.
   */
  private static Optional<FileStatus> newestLogFile(CheckpointFiles files) {
    Set<String> own =
        RepartitionJournal.ownLogBatches(files).stream()
            .map(String::valueOf)
            .collect(Collectors.toSet());
    return java.util.stream.Stream.of("offsets", "commits")
        .flatMap(dir -> files.list(files.path(dir)).stream())
        .filter(FileStatus::isFile)
        .filter(status -> !own.contains(status.getPath().getName()))
        .max(Comparator.comparingLong(FileStatus::getModificationTime));
  }
}
