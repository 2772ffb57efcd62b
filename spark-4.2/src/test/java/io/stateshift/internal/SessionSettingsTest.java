package io.stateshift.internal;

import static org.assertj.core.api.Assertions.assertThat;

import io.stateshift.testing.SparkTestSession;
import org.apache.spark.SparkEnv;
import org.apache.spark.sql.SparkSession;
import org.junit.jupiter.api.Test;

/**
 * Settings reach where they are read: a file system setting made on the session is in the Hadoop
 * configuration stateshift opens checkpoints with, and a task switch comes from Spark's conf (which
 * executors receive) before a system property.
 */
class SessionSettingsTest {
  private final SparkSession spark = SparkTestSession.get();

  @Test
  void aSettingMadeOnTheSessionIsInTheHadoopConfigurationOfCheckpointFiles() {
    String key = "fs.stateshift-test.session-only";
    spark.conf().set(key, "from-the-session");
    try {
      assertThat(spark.sparkContext().hadoopConfiguration().get(key)).isNull();
      assertThat(SessionSettings.hadoopConf(spark).get(key)).isEqualTo("from-the-session");
    } finally {
      spark.conf().unset(key);
    }
  }

  @Test
  void aTaskSwitchComesFromSparkConfThenTheSystemPropertyThenItsDefault() {
    String name = "stateshift.test.switch";
    assertThat(SessionSettings.taskFlag(name, true)).isTrue();
    System.setProperty(name, "false");
    try {
      assertThat(SessionSettings.taskFlag(name, true)).isFalse();
      SparkEnv.get().conf().set("spark." + name, "true");
      assertThat(SessionSettings.taskFlag(name, false)).as("Spark's conf first").isTrue();
    } finally {
      System.clearProperty(name);
      SparkEnv.get().conf().remove("spark." + name);
    }
  }
}
