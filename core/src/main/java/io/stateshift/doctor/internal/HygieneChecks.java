package io.stateshift.doctor.internal;

import io.stateshift.checkpoint.OffsetLogEntry;
import io.stateshift.checkpoint.spi.SinkLog;
import io.stateshift.doctor.Severity;
import io.stateshift.monitor.ProgressHistory;
import io.stateshift.protocol.RepartitionJournal;
import io.stateshift.protocol.SinkLogGaps;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import org.apache.hadoop.fs.FileStatus;

/**
 * The doctor's checks of the checkpoint's logs: an interrupted change, a pending batch, a second
 * writer, the batches retained, and the file sink's log.
 */
final class HygieneChecks {
  private final Diagnosis d;

  HygieneChecks(Diagnosis d) {
    this.d = d;
  }

  void checkFileSinks(List<String> given) {
    String root = d.files.root().toString();
    for (SinkLog log : SinkLogGaps.logs(d.spark, d.files, given)) {
      List<SinkLogGaps.Gap> gaps = SinkLogGaps.find(d.checkpoint, log);
      if (gaps.isEmpty()) {
        continue;
      }
      List<String> evidence = gaps.stream().map(SinkLogGaps.Gap::explanation).toList();
      String output = new org.apache.hadoop.fs.Path(log.location()).getParent().toString();
      boolean fillable = gaps.stream().allMatch(SinkLogGaps.Gap::fillable);
      d.add(
          Severity.ERROR,
          "FILE_SINK_LOG_GAP",
          "The file sink's log lacks batches of this checkpoint: its output cannot be read and its "
              + "next compaction fails",
          log.location() + ": " + String.join("; ", evidence),
          fillable
              ? "Run `./stateshift repair-sink-log --checkpoint "
                  + root
                  + " --file-sink "
                  + output
                  + "` (it writes the empty entries of repartition batches), or start the query "
                  + "with spark.sql.extensions=io.stateshift.StateShiftExtensions, which does so "
                  + "before its first batch. Repartitions by stateshift that know the sink "
                  + "(--file-sink, or the sink on record) write the entry themselves."
              : "Restore the sink's "
                  + SinkLog.METADATA_DIR
                  + " folder from a backup; "
                  + "entries of batches that wrote output cannot be rebuilt from the checkpoint.");
    }
  }

  void checkHygiene(Optional<ProgressHistory> history) {
    String root = d.files.root().toString();
    Optional<RepartitionJournal> journal = RepartitionJournal.read(d.files);
    journal.ifPresent(
        j ->
            d.add(
                Severity.ERROR,
                "UNFINISHED_REPARTITION",
                "A " + j.kind() + " of this checkpoint was interrupted",
                "_stateshift/journal: attempt "
                    + j.attemptId()
                    + " from "
                    + j.fromPartitions()
                    + " to "
                    + j.toPartitions()
                    + " partitions stopped in phase "
                    + j.phase()
                    + " (started "
                    + java.time.Instant.ofEpochMilli(j.startedAtMs())
                    + ")",
                "Run `"
                    + j.finishingCommand(root)
                    + "` to "
                    + (j.phase() == RepartitionJournal.Phase.STAGING
                        ? "undo it and repartition"
                        : "finish it")
                    + ", or start the query with spark.sql.extensions=io.stateshift.StateShiftExtensions, "
                    + "which finishes or undoes it first."));

    long planned = d.checkpoint.lastPlannedBatch();
    long committed = d.checkpoint.lastCommittedBatch();
    // the batch of an attempt past STAGING is the attempt's own, finished with it (above)
    boolean attemptsBatch =
        journal.isPresent()
            && journal.get().phase() != RepartitionJournal.Phase.STAGING
            && planned == journal.get().newBatch();
    if (planned > committed && !attemptsBatch) {
      d.add(
          Severity.INFO,
          "PENDING_BATCH",
          "The last planned batch was not committed",
          "offsets/" + planned + " exists, the last commit is commits/" + committed,
          "Nothing to do: the query re-runs batch "
              + planned
              + " with the same offsets when it "
              + "starts. (It stopped or failed during that batch.)");
    }

    List<String> temporary = new ArrayList<>();
    for (String log : List.of("offsets", "commits")) {
      for (FileStatus status : d.files.list(d.files.path(log))) {
        String name = status.getPath().getName();
        if (name.startsWith(".") && name.endsWith(".tmp")) {
          temporary.add(log + "/" + name);
        }
      }
    }
    List<String> backwards = new ArrayList<>();
    long previousTs = -1;
    long previousBatch = -1;
    for (long batch : d.retainedOffsetBatches()) {
      long ts = d.safeOffsets(batch).map(OffsetLogEntry::batchTimestampMs).orElse(0L);
      if (previousTs > 0 && ts > 0 && ts < previousTs) {
        backwards.add(
            "batch "
                + batch
                + " planned at "
                + java.time.Instant.ofEpochMilli(ts)
                + ", before batch "
                + previousBatch
                + " ("
                + java.time.Instant.ofEpochMilli(previousTs)
                + ")");
      }
      previousTs = ts;
      previousBatch = batch;
    }
    List<String> overlapping = history.map(HygieneChecks::overlappingRuns).orElse(List.of());
    if (!overlapping.isEmpty() || !backwards.isEmpty()) {
      List<String> evidence = new ArrayList<>(overlapping);
      evidence.addAll(backwards);
      d.add(
          overlapping.isEmpty() ? Severity.WARNING : Severity.ERROR,
          "SHARED_CHECKPOINT",
          "Two queries (or two runs of one) appear to write this checkpoint",
          String.join("; ", evidence),
          "Give every query its own checkpointLocation and make sure only one copy of a query "
              + "runs at a time (stop the old run before starting the new one, for example with "
              + "spark.sql.streaming.stopActiveRunOnRestart=true within one application).");
    } else if (!temporary.isEmpty()) {
      d.add(
          Severity.WARNING,
          "LEFTOVER_LOG_TEMP_FILES",
          "Temporary log files were left behind (a crash during a log write, or a second writer)",
          String.join(", ", temporary),
          "Make sure no other query uses this checkpoint; the files themselves are ignored by "
              + "Spark and can be deleted while the query is stopped.");
    }

    int retained = retainedCommitCount();
    if (committed + 1 > retained && retained < d.settings.minRetainedBatches()) {
      d.add(
          Severity.WARNING,
          "FEW_RETAINED_BATCHES",
          "Too few batches are retained to recover from a bad batch",
          retained
              + " committed batches are kept (batches "
              + (committed - retained + 1)
              + " to "
              + committed
              + " of "
              + (committed + 1)
              + "); fewer than "
              + d.settings.minRetainedBatches(),
          "Set spark.sql.streaming.minBatchesToRetain=100 (Spark's default) on the query's "
              + "session, so the state and logs of earlier batches are kept for rollback and "
              + "recovery.");
    }
  }

  /** Runs whose progress times overlap: two runs of the query were alive at the same time. */
  private static List<String> overlappingRuns(ProgressHistory history) {
    Map<String, long[]> spans = new LinkedHashMap<>();
    for (ProgressHistory.Batch b : history.batches()) {
      spans.merge(
          b.runId(),
          new long[] {b.timestampMs(), b.timestampMs()},
          (a, n) -> new long[] {Math.min(a[0], n[0]), Math.max(a[1], n[1])});
    }
    List<String> out = new ArrayList<>();
    List<Map.Entry<String, long[]>> runs = new ArrayList<>(spans.entrySet());
    for (int i = 0; i < runs.size(); i++) {
      for (int j = i + 1; j < runs.size(); j++) {
        long[] a = runs.get(i).getValue();
        long[] b = runs.get(j).getValue();
        if (a[0] < b[1] && b[0] < a[1]) {
          out.add(
              "runs "
                  + runs.get(i).getKey()
                  + " and "
                  + runs.get(j).getKey()
                  + " both reported progress between "
                  + java.time.Instant.ofEpochMilli(Math.max(a[0], b[0]))
                  + " and "
                  + java.time.Instant.ofEpochMilli(Math.min(a[1], b[1])));
        }
      }
    }
    return out;
  }

  private int retainedCommitCount() {
    int count = 0;
    for (FileStatus status : d.files.list(d.files.path("commits"))) {
      if (status.getPath().getName().matches("\\d+")) {
        count++;
      }
    }
    return count;
  }
}
