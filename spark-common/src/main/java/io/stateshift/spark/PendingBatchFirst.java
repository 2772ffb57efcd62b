package io.stateshift.spark;

import java.lang.reflect.Method;
import org.apache.spark.sql.execution.streaming.runtime.MicroBatchExecution;
import org.apache.spark.sql.execution.streaming.runtime.MicroBatchExecutionContext;
import org.apache.spark.sql.execution.streaming.runtime.TriggerExecutor;
import scala.Function1;

/**
 * Wraps a query's trigger executor when the query restarts with a planned but uncommitted batch and
 * a new state partition count or provider: the pending batch runs first, exactly as planned (same
 * offsets, old layout and provider, so an exactly-once sink sees it once), then the state is
 * repartitioned or migrated, then the query re-reads its logs, as a restart would, and continues
 * with the query's own trigger.
 */
final class PendingBatchFirst implements TriggerExecutor {
  private final MicroBatchExecution execution;
  private final TriggerExecutor original;
  private final Runnable repartition;
  private MicroBatchExecutionContext next;

  PendingBatchFirst(MicroBatchExecution execution, TriggerExecutor original, Runnable repartition) {
    this.execution = execution;
    this.original = original;
    this.repartition = repartition;
    TriggerExecutor.$init$(this);
  }

  @Override
  public void execute(Function1<MicroBatchExecutionContext, Object> batchRunner) {
    boolean active = (Boolean) batchRunner.apply(next); // the pending batch, old layout
    if (!active) {
      return;
    }
    repartition.run();
    // From here the query is as if restarted: hand back its own executor, whose type Spark checks
    // (an AvailableNow query ends when its executor finds no more data).
    execution.triggerExecutor_$eq(original);
    original.setNextBatch(reinitialize());
    original.execute(batchRunner);
  }

  /**
   * The query's own start-up step: read the offset and commit logs again, now in the new layout.
   */
  private MicroBatchExecutionContext reinitialize() {
    try {
      Method init =
          MicroBatchExecution.class.getDeclaredMethod(
              "initializeExecution", org.apache.spark.sql.classic.SparkSession.class);
      init.setAccessible(true);
      return (MicroBatchExecutionContext) init.invoke(execution, execution.sparkSessionForStream());
    } catch (java.lang.reflect.InvocationTargetException e) {
      throw e.getCause() instanceof RuntimeException r
          ? r
          : new IllegalStateException(e.getCause());
    } catch (ReflectiveOperationException e) {
      throw new IllegalStateException(
          "This Spark version's MicroBatchExecution has no "
              + "initializeExecution(SparkSession); stateshift's on-demand path needs updating.",
          e);
    }
  }

  @Override
  public void setNextBatch(MicroBatchExecutionContext context) {
    next = context;
    original.setNextBatch(context);
  }

  @Override
  public MicroBatchExecutionContext
      org$apache$spark$sql$execution$streaming$runtime$TriggerExecutor$$execCtx() {
    return next;
  }

  @Override
  public void org$apache$spark$sql$execution$streaming$runtime$TriggerExecutor$$execCtx_$eq(
      MicroBatchExecutionContext context) {
    next = context;
  }
}
