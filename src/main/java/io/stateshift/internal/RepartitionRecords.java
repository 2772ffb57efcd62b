package io.stateshift.internal;

import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import org.apache.spark.sql.SparkSession;

/**
 * What {@code _stateshift/history} and the journal of an unfinished attempt say about a
 * checkpoint's repartitions, for the {@code state_history} procedure. Read-only.
 */
public final class RepartitionRecords {
  private RepartitionRecords() {}

  /**
   * One repartition.
   *
   * @param batch the batch the repartition committed (or will commit)
   * @param baseBatch the last batch committed before it
   * @param attemptId the attempt's id (names its folder under {@code _stateshift/attempts})
   * @param fromPartitions the count before
   * @param toPartitions the count after
   * @param startedAtMs when it started, in ms since the epoch
   * @param outcome {@code completed}, {@code rolled_back}, or {@code interrupted} while {@code
   *     staging|switching|finalizing|rolling_back} for an attempt the next run finishes or undoes
   * @param rowsBefore the state rows counted before the switch (0 until it is recorded)
   * @param backupLocation where dropped partition folders went when a backup location was given
   */
  public record Record(
      long batch,
      long baseBatch,
      String attemptId,
      int fromPartitions,
      int toPartitions,
      long startedAtMs,
      String outcome,
      long rowsBefore,
      String backupLocation) {}

  /** Oldest first; an unfinished attempt last. Refuses what every command refuses. */
  public static List<Record> read(SparkSession spark, String checkpointLocation) {
    CheckpointFiles files =
        CheckpointFiles.at(checkpointLocation, SessionSettings.hadoopConf(spark));
    Checkpoint.load(files); // the same refusal of a missing or non-checkpoint folder
    List<Record> out = new ArrayList<>();
    for (RepartitionHistory.Entry entry : RepartitionHistory.all(files)) {
      out.add(record(entry.journal(), entry.rolledBack() ? "rolled_back" : "completed"));
    }
    RepartitionJournal.read(files)
        .ifPresent(
            journal ->
                out.add(
                    record(
                        journal,
                        "interrupted while " + journal.phase().name().toLowerCase(Locale.ROOT))));
    return out;
  }

  private static Record record(RepartitionJournal j, String outcome) {
    long rows =
        j.rowsBefore() == null
            ? 0
            : j.rowsBefore().values().stream().mapToLong(Long::longValue).sum();
    return new Record(
        j.newBatch(),
        j.baseBatch(),
        j.attemptId(),
        j.fromPartitions(),
        j.toPartitions(),
        j.startedAtMs(),
        outcome,
        rows,
        j.retiredRoot());
  }
}
