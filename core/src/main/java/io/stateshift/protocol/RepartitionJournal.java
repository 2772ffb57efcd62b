package io.stateshift.protocol;

import com.fasterxml.jackson.databind.ObjectMapper;
import io.stateshift.checkpoint.Checkpoint;
import io.stateshift.checkpoint.CheckpointFiles;
import java.util.Optional;
import org.apache.hadoop.fs.Path;

/**
 * The record of a repartition (or migration to another state store provider, {@link #toProvider},
 * or state checkpoint format, {@link #toFormatVersion}) in progress, at {@code
 * _stateshift/journal}. It is written before the first step of each phase, so an interrupted
 * attempt can be finished (once the offset log names the new count) or undone (before that) by the
 * next run.
 */
public record RepartitionJournal(
    String attemptId,
    Phase phase,
    int fromPartitions,
    int toPartitions,
    long baseBatch,
    long newBatch,
    long startedAtMs,
    java.util.Map<String, Long> rowsBefore,
    java.util.List<String> newFiles,
    java.util.Map<String, String> replacedMetadata,
    String retiredRoot,
    String newCommit,
    java.util.List<String> fileSinkLogs,
    String fromProvider,
    String toProvider,
    Integer fromFormatVersion,
    Integer toFormatVersion,
    java.util.List<String> replacedFiles,
    String edit) {

  /**
   * The logs of the file sinks that get an empty entry for the new batch (absent in records written
   * before file sinks were tracked); {@code replacedFiles}, the old layout's files under {@code
   * state/} whose names a new file takes (a prepared layout's base version {@code N+1}, where the
   * old partition has a snapshot of that version too): the switch moves each, with a checksum file
   * beside it, into {@link #retiredDir} before it moves the new file in, and a rollback moves them
   * back; {@code edit}, for an edit or an evolution, the command and options that name it but the
   * checkpoint ({@code edit --operator 0 --delete-where '...'}), else null.
   */
  public RepartitionJournal {
    fileSinkLogs = fileSinkLogs == null ? java.util.List.of() : java.util.List.copyOf(fileSinkLogs);
    replacedFiles =
        replacedFiles == null ? java.util.List.of() : java.util.List.copyOf(replacedFiles);
  }

  /** Where an attempt is; the checkpoint's old layout is untouched until SWITCHING. */
  public enum Phase {
    /** New state is being written beside the checkpoint; undo by deleting it. */
    STAGING,
    /** The offset log, state files and commit log are switching to the new layout; finish it. */
    SWITCHING,
    /** The new layout is committed; metadata and retired folders are being tidied; finish it. */
    FINALIZING,
    /** A completed repartition is being rolled back to the layout before it; finish it. */
    ROLLING_BACK
  }

  static final String DIR = "_stateshift";
  private static final ObjectMapper JSON = new ObjectMapper();

  static Path path(CheckpointFiles files) {
    return files.path(DIR + "/journal");
  }

  static Path attemptDir(CheckpointFiles files, String attemptId) {
    return files.path(DIR + "/attempts/" + attemptId);
  }

  Path stagedDir(CheckpointFiles files) {
    return new Path(attemptDir(files, attemptId), "staged");
  }

  /** Where partition folders dropped by a decrease go: the backup location, or the attempt's. */
  Path retiredDir(CheckpointFiles files) {
    return retiredRoot != null
        ? new Path(retiredRoot, attemptId)
        : new Path(attemptDir(files, attemptId), "retired");
  }

  static RepartitionJournal start(
      int from, int to, long baseBatch, String retiredRoot, java.util.List<String> fileSinkLogs) {
    return new RepartitionJournal(
        java.util.UUID.randomUUID().toString(),
        Phase.STAGING,
        from,
        to,
        baseBatch,
        baseBatch + 1,
        System.currentTimeMillis(),
        java.util.Map.of(),
        java.util.List.of(),
        java.util.Map.of(),
        retiredRoot,
        null,
        fileSinkLogs,
        null,
        null,
        null,
        null,
        null,
        null);
  }

  /**
   * Whether this attempt changes the state store provider (a migration); {@link #toProvider} is
   * then the provider class the new batch's offset log entry names.
   */
  public boolean changesProvider() {
    return toProvider != null && !toProvider.equals(fromProvider);
  }

  /**
   * Whether this attempt changes the state checkpoint format ({@code
   * spark.sql.streaming.stateStore.checkpointFormatVersion}, 1 or 2).
   */
  public boolean changesFormat() {
    return toFormatVersion != null && !toFormatVersion.equals(fromFormatVersion);
  }

  /**
   * The batches whose offset and commit log entries stateshift wrote itself, not a query: the last
   * completed repartition's, and an interrupted attempt's once it is past STAGING (its switch
   * writes them; a rollback deletes them last). An attempt in STAGING has written neither, so an
   * entry of its batch is a query's.
   */
  public static java.util.Set<Long> ownLogBatches(CheckpointFiles files) {
    java.util.Set<Long> own = new java.util.TreeSet<>();
    RepartitionHistory.latest(files).ifPresent(last -> own.add(last.newBatch()));
    read(files).filter(j -> j.phase() != Phase.STAGING).ifPresent(j -> own.add(j.newBatch()));
    return own;
  }

  /** What this attempt is, in a word: a repartition, a migration, an edit or a rollback. */
  public String kind() {
    if (phase == Phase.ROLLING_BACK) {
      return "rollback";
    }
    if (edit != null) {
      return "edit";
    }
    return changesProvider() || changesFormat() ? "migration" : "repartition";
  }

  /**
   * The command that finishes this attempt on the checkpoint at {@code root} (in STAGING: undoes it
   * and runs the change again): the same repartition or migration; for a rollback, a repartition to
   * the count it restores, which finishes the rollback and then has nothing to do.
   */
  public String finishingCommand(String root) {
    String command = "./stateshift ";
    if (phase == Phase.ROLLING_BACK) {
      return command + "repartition --checkpoint " + root + " --partitions " + fromPartitions;
    }
    if (edit != null) {
      int space = edit.indexOf(' ');
      command +=
          space < 0
              ? edit + " --checkpoint " + root
              : edit.substring(0, space) + " --checkpoint " + root + edit.substring(space);
      return fromPartitions == toPartitions ? command : command + " --partitions " + toPartitions;
    }
    if (!changesProvider() && !changesFormat()) {
      return command + "repartition --checkpoint " + root + " --partitions " + toPartitions;
    }
    command += "migrate --checkpoint " + root;
    if (changesProvider()) {
      command += " --provider " + ProviderMigration.optionName(toProvider);
    }
    if (changesFormat()) {
      command += " --format-version " + toFormatVersion;
    }
    return fromPartitions == toPartitions ? command : command + " --partitions " + toPartitions;
  }

  /** The same attempt, writing the state in another state checkpoint format. */
  RepartitionJournal withFormatVersions(int from, int to) {
    return copy(
        phase,
        rowsBefore,
        newFiles,
        replacedMetadata,
        newCommit,
        fromProvider,
        toProvider,
        from,
        to,
        replacedFiles);
  }

  /** The same attempt, an edit named by these command options. */
  RepartitionJournal withEdit(String options) {
    return new RepartitionJournal(
        attemptId,
        phase,
        fromPartitions,
        toPartitions,
        baseBatch,
        newBatch,
        startedAtMs,
        rowsBefore,
        newFiles,
        replacedMetadata,
        retiredRoot,
        newCommit,
        fileSinkLogs,
        fromProvider,
        toProvider,
        fromFormatVersion,
        toFormatVersion,
        replacedFiles,
        options);
  }

  /** The same attempt, moving the state from one provider class to another. */
  RepartitionJournal withProviders(String from, String to) {
    return copy(
        phase,
        rowsBefore,
        newFiles,
        replacedMetadata,
        newCommit,
        from,
        to,
        fromFormatVersion,
        toFormatVersion,
        replacedFiles);
  }

  RepartitionJournal withPhase(Phase next) {
    return copy(
        next,
        rowsBefore,
        newFiles,
        replacedMetadata,
        newCommit,
        fromProvider,
        toProvider,
        fromFormatVersion,
        toFormatVersion,
        replacedFiles);
  }

  /**
   * What the switch will change, recorded before it starts so a rollback can undo it; with {@code
   * commit}, the exact text of commits/N+1 (state checkpoint format v2, where it names the new
   * state versions' unique ids; null means a copy of commits/N), and the old files it moves aside
   * ({@link #replacedFiles}).
   */
  RepartitionJournal withSwitchRecord(
      java.util.Map<String, Long> rows,
      java.util.List<String> files,
      java.util.Map<String, String> metadata,
      String commit,
      java.util.List<String> replaced) {
    return copy(
        phase,
        rows,
        files,
        metadata,
        commit,
        fromProvider,
        toProvider,
        fromFormatVersion,
        toFormatVersion,
        replaced);
  }

  /** This attempt (same id, counts, batches, start and places) with the fields that change. */
  private RepartitionJournal copy(
      Phase phase,
      java.util.Map<String, Long> rows,
      java.util.List<String> files,
      java.util.Map<String, String> metadata,
      String commit,
      String fromProvider,
      String toProvider,
      Integer fromFormatVersion,
      Integer toFormatVersion,
      java.util.List<String> replaced) {
    return new RepartitionJournal(
        attemptId,
        phase,
        fromPartitions,
        toPartitions,
        baseBatch,
        newBatch,
        startedAtMs,
        rows,
        files,
        metadata,
        retiredRoot,
        commit,
        fileSinkLogs,
        fromProvider,
        toProvider,
        fromFormatVersion,
        toFormatVersion,
        replaced,
        edit);
  }

  public static Optional<RepartitionJournal> read(CheckpointFiles files) {
    Path path = path(files);
    if (!files.exists(path)) {
      // A save that failed between moving the old record aside and writing the new one: the old
      // record is the truth (every phase's steps are idempotent, so redoing them is safe).
      path = previousPath(files);
      if (!files.exists(path)) {
        return Optional.empty();
      }
    }
    try {
      return Optional.of(JSON.readValue(files.readText(path), RepartitionJournal.class));
    } catch (Exception e) {
      throw Checkpoint.corrupt(files, DIR + "/journal is not readable (" + e.getMessage() + ")");
    }
  }

  /**
   * Saves this record without a moment in which none exists. An overwriting rename is not atomic on
   * every file system (Hadoop's FileContext on a local disk deletes the target, then renames), so
   * the current record is first moved aside to {@code journal.previous}, the new one written beside
   * it, and the previous one deleted last (best effort). Readers take {@code journal} when it
   * exists and {@code journal.previous} otherwise. On S3 a PUT replaces the record atomically.
   */
  void save(CheckpointFiles files) {
    String text;
    try {
      text = JSON.writeValueAsString(this);
    } catch (com.fasterxml.jackson.core.JsonProcessingException e) {
      throw new IllegalStateException(e);
    }
    Path current = path(files);
    if (files.flatNamespace()) {
      files.replace(current, text); // one PUT: atomic on S3, so no record is ever missing
      return;
    }
    Path previous = previousPath(files);
    if (files.exists(current)) {
      if (files.exists(previous)) {
        files.delete(previous, false); // left by a save that failed at its last step
      }
      try {
        files.rename(current, previous, false);
      } catch (java.io.IOException e) {
        throw new java.io.UncheckedIOException(
            "Cannot write " + current + ": " + e.getMessage(), e);
      }
    }
    files.writeNew(current, text);
    // Saved. A previous record left behind is harmless: readers prefer the current one, and the
    // next save or the final delete removes it.
    files.deleteQuietly(previous);
  }

  /** Removes the record: the previous one first, so a failure in between leaves the current. */
  static void delete(CheckpointFiles files) {
    files.delete(previousPath(files), false);
    files.delete(path(files), false);
  }

  private static Path previousPath(CheckpointFiles files) {
    return files.path(DIR + "/journal.previous");
  }
}
