package io.stateshift.protocol;

import io.stateshift.CheckpointReport;
import io.stateshift.checkpoint.Checkpoint;
import io.stateshift.checkpoint.CheckpointFiles;
import io.stateshift.checkpoint.SessionSettings;
import io.stateshift.checkpoint.StateLayout;
import io.stateshift.checkpoint.StatefulOperator;
import io.stateshift.checkpoint.StoreSpec;
import io.stateshift.checkpoint.spi.SparkLines;
import io.stateshift.checkpoint.spi.StateCount;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import org.apache.spark.sql.SparkSession;

/** Builds a {@link CheckpointReport}: the checkpoint's logs plus a census of its state. */
public final class CheckpointInspector {
  private CheckpointInspector() {}

  public static CheckpointReport inspect(SparkSession spark, String checkpointLocation) {
    CheckpointFiles files =
        CheckpointFiles.at(checkpointLocation, SessionSettings.hadoopConf(spark));
    Checkpoint checkpoint = Checkpoint.load(files);
    Optional<String> interrupted =
        RepartitionJournal.read(files)
            .map(
                j ->
                    "attempt "
                        + j.attemptId()
                        + " to "
                        + j.toPartitions()
                        + " partitions stopped in "
                        + "phase "
                        + j.phase()
                        + "; run repartition again to finish or undo it");
    StateLayout layout = StateLayout.read(spark, checkpoint, false);
    List<StateCount> counts = SparkLines.get().countState(spark, layout);
    List<CheckpointReport.OperatorReport> operators = new ArrayList<>();
    for (StatefulOperator op : layout.operators()) {
      List<CheckpointReport.StoreReport> stores = new ArrayList<>();
      for (StoreSpec spec : layout.stores()) {
        if (spec.operatorId() != op.id()) {
          continue;
        }
        long[] rows = new long[layout.partitions()];
        long[] bytes = new long[layout.partitions()];
        long misplaced = 0;
        for (StateCount c : counts) {
          if (c.slot() == spec.slot()) {
            rows[c.partition()] = c.rows();
            bytes[c.partition()] = c.bytes();
            misplaced += c.misplaced();
          }
        }
        stores.add(new CheckpointReport.StoreReport(spec.storeName(), rows, bytes, misplaced));
      }
      operators.add(
          new CheckpointReport.OperatorReport(
              op.id(),
              op.name(),
              // supported operators have their stores in the layout (a join format 4 has none)
              StateLayout.SUPPORTED_OPERATORS.contains(op.name()) && !stores.isEmpty(),
              stores));
    }
    return new CheckpointReport(
        files.root().toString(),
        checkpoint.queryId(),
        checkpoint.lastPlannedBatch(),
        checkpoint.lastCommittedBatch(),
        layout.provider(),
        layout.partitions(),
        operators,
        interrupted);
  }
}
