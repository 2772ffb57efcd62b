package io.stateshift.internal;

import org.apache.hadoop.conf.Configuration;
import org.apache.spark.sql.SparkSession;

/**
 * The session's Hadoop configuration, where stateshift finds the file system settings (credentials
 * a user sets on the session, not only on the context). stateshift's own settings are declared in
 * {@link io.stateshift.config.StateShiftConf}.
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
}
