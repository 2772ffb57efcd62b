package io.stateshift.internal;

import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Consumer;
import org.apache.spark.scheduler.SparkListener;
import org.apache.spark.scheduler.SparkListenerJobStart;
import org.apache.spark.scheduler.SparkListenerTaskEnd;
import org.apache.spark.scheduler.StageInfo;
import org.apache.spark.sql.SparkSession;
import scala.jdk.javaapi.CollectionConverters;

/** Reports task progress of the jobs stateshift runs, as "reading 3/8" lines, at most twice a second. */
final class JobProgress extends SparkListener implements AutoCloseable {
  private final SparkSession spark;
  private final String jobGroup;
  private final Consumer<String> sink;
  private final Map<Integer, String> stageNames = new ConcurrentHashMap<>();
  private final Map<Integer, Integer> stageTotals = new ConcurrentHashMap<>();
  private final Map<Integer, AtomicInteger> stageDone = new ConcurrentHashMap<>();
  private volatile long lastReport;

  JobProgress(SparkSession spark, String jobGroup, Consumer<String> sink) {
    this.spark = spark;
    this.jobGroup = jobGroup;
    this.sink = sink;
    spark.sparkContext().addSparkListener(this);
  }

  @Override
  public void onJobStart(SparkListenerJobStart jobStart) {
    String group = jobStart.properties() == null
        ? null : jobStart.properties().getProperty("spark.jobGroup.id");
    if (!jobGroup.equals(group)) {
      return;
    }
    int lowest = Integer.MAX_VALUE;
    for (StageInfo stage : CollectionConverters.asJava(jobStart.stageInfos())) {
      lowest = Math.min(lowest, stage.stageId());
    }
    for (StageInfo stage : CollectionConverters.asJava(jobStart.stageInfos())) {
      boolean first = stage.stageId() == lowest && jobStart.stageInfos().size() > 1;
      stageNames.put(stage.stageId(), first ? "reading state partitions" : "writing state partitions");
      stageTotals.put(stage.stageId(), stage.numTasks());
      stageDone.put(stage.stageId(), new AtomicInteger());
    }
  }

  @Override
  public void onTaskEnd(SparkListenerTaskEnd taskEnd) {
    AtomicInteger done = stageDone.get(taskEnd.stageId());
    if (done == null) {
      return;
    }
    int now = done.incrementAndGet();
    int total = stageTotals.get(taskEnd.stageId());
    long time = System.currentTimeMillis();
    if (now == total || time - lastReport > 500) {
      lastReport = time;
      sink.accept(stageNames.get(taskEnd.stageId()) + ": " + now + "/" + total);
    }
  }

  @Override
  public void close() {
    spark.sparkContext().removeSparkListener(this);
  }
}
