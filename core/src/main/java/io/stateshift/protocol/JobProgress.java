package io.stateshift.protocol;

import io.stateshift.checkpoint.spi.Redistribution;
import io.stateshift.config.StateShiftConf;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Consumer;
import org.apache.spark.Resubmitted$;
import org.apache.spark.Success$;
import org.apache.spark.scheduler.SparkListener;
import org.apache.spark.scheduler.SparkListenerJobStart;
import org.apache.spark.scheduler.SparkListenerTaskEnd;
import org.apache.spark.scheduler.SparkListenerTaskStart;
import org.apache.spark.scheduler.StageInfo;
import org.apache.spark.sql.SparkSession;

/**
 * Reports task progress of the jobs stateshift runs, as "reading 3/8" lines, at most twice a
 * second, and counts their running tasks: when a job fails, Spark returns at the first failed task
 * while its other tasks go on writing their staged files, so whoever removes the attempt's files
 * waits for them first ({@link #cancelAndAwaitTasks}).
 */
final class JobProgress extends SparkListener implements AutoCloseable {

  private final SparkSession spark;
  private final String jobGroup;
  private final Consumer<String> sink;
  private final Map<Integer, String> stageNames = new ConcurrentHashMap<>();
  private final Map<Integer, Integer> stageTotals = new ConcurrentHashMap<>();

  /** Per stage, the partitions a task finished: a task run again (executor lost) counts once. */
  private final Map<Integer, Set<Integer>> stageDone = new ConcurrentHashMap<>();

  private volatile long lastReport;
  private final AtomicInteger running = new AtomicInteger();

  JobProgress(SparkSession spark, String jobGroup, Consumer<String> sink) {
    this.spark = spark;
    this.jobGroup = jobGroup;
    this.sink = sink;
    spark.sparkContext().addSparkListener(this);
  }

  @Override
  public void onJobStart(SparkListenerJobStart jobStart) {
    String group =
        jobStart.properties() == null
            ? null
            : jobStart.properties().getProperty("spark.jobGroup.id");
    if (!jobGroup.equals(group)) {
      return;
    }
    String label = jobStart.properties().getProperty(Redistribution.PROGRESS_LABEL);
    int lowest = Integer.MAX_VALUE;
    // walked by hand: Scala 2.12 and 2.13 share no undeprecated converter
    List<StageInfo> stages = new ArrayList<>();
    for (scala.collection.Iterator<StageInfo> it = jobStart.stageInfos().iterator();
        it.hasNext(); ) {
      StageInfo stage = it.next();
      stages.add(stage);
      lowest = Math.min(lowest, stage.stageId());
    }
    for (StageInfo stage : stages) {
      boolean first = stage.stageId() == lowest && jobStart.stageInfos().size() > 1;
      stageNames.put(
          stage.stageId(),
          label != null ? label : first ? "reading state partitions" : "writing state partitions");
      stageTotals.put(stage.stageId(), stage.numTasks());
      stageDone.put(stage.stageId(), ConcurrentHashMap.newKeySet());
    }
  }

  @Override
  public void onTaskStart(SparkListenerTaskStart taskStart) {
    if (stageDone.containsKey(taskStart.stageId())) {
      running.incrementAndGet();
    }
  }

  @Override
  public void onTaskEnd(SparkListenerTaskEnd taskEnd) {
    Set<Integer> done = stageDone.get(taskEnd.stageId());
    if (done == null) {
      return;
    }
    if (!(taskEnd.reason() instanceof Resubmitted$)) {
      // Resubmitted: a finished task whose output went with its executor, ended a second time
      // (it did not start again)
      running.decrementAndGet();
    }
    // A failed or lost task runs again, and a stage attempt after a lost executor runs the
    // partitions whose output was lost again: each partition counts once, when it first succeeds.
    if (!(taskEnd.reason() instanceof Success$)) {
      return;
    }
    int partition = taskEnd.taskInfo().partitionId();
    if (!done.add(partition >= 0 ? partition : taskEnd.taskInfo().index())) {
      return;
    }
    int now = done.size();
    int total = stageTotals.get(taskEnd.stageId());
    long time = System.currentTimeMillis();
    if (now == total || time - lastReport > 500) {
      lastReport = time;
      sink.accept(stageNames.get(taskEnd.stageId()) + ": " + now + "/" + total);
    }
  }

  /**
   * After a failed job: cancels the rest of the group and returns once none of its tasks runs any
   * more (a task started is counted once the listener bus has delivered its start). Returns false
   * if some still ran after {@code spark.stateshift.taskDrainMs} ms.
   */
  boolean cancelAndAwaitTasks() {
    spark.sparkContext().cancelJobGroup(jobGroup);
    long deadline = System.currentTimeMillis() + StateShiftConf.TASK_DRAIN_MS.from(spark);
    while (true) {
      try {
        // every start and end posted so far has reached this listener
        spark.sparkContext().listenerBus().waitUntilEmpty(10_000);
        if (running.get() <= 0) {
          return true;
        }
      } catch (java.util.concurrent.TimeoutException e) {
        // a busy bus: look again
      }
      if (System.currentTimeMillis() > deadline) {
        return false;
      }
      try {
        Thread.sleep(20);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        return false;
      }
    }
  }

  /** The group's tasks started and not yet ended, as far as the listener bus has delivered. */
  int runningTasks() {
    return running.get();
  }

  @Override
  public void close() {
    spark.sparkContext().removeSparkListener(this);
  }
}
