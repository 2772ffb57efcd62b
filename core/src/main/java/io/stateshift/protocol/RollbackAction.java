package io.stateshift.protocol;

import io.stateshift.RepartitionPlan;
import io.stateshift.checkpoint.Checkpoint;
import io.stateshift.checkpoint.CheckpointFiles;
import io.stateshift.checkpoint.SessionSettings;
import java.util.List;
import java.util.Optional;
import org.apache.spark.sql.SparkSession;

/** The public rollback call: runs {@link Rollback} and describes what it undid. */
public final class RollbackAction {
  private RollbackAction() {}

  public static RepartitionPlan run(
      SparkSession spark, String checkpointLocation, boolean assumeStopped) {
    CheckpointFiles files =
        CheckpointFiles.at(checkpointLocation, SessionSettings.hadoopConf(spark));
    RepartitionJournal undone = Rollback.run(spark, files, assumeStopped, message -> {});
    Checkpoint checkpoint = Checkpoint.load(files);
    return new RepartitionPlan(
        files.root().toString(),
        checkpoint.queryId(),
        "",
        undone.toPartitions(),
        undone.fromPartitions(),
        checkpoint.lastCommittedBatch(),
        undone.newBatch(),
        List.of(),
        Optional.empty());
  }
}
