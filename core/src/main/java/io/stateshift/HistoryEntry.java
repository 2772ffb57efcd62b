package io.stateshift;

import java.time.Instant;
import java.util.Optional;

/**
 * One repartition or rollback of a checkpoint, as stateshift recorded it under {@code
 * _stateshift/history}. Figures a record does not hold (records written by older versions, or a
 * repartition finished by a later run after an interruption) are -1 or empty.
 *
 * @param kind a repartition (or migration), an edit, or a rollback
 * @param outcome how it ended
 * @param attemptId the id of the repartition attempt (a rollback carries the id of the repartition
 *     it undid)
 * @param batch the batch id the repartition wrote (for a rollback: the batch it removed)
 * @param startedAt when it started, if known
 * @param durationMs wall time, or -1
 * @param fromPartitions the partition count before
 * @param toPartitions the partition count after (the intended one, for a failure)
 * @param rowsMoved state rows written into the new layout, or -1
 * @param bytesMoved bytes written into the new layout, or -1
 * @param path the write path taken (for example {@code rocksdb-sst-exchange}), or empty
 * @param application the Spark application that ran it (name and id), or empty
 * @param user the user the Spark application ran as, or empty
 * @param rolledBack for a completed repartition: whether a later rollback undid it
 * @param message for a failure: the error; for a run finished after an interruption: a note
 * @param change for an edit (and the rollback of one): what it changed, the predicate and the
 *     counts, never a deleted value
 */
public record HistoryEntry(
    Kind kind,
    Outcome outcome,
    String attemptId,
    long batch,
    Optional<Instant> startedAt,
    long durationMs,
    int fromPartitions,
    int toPartitions,
    long rowsMoved,
    long bytesMoved,
    String path,
    String application,
    String user,
    boolean rolledBack,
    Optional<String> message,
    Optional<String> change) {

  /** What was done. */
  public enum Kind {
    REPARTITION,
    /** Entries deleted from the state (stateshift edit), under the same protocol. */
    EDIT,
    ROLLBACK
  }

  /** How it ended. */
  public enum Outcome {
    COMPLETED,
    /** Failed after taking the checkpoint's lock; the message says where the checkpoint stands. */
    FAILED
  }

  @Override
  public String toString() {
    StringBuilder out = new StringBuilder();
    out.append(startedAt.map(Instant::toString).orElse("(time unknown)"))
        .append("  ")
        .append(kind.name().toLowerCase(java.util.Locale.ROOT))
        .append(' ')
        .append(fromPartitions)
        .append(" -> ")
        .append(toPartitions)
        .append("  ")
        .append(outcome.name().toLowerCase(java.util.Locale.ROOT));
    if (rolledBack) {
      out.append(" (rolled back later)");
    }
    out.append("  batch ").append(batch);
    if (rowsMoved >= 0) {
      out.append(String.format("  %,d rows", rowsMoved));
    }
    if (bytesMoved >= 0) {
      out.append(String.format("  %,d bytes", bytesMoved));
    }
    if (durationMs >= 0) {
      out.append(String.format("  %,d ms", durationMs));
    }
    if (!path.isEmpty()) {
      out.append("  path ").append(path);
    }
    if (!application.isEmpty() || !user.isEmpty()) {
      out.append("  by ")
          .append(user.isEmpty() ? "?" : user)
          .append(" in ")
          .append(application.isEmpty() ? "?" : application);
    }
    out.append("  attempt ").append(attemptId);
    change.ifPresent(c -> out.append("\n    ").append(c));
    message.ifPresent(m -> out.append("\n    ").append(m));
    return out.toString();
  }
}
