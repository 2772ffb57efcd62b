package io.stateshift.checkpoint;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.stateshift.config.StateShiftConf;
import io.stateshift.testing.SparkTestSession;
import java.util.List;
import org.apache.spark.SparkEnv;
import org.apache.spark.api.java.JavaSparkContext;
import org.apache.spark.sql.SparkSession;
import org.junit.jupiter.api.Test;

/**
 * Settings reach where they are read: a file system setting made on the session is in the Hadoop
 * configuration stateshift opens checkpoints with; a task reads stateshift's settings from the
 * application's conf (which executors receive), the driver from the session's.
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
  void aTaskReadsASettingFromTheApplicationConfNeverFromASystemProperty() {
    StateShiftConf.Setting<Boolean> setting = StateShiftConf.ROCKSDB_READ_ONLY_SNAPSHOTS;
    JavaSparkContext jsc = JavaSparkContext.fromSparkContext(spark.sparkContext());
    System.setProperty(setting.key(), "false");
    try {
      assertThat(
              jsc.parallelize(List.of(1), 1)
                  .map(x -> StateShiftConf.ROCKSDB_READ_ONLY_SNAPSHOTS.inTask())
                  .collect())
          .as("a -D the driver got after Spark started does not reach tasks")
          .containsExactly(true);
      SparkEnv.get().conf().set(setting.key(), "false");
      assertThat(
              jsc.parallelize(List.of(1), 1)
                  .map(x -> StateShiftConf.ROCKSDB_READ_ONLY_SNAPSHOTS.inTask())
                  .collect())
          .containsExactly(false);
    } finally {
      System.clearProperty(setting.key());
      SparkEnv.get().conf().remove(setting.key());
    }
  }

  @Test
  void theDriverReadsTheSessionConfAndRefusesAValueOfTheWrongType() {
    StateShiftConf.Setting<Long> setting = StateShiftConf.LOCK_MAX_WAIT_MS;
    assertThat(setting.onDriver()).isEqualTo(60_000L);
    spark.conf().set(setting.key(), "1500");
    try {
      assertThat(setting.onDriver()).isEqualTo(1500L);
      spark.conf().set(setting.key(), "soon");
      assertThatThrownBy(setting::onDriver)
          .isInstanceOf(IllegalArgumentException.class)
          .hasMessageContaining(setting.key());
    } finally {
      spark.conf().unset(setting.key());
    }
  }
}
