package io.stateshift.spark;

import org.apache.spark.sql.execution.streaming.runtime.MicroBatchExecution;
import org.apache.spark.sql.execution.streaming.runtime.StreamExecution;

/**
 * The calls into a running query that differ between Spark lines (a line whose Spark differs
 * compiles its own copy of this class instead, with the same static methods; 3.5: spark-3.5).
 */
final class QueryCalls {
  private QueryCalls() {}

  /** The session the query runs its batches in (its own clone of the user's). */
  static org.apache.spark.sql.classic.SparkSession session(StreamExecution execution) {
    return execution.sparkSessionForStream();
  }

  /**
   * Wraps the query's trigger executor so that the planned batch runs first, then {@code change},
   * then the query continues as after a restart ({@link PendingBatchFirst}).
   */
  static void runPendingBatchFirst(MicroBatchExecution execution, Runnable change) {
    execution.triggerExecutor_$eq(
        new PendingBatchFirst(execution, execution.triggerExecutor(), change));
  }
}
