package io.stateshift.spark.state;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.stateshift.RepartitionResult;
import io.stateshift.StateShift;
import io.stateshift.StateShiftException;
import io.stateshift.config.StateShiftConf;
import io.stateshift.testing.CheckpointDigest;
import io.stateshift.testing.SparkTestSession;
import io.stateshift.testing.StateStores;
import io.stateshift.testing.StatefulQueries;
import io.stateshift.testing.StreamRun;
import java.nio.file.Path;
import org.apache.spark.sql.SparkSession;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code spark.stateshift.prepare.cpuShare}: prepare's tasks wait after their work, the
 * repartition's never do, and a share out of range is refused with nothing written.
 */
class PrepareCpuShareTest {
  @TempDir Path tmp;

  @Test
  void prepareTasksWaitAndTheRepartitionsDoNot() {
    SparkSession spark = SparkTestSession.get().newSession();
    StreamRun run = new StreamRun(spark, tmp.resolve("input"));
    Path checkpoint = tmp.resolve("checkpoint");
    run.writeEvents(0, 300, 40);
    run.runAvailable(
        StatefulQueries.WINDOWED_COUNT,
        checkpoint,
        tmp.resolve("sink"),
        StateStores.HDFS.withPartitions(4));

    spark.conf().set(StateShiftConf.PREPARE_CPU_SHARE.key(), "0");
    var before = CheckpointDigest.of(checkpoint);
    assertThatThrownBy(
            () ->
                StateShift.get(spark).prepareState(checkpoint.toString()).toPartitions(6).execute())
        .isInstanceOfSatisfying(
            StateShiftException.class,
            e -> assertThat(e.reason()).isEqualTo(StateShiftException.Reason.INVALID_ARGUMENT))
        .hasMessageContaining(StateShiftConf.PREPARE_CPU_SHARE.key())
        .hasMessageContaining("Nothing was written");
    assertThat(CheckpointDigest.of(checkpoint)).isEqualTo(before);

    spark.conf().set(StateShiftConf.PREPARE_CPU_SHARE.key(), "0.2");
    long waited = TaskThrottle.waitedMillis();
    StateShift.get(spark).prepareState(checkpoint.toString()).toPartitions(6).execute();
    long afterPrepare = TaskThrottle.waitedMillis();
    assertThat(afterPrepare).isGreaterThan(waited);
    assertThat(spark.sparkContext().getLocalProperty(StateShiftConf.PREPARE_CPU_SHARE.key()))
        .isNull();

    RepartitionResult result =
        StateShift.get(spark).repartitionState(checkpoint.toString()).toPartitions(6).execute();
    assertThat(result.path().prepared()).isTrue();
    assertThat(TaskThrottle.waitedMillis()).isEqualTo(afterPrepare);
  }
}
