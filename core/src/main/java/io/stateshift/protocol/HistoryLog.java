package io.stateshift.protocol;

import com.fasterxml.jackson.databind.DeserializationFeature;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.stateshift.HistoryEntry;
import io.stateshift.HistoryEntry.Kind;
import io.stateshift.HistoryEntry.Outcome;
import io.stateshift.StateShiftException;
import io.stateshift.checkpoint.Checkpoint;
import io.stateshift.checkpoint.CheckpointFiles;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import org.apache.hadoop.fs.FileStatus;
import org.apache.hadoop.fs.Path;
import org.apache.spark.SparkContext;
import org.apache.spark.sql.SparkSession;

/**
 * What happened to a checkpoint, for {@code stateshift history}: one JSON file per event under
 * {@code _stateshift/history/events/}, beside the repartition records rollback reads ({@link
 * RepartitionHistory}). A completed repartition's event is written in its FINALIZING phase, before
 * the journal goes, so a crash never loses it; a rollback's likewise. Failures that left an attempt
 * for the next run are recorded best-effort. Refusals and failures undone before the switch are not
 * recorded: they leave the checkpoint byte-for-byte as it was. Repartition records without an event
 * (written by older versions) are still listed, with the figures they hold.
 */
public final class HistoryLog {
  static final int VERSION = 1;
  private static final ObjectMapper JSON =
      new ObjectMapper().configure(DeserializationFeature.FAIL_ON_UNKNOWN_PROPERTIES, false);

  private HistoryLog() {}

  /** Who ran it: the Spark application and its user. */
  record Actor(String applicationId, String applicationName, String user) {
    static Actor of(SparkSession spark) {
      try {
        SparkContext sc = spark.sparkContext();
        return new Actor(sc.applicationId(), sc.appName(), sc.sparkUser());
      } catch (RuntimeException e) {
        return new Actor("", "", ""); // a stopped context: the record is still worth writing
      }
    }
  }

  /**
   * What a change's own run knows at its end; a run that finishes another's knows less. {@code
   * change}: for an edit, what it did (the predicate and the counts, never a deleted value).
   */
  record Details(
      long startedAtMs, long rowsMoved, long bytesMoved, String path, Actor actor, String change) {}

  /** The stored form of one event. */
  record Event(
      int version,
      String kind,
      String outcome,
      String attemptId,
      long batch,
      long startedAtMs,
      long durationMs,
      int fromPartitions,
      int toPartitions,
      long rowsMoved,
      long bytesMoved,
      String path,
      String applicationId,
      String applicationName,
      String user,
      String reason,
      String message,
      String change) {}

  static Path dir(CheckpointFiles files) {
    return files.path(RepartitionJournal.DIR + "/history/events");
  }

  private static Path file(CheckpointFiles files, Kind kind, Outcome outcome, String attemptId) {
    return new Path(
        dir(files),
        kind.name().toLowerCase(java.util.Locale.ROOT)
            + "-"
            + outcome.name().toLowerCase(java.util.Locale.ROOT)
            + "-"
            + attemptId
            + ".json");
  }

  /**
   * Records a completed repartition (in its FINALIZING phase). {@code details} is null when a later
   * run finishes an interrupted attempt: then an event the attempt wrote itself is kept.
   */
  static void completed(
      CheckpointFiles files, RepartitionJournal journal, Details details, Actor finisher) {
    Kind kind = journal.edit() != null ? Kind.EDIT : Kind.REPARTITION;
    Path target = file(files, kind, Outcome.COMPLETED, journal.attemptId());
    if (details == null && files.exists(target)) {
      return;
    }
    long rows =
        details != null
            ? details.rowsMoved()
            : journal.rowsBefore().values().stream().mapToLong(Long::longValue).sum();
    Actor actor = details != null ? details.actor() : finisher;
    Event event =
        new Event(
            VERSION,
            kind.name(),
            Outcome.COMPLETED.name(),
            journal.attemptId(),
            journal.newBatch(),
            journal.startedAtMs(),
            details != null ? System.currentTimeMillis() - details.startedAtMs() : -1,
            journal.fromPartitions(),
            journal.toPartitions(),
            rows,
            details != null ? details.bytesMoved() : -1,
            details != null ? details.path() : "",
            actor.applicationId(),
            actor.applicationName(),
            actor.user(),
            null,
            details != null ? null : "finished after an interruption",
            details != null && details.change() != null ? details.change() : journal.edit());
    files.replace(target, toJson(event));
  }

  /** Records a finished rollback (before its journal goes); {@code startedAtMs} -1 if unknown. */
  static void rolledBack(
      CheckpointFiles files,
      RepartitionJournal undone,
      long startedAtMs,
      Actor actor,
      boolean recovered) {
    long now = System.currentTimeMillis();
    Event event =
        new Event(
            VERSION,
            Kind.ROLLBACK.name(),
            Outcome.COMPLETED.name(),
            undone.attemptId(),
            undone.newBatch(),
            startedAtMs < 0 ? now : startedAtMs,
            startedAtMs < 0 ? -1 : now - startedAtMs,
            undone.toPartitions(),
            undone.fromPartitions(),
            -1,
            -1,
            "",
            actor.applicationId(),
            actor.applicationName(),
            actor.user(),
            null,
            recovered ? "finished after an interruption" : null,
            undone.edit());
    files.replace(file(files, Kind.ROLLBACK, Outcome.COMPLETED, undone.attemptId()), toJson(event));
  }

  /**
   * Records a failure after the lock was taken; best-effort, as the storage that just failed may
   * fail again, and the error the caller raises matters more than this record.
   */
  static void failed(
      CheckpointFiles files,
      Kind kind,
      String attemptId,
      int from,
      int to,
      long batch,
      long startedAtMs,
      String path,
      Actor actor,
      StateShiftException error) {
    try {
      Event event =
          new Event(
              VERSION,
              kind.name(),
              Outcome.FAILED.name(),
              attemptId,
              batch,
              startedAtMs,
              System.currentTimeMillis() - startedAtMs,
              from,
              to,
              -1,
              -1,
              path == null ? "" : path,
              actor.applicationId(),
              actor.applicationName(),
              actor.user(),
              error.reason().name(),
              error.getMessage(),
              null);
      files.replace(file(files, kind, Outcome.FAILED, attemptId), toJson(event));
    } catch (RuntimeException ignored) {
      // the failure itself is reported to the caller
    }
  }

  /** Every recorded repartition and rollback of the checkpoint, oldest first. */
  public static List<HistoryEntry> read(CheckpointFiles files) {
    Checkpoint.load(files); // a clear refusal for a path that is not a checkpoint
    Map<String, Boolean> rolledBack = new HashMap<>();
    Map<String, RepartitionJournal> records = new HashMap<>();
    for (FileStatus status : files.list(files.path(RepartitionJournal.DIR + "/history"))) {
      String name = status.getPath().getName();
      boolean undone = name.endsWith(".json.rolledback");
      if (status.isFile() && (name.endsWith(".json") || undone)) {
        RepartitionJournal record = readJson(files, status.getPath(), RepartitionJournal.class);
        records.put(record.attemptId(), record);
        rolledBack.put(record.attemptId(), undone);
      }
    }
    List<HistoryEntry> out = new ArrayList<>();
    java.util.Set<String> withEvent = new java.util.HashSet<>();
    for (FileStatus status : files.list(dir(files))) {
      if (!status.isFile() || !status.getPath().getName().endsWith(".json")) {
        continue;
      }
      Event e = readJson(files, status.getPath(), Event.class);
      Kind kind = Kind.valueOf(e.kind());
      Outcome outcome = Outcome.valueOf(e.outcome());
      if (kind != Kind.ROLLBACK && outcome == Outcome.COMPLETED) {
        withEvent.add(e.attemptId());
      }
      String message =
          e.message() == null
              ? null
              : e.reason() == null ? e.message() : e.reason() + ": " + e.message();
      out.add(
          new HistoryEntry(
              kind,
              outcome,
              e.attemptId(),
              e.batch(),
              e.startedAtMs() > 0
                  ? Optional.of(Instant.ofEpochMilli(e.startedAtMs()))
                  : Optional.empty(),
              e.durationMs(),
              e.fromPartitions(),
              e.toPartitions(),
              e.rowsMoved(),
              e.bytesMoved(),
              nonNull(e.path()),
              application(e),
              nonNull(e.user()),
              kind != Kind.ROLLBACK
                  && outcome == Outcome.COMPLETED
                  && rolledBack.getOrDefault(e.attemptId(), false),
              Optional.ofNullable(message),
              Optional.ofNullable(e.change())));
    }
    for (RepartitionJournal r : records.values()) {
      if (!withEvent.contains(r.attemptId())) { // recorded before events existed
        long rows =
            r.rowsBefore() == null
                ? -1
                : r.rowsBefore().values().stream().mapToLong(Long::longValue).sum();
        out.add(
            new HistoryEntry(
                Kind.REPARTITION,
                Outcome.COMPLETED,
                r.attemptId(),
                r.newBatch(),
                Optional.of(Instant.ofEpochMilli(r.startedAtMs())),
                -1,
                r.fromPartitions(),
                r.toPartitions(),
                rows,
                -1,
                "",
                "",
                "",
                rolledBack.get(r.attemptId()),
                Optional.empty(),
                Optional.empty()));
      }
    }
    out.sort(
        Comparator.comparing((HistoryEntry h) -> h.startedAt().orElse(Instant.EPOCH))
            // a rollback after what it undid; an attempt's failure before the run that finished it
            .thenComparing(h -> h.kind() == Kind.ROLLBACK)
            .thenComparing(h -> h.outcome() == Outcome.COMPLETED));
    return out;
  }

  private static String application(Event e) {
    String name = nonNull(e.applicationName());
    String id = nonNull(e.applicationId());
    return id.isEmpty() ? name : name.isEmpty() ? id : name + " (" + id + ")";
  }

  private static String nonNull(String s) {
    return s == null ? "" : s;
  }

  private static <T> T readJson(CheckpointFiles files, Path path, Class<T> type) {
    try {
      return JSON.readValue(files.readText(path), type);
    } catch (Exception e) {
      throw Checkpoint.corrupt(
          files, files.relativize(path) + " is not readable (" + e.getMessage() + ")");
    }
  }

  private static String toJson(Event event) {
    try {
      return JSON.writeValueAsString(event);
    } catch (com.fasterxml.jackson.core.JsonProcessingException e) {
      throw new IllegalStateException(e);
    }
  }
}
