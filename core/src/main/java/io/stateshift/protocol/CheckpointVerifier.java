package io.stateshift.protocol;

import io.stateshift.VerificationReport;
import io.stateshift.checkpoint.Checkpoint;
import io.stateshift.checkpoint.CheckpointFiles;
import io.stateshift.checkpoint.SessionSettings;
import io.stateshift.checkpoint.StateLayout;
import io.stateshift.checkpoint.StoreSpec;
import io.stateshift.checkpoint.spi.SinkLog;
import io.stateshift.checkpoint.spi.SparkLines;
import io.stateshift.checkpoint.spi.StateCount;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import org.apache.spark.sql.SparkSession;

/**
 * Checks a checkpoint's state: the logs and state files are readable and present for the last
 * committed batch, every key sits in the partition Spark's hash assigns it, and, right after a
 * repartition, each store holds as many rows as before it.
 */
public final class CheckpointVerifier {
  private CheckpointVerifier() {}

  public static VerificationReport verify(SparkSession spark, String checkpointLocation) {
    return verify(spark, checkpointLocation, List.of());
  }

  /**
   * The same, and the logs of the query's file sinks ({@code fileSinks}, and the one on record)
   * have an entry for every batch they need.
   */
  public static VerificationReport verify(
      SparkSession spark, String checkpointLocation, List<String> fileSinks) {
    CheckpointFiles files =
        CheckpointFiles.at(checkpointLocation, SessionSettings.hadoopConf(spark));
    Checkpoint checkpoint = Checkpoint.load(files);
    List<String> problems = new ArrayList<>();
    for (SinkLog log : SinkLogGaps.logs(spark, files, fileSinks)) {
      for (SinkLogGaps.Gap gap : SinkLogGaps.find(checkpoint, log)) {
        problems.add("file sink log " + log.location() + ": " + gap.explanation());
      }
    }
    Optional<RepartitionJournal> pending = RepartitionJournal.read(files);
    if (pending.isPresent()) {
      RepartitionJournal j = pending.get();
      String command = j.finishingCommand(files.root().toString());
      if (j.phase() != RepartitionJournal.Phase.STAGING) {
        // Its switch wrote (part of) batch j.newBatch() and the layout may be half new: what is
        // to do is to finish it, not to run that batch as a query's unfinished one.
        problems.add(
            "an interrupted "
                + j.kind()
                + " to "
                + (j.phase() == RepartitionJournal.Phase.ROLLING_BACK
                    ? j.fromPartitions()
                    : j.toPartitions())
                + " partitions (attempt "
                + j.attemptId()
                + ", phase "
                + j.phase()
                + ", batch "
                + j.newBatch()
                + ") must be finished before the query starts: run '"
                + command
                + "' (or start the query with StateShiftExtensions, which finishes it first)");
        return new VerificationReport(files.root().toString(), -1, 0, problems);
      }
      problems.add(
          "an interrupted "
              + j.kind()
              + " (attempt "
              + j.attemptId()
              + ", phase STAGING) left its files beside the unchanged checkpoint: run '"
              + command
              + "' to remove them and run it again (a query started with StateShiftExtensions "
              + "removes them too)");
    }
    StateLayout layout;
    try {
      layout = StateLayout.read(spark, checkpoint, true);
    } catch (RuntimeException e) {
      problems.add(e.getMessage());
      return new VerificationReport(files.root().toString(), -1, 0, problems);
    }
    List<StateCount> counts;
    try {
      counts = SparkLines.get().countState(spark, layout);
    } catch (RuntimeException e) {
      problems.add(
          "the state of batch " + layout.lastCommitted() + " cannot be read: " + rootMessage(e));
      return new VerificationReport(files.root().toString(), layout.partitions(), 0, problems);
    }
    Optional<RepartitionJournal> last =
        RepartitionHistory.latest(files).filter(h -> h.newBatch() == layout.lastCommitted());
    long rows = 0;
    for (StoreSpec spec : layout.stores()) {
      long storeRows = 0;
      for (StateCount c : counts) {
        if (c.slot() != spec.slot()) {
          continue;
        }
        storeRows += c.rows();
        if (c.misplaced() > 0) {
          problems.add(
              String.format(
                  "operator %d store %s partition %d: %d of %d keys belong to "
                      + "another partition",
                  spec.operatorId(), spec.storeName(), c.partition(), c.misplaced(), c.rows()));
        }
      }
      rows += storeRows;
      String key = spec.operatorId() + "/" + spec.storeName();
      if (last.isPresent()
          && last.get().rowsBefore().containsKey(key)
          && last.get().rowsBefore().get(key) != storeRows) {
        problems.add(
            String.format(
                "operator %d store %s holds %d rows, but %d before the "
                    + "repartition to %d partitions",
                spec.operatorId(),
                spec.storeName(),
                storeRows,
                last.get().rowsBefore().get(key),
                last.get().toPartitions()));
      }
    }
    return new VerificationReport(files.root().toString(), layout.partitions(), rows, problems);
  }

  private static String rootMessage(Throwable t) {
    Throwable root = t;
    while (root.getCause() != null && root.getCause() != root) {
      root = root.getCause();
    }
    return root.getMessage() == null ? root.toString() : root.getMessage();
  }
}
