package io.stateshift;

import static org.assertj.core.api.Assertions.assertThat;

import io.stateshift.cli.StateShiftCli;
import io.stateshift.testing.CheckpointDigest;
import io.stateshift.testing.SparkTestSession;
import io.stateshift.testing.StateStores;
import io.stateshift.testing.StatefulQueries;
import io.stateshift.testing.StreamRun;
import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.Map;
import org.apache.spark.sql.SparkSession;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * What Spark 3.5 lacks is refused before anything is written: {@code migrate --format-version 2}
 * (state checkpoint format v2 came with Spark 4.0) exits 2 with the reason, and the checkpoint,
 * written by 3.5's Spark, stays byte for byte as it was and still starts.
 */
class CheckpointFormatV2RefusedTest {
  private final SparkSession spark = SparkTestSession.get();

  @TempDir Path tmp;

  @Test
  @Tag("cover")
  void migrationToFormatV2IsRefusedAndTheCheckpointIsUnchanged() {
    StreamRun run = new StreamRun(spark, tmp.resolve("input"));
    run.writeEvents(0, 200, 20);
    Path checkpoint = tmp.resolve("checkpoint");
    Map<String, String> conf = StateStores.ROCKSDB.withPartitions(3);
    run.runAvailable(StatefulQueries.GROUPED_COUNT, checkpoint, tmp.resolve("sink"), conf);
    Map<String, String> before = CheckpointDigest.of(checkpoint);

    ByteArrayOutputStream out = new ByteArrayOutputStream();
    ByteArrayOutputStream err = new ByteArrayOutputStream();
    int exit =
        new StateShiftCli(
                new PrintStream(out, true, StandardCharsets.UTF_8),
                new PrintStream(err, true, StandardCharsets.UTF_8))
            .run(
                new String[] {
                  "migrate", "--checkpoint", checkpoint.toString(), "--format-version", "2"
                });

    assertThat(exit).as("stderr: %s", err).isEqualTo(2);
    assertThat(err.toString(StandardCharsets.UTF_8))
        .contains("Spark 3.5 has no format v2")
        .contains("The checkpoint was not changed");
    assertThat(CheckpointDigest.of(checkpoint)).isEqualTo(before);

    run.writeEvents(1, 200, 20);
    assertThat(
            run.runAvailable(StatefulQueries.GROUPED_COUNT, checkpoint, tmp.resolve("sink"), conf))
        .isNotEmpty();
  }
}
