package io.stateshift.spark;

import java.lang.reflect.Field;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.execution.streaming.MicroBatchExecution;
import org.apache.spark.sql.execution.streaming.StreamExecution;
import org.apache.spark.sql.execution.streaming.TriggerExecutor;
import org.apache.spark.sql.execution.streaming.WatermarkPropagator$;

/**
 * Spark 3.5's calls into a running query (spark-common's QueryCalls on the other lines): the
 * query's session and its trigger executor are private fields there, read and set by reflection.
 */
final class QueryCalls {
  private static final Field SESSION = field(StreamExecution.class, "sparkSessionForStream");
  private static final Field TRIGGER_EXECUTOR = field(MicroBatchExecution.class, "triggerExecutor");
  private static final Field WATERMARK_PROPAGATOR =
      field(MicroBatchExecution.class, "watermarkPropagator");

  private QueryCalls() {}

  /** The session the query runs its batches in (its own clone of the user's). */
  static SparkSession session(StreamExecution execution) {
    try {
      return (SparkSession) SESSION.get(execution);
    } catch (IllegalAccessException e) {
      throw new IllegalStateException(e);
    }
  }

  /**
   * Wraps the query's trigger executor so that the planned batch runs first, then {@code change},
   * then the query continues as after a restart ({@link PendingBatchFirst}).
   */
  static void runPendingBatchFirst(MicroBatchExecution execution, Runnable change) {
    setTriggerExecutor(
        execution, new PendingBatchFirst(execution, execution.triggerExecutor(), change));
  }

  /**
   * Makes the query start over as a new run of it would: the batch runner reads the logs again
   * (3.5's does whenever the current batch id is -1), and the watermarks it propagated through the
   * old plan are forgotten (a new run's propagator holds none; the old entries would contradict the
   * batches planned after the repartition).
   */
  static void restartFromLogs(MicroBatchExecution execution) {
    try {
      WATERMARK_PROPAGATOR.set(
          execution, WatermarkPropagator$.MODULE$.apply(session(execution).sessionState().conf()));
    } catch (IllegalAccessException e) {
      throw new IllegalStateException(e);
    }
    execution.currentBatchId_$eq(-1L);
  }

  static void setTriggerExecutor(MicroBatchExecution execution, TriggerExecutor executor) {
    try {
      TRIGGER_EXECUTOR.set(execution, executor);
    } catch (IllegalAccessException e) {
      throw new IllegalStateException(e);
    }
  }

  private static Field field(Class<?> owner, String name) {
    try {
      Field field = owner.getDeclaredField(name);
      field.setAccessible(true);
      return field;
    } catch (NoSuchFieldException e) {
      throw new IllegalStateException(
          "This Spark 3.5's " + owner.getSimpleName() + " has no field " + name, e);
    }
  }
}
