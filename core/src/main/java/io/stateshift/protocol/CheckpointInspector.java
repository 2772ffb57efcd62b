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
                        + (j.changesProvider()
                            ? "; run migrate again to finish or undo it"
                            : "; run repartition again to finish or undo it"));
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
        interrupted,
        layout.checkpointIdsEnabled() ? 2 : 1,
        layout.rocksDb() ? Optional.of(lastVersionIsChangelog(files, layout)) : Optional.empty());
  }

  /**
   * Whether the last committed state version of the first store's partition 0 is a changelog file
   * ({@code <version>.changelog}, or {@code <version>_<id>.changelog} under format v2): RocksDB
   * writes one for every version when changelog checkpointing is on, and none when it is off.
   */
  private static boolean lastVersionIsChangelog(CheckpointFiles files, StateLayout layout) {
    if (layout.stores().isEmpty()) {
      return false;
    }
    String version = Long.toString(layout.lastCommitted() + 1);
    return files.list(files.path(layout.stores().get(0).dir(0))).stream()
        .map(status -> status.getPath().getName())
        .anyMatch(
            name ->
                name.endsWith(".changelog")
                    && (name.equals(version + ".changelog") || name.startsWith(version + "_")));
  }
}
