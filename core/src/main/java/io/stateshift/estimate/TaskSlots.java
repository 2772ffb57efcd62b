package io.stateshift.estimate;

import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.apache.spark.SparkConf;
import org.apache.spark.SparkContext;
import org.apache.spark.sql.SparkSession;

/**
 * How many tasks the session runs at once, and where that figure comes from.
 *
 * @param count tasks at once (cores over {@code spark.task.cpus}), at least 1
 * @param source where the cores were read: the local master, the executor settings, or Spark's
 *     default parallelism
 */
public record TaskSlots(int count, String source) {
  private static final Pattern LOCAL = Pattern.compile("local(?:\\[(\\*|\\d+)(?:,\\s*\\d+)?])?");
  private static final Pattern LOCAL_CLUSTER =
      Pattern.compile("local-cluster\\[\\s*(\\d+)\\s*,\\s*(\\d+)\\s*,.*]");

  public TaskSlots {
    count = Math.max(1, count);
  }

  /** The session's task slots. */
  public static TaskSlots of(SparkSession spark) {
    SparkContext context = spark.sparkContext();
    return of(context.master(), context.getConf(), context.defaultParallelism());
  }

  /**
   * From the master URL and the settings: {@code local[N]} is N cores; on a cluster, {@code
   * spark.executor.instances} x {@code spark.executor.cores} where both are set, else Spark's
   * default parallelism (the cores of the executors registered so far).
   */
  static TaskSlots of(String master, SparkConf conf, int defaultParallelism) {
    int taskCpus = Math.max(1, conf.getInt("spark.task.cpus", 1));
    String perTask = taskCpus > 1 ? " / spark.task.cpus " + taskCpus : "";
    Matcher local = LOCAL.matcher(master);
    if (local.matches()) {
      String n = local.group(1);
      int cores =
          n == null ? 1 : n.equals("*") ? Runtime.getRuntime().availableProcessors() : parse(n);
      return new TaskSlots(cores / taskCpus, "master " + master + perTask);
    }
    Matcher localCluster = LOCAL_CLUSTER.matcher(master);
    if (localCluster.matches()) {
      int cores = parse(localCluster.group(1)) * parse(localCluster.group(2));
      return new TaskSlots(cores / taskCpus, "master " + master + perTask);
    }
    if (conf.contains("spark.executor.instances") && conf.contains("spark.executor.cores")) {
      int executors = conf.getInt("spark.executor.instances", 1);
      int cores = conf.getInt("spark.executor.cores", 1);
      return new TaskSlots(
          executors * cores / taskCpus,
          "spark.executor.instances " + executors + " x spark.executor.cores " + cores + perTask);
    }
    return new TaskSlots(
        defaultParallelism,
        "Spark's defaultParallelism (the executors' cores registered so far; set "
            + "spark.executor.instances and spark.executor.cores for the cluster's full size)");
  }

  private static int parse(String digits) {
    return Integer.parseInt(digits);
  }
}
