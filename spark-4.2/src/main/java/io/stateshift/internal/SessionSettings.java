package io.stateshift.internal;

import org.apache.hadoop.conf.Configuration;
import org.apache.spark.SparkEnv;
import org.apache.spark.sql.SparkSession;

/**
 * Where stateshift reads its settings, so that they reach every process of a cluster: the session's
 * Hadoop configuration for files (credentials a user sets on the session, not only on the context),
 * and Spark's conf for switches that tasks read (a {@code -D} on the driver's command line never
 * reaches an executor).
 */
public final class SessionSettings {
  private SessionSettings() {}

  /** The Hadoop configuration of the session, as Spark's own file sources use it. */
  public static Configuration hadoopConf(SparkSession spark) {
    if (spark instanceof org.apache.spark.sql.classic.SparkSession classic) {
      return classic.sessionState().newHadoopConf();
    }
    return spark.sparkContext().hadoopConfiguration();
  }

  /**
   * A switch that tasks read: {@code spark.<name>} from the application's Spark conf (executors
   * receive it from the driver), else the JVM's system property {@code <name>} (kept for a local
   * run's {@code -D}), else the default.
   */
  static boolean taskFlag(String name, boolean fallback) {
    String value = null;
    SparkEnv env = SparkEnv.get();
    if (env != null) {
      value = env.conf().get("spark." + name, null);
    }
    if (value == null) {
      value = System.getProperty(name);
    }
    return value == null ? fallback : !"false".equalsIgnoreCase(value.trim());
  }
}
