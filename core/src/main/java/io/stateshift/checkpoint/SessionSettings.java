package io.stateshift.checkpoint;

import io.stateshift.checkpoint.spi.SparkLines;
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
    return SparkLines.get().hadoopConf(spark);
  }
}
