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
    RepartitionJournal.read(files)
        .ifPresent(
            j ->
                problems.add(
                    "an interrupted "
                        + (j.phase() == RepartitionJournal.Phase.ROLLING_BACK
                            ? "rollback"
                            : "repartition")
                        + " (attempt "
                        + j.attemptId()
                        + ", phase "
                        + j.phase()
                        + ") must be finished: run "
                        + "'stateshift repartition --partitions "
                        + j.toPartitions()
                        + "' again"));
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
