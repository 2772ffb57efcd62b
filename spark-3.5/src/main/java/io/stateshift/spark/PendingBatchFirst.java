package io.stateshift.spark;

import org.apache.spark.sql.execution.streaming.MicroBatchExecution;
import org.apache.spark.sql.execution.streaming.TriggerExecutor;
import scala.Function0;

/**
 * Spark 3.5's trigger executor wrapper (spark-common's PendingBatchFirst on the other lines): when
 * the query restarts with a planned but uncommitted batch and a new state partition count or
 * provider, the pending batch runs first, exactly as planned (the batch runner's first call reads
 * the logs and runs it), then the state is repartitioned or migrated, then the query reads its logs
 * again, as a restart would (3.5's runner does so whenever the current batch id is -1), and
 * continues with the query's own trigger.
 */
final class PendingBatchFirst implements TriggerExecutor {
  private final MicroBatchExecution execution;
  private final TriggerExecutor original;
  private final Runnable repartition;

  PendingBatchFirst(MicroBatchExecution execution, TriggerExecutor original, Runnable repartition) {
    this.execution = execution;
    this.original = original;
    this.repartition = repartition;
  }

  @Override
  public void execute(Function0<Object> batchRunner) {
    boolean active = (Boolean) batchRunner.apply(); // the pending batch, old layout
    if (!active) {
      return;
    }
    repartition.run();
    // From here the query is as if restarted: its own executor, whose type Spark checks (an
    // AvailableNow query ends when its executor finds no more data), and its logs read again.
    QueryCalls.setTriggerExecutor(execution, original);
    QueryCalls.restartFromLogs(execution);
    original.execute(batchRunner);
  }
}
