package io.stateshift;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.stateshift.testing.CheckpointDigest;
import io.stateshift.testing.OperatorQueries;
import io.stateshift.testing.OperatorRun;
import io.stateshift.testing.SparkTestSession;
import io.stateshift.testing.StateStores;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import org.apache.spark.sql.SparkSession;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A line that cannot move transformWithState's state refuses it before anything is written: the
 * command's reason names the operator and the line, and the checkpoint, written by this line's
 * Spark, stays byte for byte as it was and still starts.
 */
class TransformWithStateRefusedTest {
  private final SparkSession spark = SparkTestSession.get();

  @TempDir Path tmp;

  @Test
  @Tag("cover")
  void transformWithStateIsRefusedAndTheCheckpointIsUnchanged() throws Exception {
    OperatorQueries query = OperatorQueries.TWS_EVENT_TIME;
    Map<String, String> conf = StateStores.ROCKSDB.withPartitions(3);
    OperatorRun run = new OperatorRun(spark, tmp.resolve("input"));
    Path checkpoint = tmp.resolve("checkpoint");
    Path sink = tmp.resolve("sink");
    run.writeRotatingEvents(0, 20);
    run.runAvailable(query, checkpoint, sink, conf);
    Map<String, String> before = CheckpointDigest.of(checkpoint);

    for (Runnable change :
        List.<Runnable>of(
            () ->
                StateShift.get(spark)
                    .repartitionState(checkpoint.toString())
                    .toPartitions(5)
                    .execute(),
            () ->
                StateShift.get(spark)
                    .repartitionState(checkpoint.toString())
                    .toPartitions(5)
                    .plan())) {
      assertThatThrownBy(change::run)
          .isInstanceOfSatisfying(
              StateShiftException.class,
              e ->
                  assertThat(e.reason()).isEqualTo(StateShiftException.Reason.UNSUPPORTED_OPERATOR))
          .hasMessageContaining("(transformWithState)")
          .hasMessageContaining("line cannot move transformWithState state")
          .hasMessageContaining("The checkpoint was not changed");
      assertThat(CheckpointDigest.of(checkpoint)).isEqualTo(before);
    }

    run.writeRotatingEvents(1, 20);
    assertThat(run.runAvailable(query, checkpoint, sink, conf)).isNotEmpty();
  }
}
