package io.stateshift.spark.state;

import io.stateshift.config.StateShiftConf;
import org.apache.spark.TaskContext;

/**
 * Holds a task of {@code prepare} back once its work is done, so that it keeps its core for at most
 * a share of the time ({@link StateShiftConf#PREPARE_CPU_SHARE}, which {@code prepare} puts in its
 * jobs' properties): a task that worked t waits t (1 - share) / share before it ends. While it
 * waits its core is free for a query running beside it; the repartition's own jobs never wait.
 */
final class TaskThrottle {
  private static final java.util.Set<Long> HELD =
      java.util.concurrent.ConcurrentHashMap.newKeySet();
  private static final java.util.concurrent.atomic.AtomicLong WAITED_MILLIS =
      new java.util.concurrent.atomic.AtomicLong();

  private TaskThrottle() {}

  /**
   * Called where a task starts (again later in the same task: no effect); does nothing outside a
   * throttled job.
   */
  static void untilThisTaskEnds() {
    TaskContext task = TaskContext.get();
    if (task == null || HELD.contains(task.taskAttemptId())) {
      return;
    }
    String property = task.getLocalProperty(StateShiftConf.PREPARE_CPU_SHARE.key());
    double share = property == null ? 1 : Double.parseDouble(property);
    if (!(share > 0 && share < 1)) {
      return;
    }
    long started = System.nanoTime();
    HELD.add(task.taskAttemptId());
    task.addTaskCompletionListener(
        (TaskContext done) -> {
          HELD.remove(done.taskAttemptId());
          if (done.isInterrupted()) {
            return; // a cancelled job: end at once
          }
          long busy = System.nanoTime() - started;
          long waitMillis = (long) (busy * (1 - share) / share / 1_000_000);
          WAITED_MILLIS.addAndGet(waitMillis);
          try {
            Thread.sleep(waitMillis);
          } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
          }
        });
  }

  /** What the tasks of this JVM waited in all, in milliseconds. */
  static long waitedMillis() {
    return WAITED_MILLIS.get();
  }
}
