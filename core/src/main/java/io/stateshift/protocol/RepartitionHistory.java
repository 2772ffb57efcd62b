package io.stateshift.protocol;

import com.fasterxml.jackson.databind.ObjectMapper;
import io.stateshift.checkpoint.Checkpoint;
import io.stateshift.checkpoint.CheckpointFiles;
import java.util.Comparator;
import java.util.Optional;
import org.apache.hadoop.fs.FileStatus;
import org.apache.hadoop.fs.Path;

/**
 * Completed repartitions, one JSON file each under {@code _stateshift/history/}: what rollback and
 * verify need (counts before, the files the switch created, the metadata it replaced, where dropped
 * partitions went). A rolled-back record is renamed to {@code .rolledback}.
 */
public final class RepartitionHistory {
  private static final ObjectMapper JSON = new ObjectMapper();
  private static final String SUFFIX = ".json";

  private RepartitionHistory() {}

  static Path path(CheckpointFiles files, RepartitionJournal journal) {
    return files.path(
        RepartitionJournal.DIR
            + "/history/"
            + journal.newBatch()
            + "-"
            + journal.attemptId()
            + SUFFIX);
  }

  static void record(CheckpointFiles files, RepartitionJournal journal) {
    files.replace(path(files, journal), toJson(journal));
    if (journal.retiredRoot() != null) {
      // The backup holds its own copy, so it can be understood without the checkpoint.
      files.replace(new Path(journal.retiredDir(files), "repartition.json"), toJson(journal));
    }
  }

  /** The newest repartition that was not rolled back. */
  public static Optional<RepartitionJournal> latest(CheckpointFiles files) {
    return files.list(files.path(RepartitionJournal.DIR + "/history")).stream()
        .map(FileStatus::getPath)
        .filter(p -> p.getName().endsWith(SUFFIX))
        .map(p -> read(files, p))
        .max(Comparator.comparingLong(RepartitionJournal::newBatch));
  }

  static void markRolledBack(CheckpointFiles files, RepartitionJournal journal) {
    Path record = path(files, journal);
    if (files.exists(record)) {
      try {
        files.rename(record, new Path(record.getParent(), record.getName() + ".rolledback"), true);
      } catch (java.io.IOException e) {
        throw new java.io.UncheckedIOException(e);
      }
    }
  }

  private static RepartitionJournal read(CheckpointFiles files, Path path) {
    try {
      return JSON.readValue(files.readText(path), RepartitionJournal.class);
    } catch (Exception e) {
      throw Checkpoint.corrupt(files, files.relativize(path) + " is not readable");
    }
  }

  private static String toJson(RepartitionJournal journal) {
    try {
      return JSON.writeValueAsString(journal);
    } catch (com.fasterxml.jackson.core.JsonProcessingException e) {
      throw new IllegalStateException(e);
    }
  }
}
