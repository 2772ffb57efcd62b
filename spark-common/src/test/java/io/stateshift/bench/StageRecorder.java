package io.stateshift.bench;

import java.util.ArrayList;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.TimeoutException;
import org.apache.spark.executor.TaskMetrics;
import org.apache.spark.scheduler.SparkListener;
import org.apache.spark.scheduler.SparkListenerStageCompleted;
import org.apache.spark.scheduler.StageInfo;
import org.apache.spark.sql.SparkSession;

/**
 * Records every Spark stage that completes during a timing: wall time, tasks, summed task run and
 * CPU time, GC and shuffle bytes. This is how the benchmark tells a read stage from a write stage.
 */
final class StageRecorder extends SparkListener {
  private final ConcurrentLinkedQueue<Map<String, Object>> stages = new ConcurrentLinkedQueue<>();

  @Override
  public void onStageCompleted(SparkListenerStageCompleted event) {
    StageInfo info = event.stageInfo();
    Map<String, Object> s = new LinkedHashMap<>();
    s.put("stageId", info.stageId());
    s.put("name", info.name());
    s.put("tasks", info.numTasks());
    long submitted = info.submissionTime().isDefined() ? (Long) info.submissionTime().get() : -1;
    long completed = info.completionTime().isDefined() ? (Long) info.completionTime().get() : -1;
    s.put("wallMillis", submitted >= 0 && completed >= 0 ? completed - submitted : -1);
    TaskMetrics m = info.taskMetrics();
    if (m != null) {
      s.put("taskRunMillis", m.executorRunTime());
      s.put("taskCpuMillis", m.executorCpuTime() / 1_000_000);
      s.put("gcMillis", m.jvmGCTime());
      s.put("shuffleWriteBytes", m.shuffleWriteMetrics().bytesWritten());
      s.put("shuffleReadBytes", m.shuffleReadMetrics().totalBytesRead());
      s.put("spilledBytes", m.diskBytesSpilled());
    }
    if (info.failureReason().isDefined()) {
      s.put("failure", info.failureReason().get());
    }
    stages.add(s);
  }

  void reset(SparkSession spark) {
    drain(spark);
    stages.clear();
  }

  /** The stages completed since the last reset, in stage order, once the listener bus is idle. */
  List<Map<String, Object>> drain(SparkSession spark) {
    try {
      spark.sparkContext().listenerBus().waitUntilEmpty(30_000);
    } catch (TimeoutException e) {
      System.err.println(
          "bench: Spark listener bus still busy after 30 s; stage list may be short");
    }
    List<Map<String, Object>> out = new ArrayList<>(stages);
    out.sort(Comparator.comparingInt(s -> (Integer) s.get("stageId")));
    return out;
  }
}
