package io.stateshift.spark;

import io.stateshift.checkpoint.CheckpointFiles;
import io.stateshift.checkpoint.SessionSettings;
import io.stateshift.checkpoint.spi.StreamingQueryInfo;
import java.util.Optional;
import java.util.UUID;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.execution.streaming.ProcessingTimeTrigger;
import org.apache.spark.sql.execution.streaming.runtime.StreamExecution;

/**
 * What a listener cannot read from progress events: the trigger interval and checkpoint of a
 * running query, looked up among the queries active in this Spark application.
 */
public final class StreamIntrospection {
  /** A running query's trigger interval (0 when it has none) and resolved checkpoint. */
  private StreamIntrospection() {}

  public static Optional<StreamingQueryInfo> describe(UUID queryId) {
    SparkSession session =
        SparkSession.getActiveSession().isDefined()
            ? SparkSession.getActiveSession().get()
            : SparkSession.getDefaultSession().isDefined()
                ? SparkSession.getDefaultSession().get()
                : null;
    if (!(session instanceof org.apache.spark.sql.classic.SparkSession)) {
      return Optional.empty();
    }
    StreamExecution execution =
        org.apache.spark.sql.classic.SparkSession.class
            .cast(session)
            .sharedState()
            .activeStreamingQueries()
            .get(queryId);
    if (execution == null) {
      return Optional.empty();
    }
    long interval = execution.trigger() instanceof ProcessingTimeTrigger t ? t.intervalMs() : 0;
    return Optional.of(new StreamingQueryInfo(interval, execution.resolvedCheckpointRoot()));
  }

  /** The checkpoint files of a query, opened with the session's Hadoop conf. */
  public static CheckpointFiles checkpointFiles(String checkpointRoot) {
    return CheckpointFiles.at(checkpointRoot, SessionSettings.hadoopConf(SparkSession.active()));
  }
}
