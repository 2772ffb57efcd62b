package io.stateshift.spark.state;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.stateshift.RepartitionResult;
import io.stateshift.StateShift;
import io.stateshift.protocol.FailPoints;
import io.stateshift.testing.SparkTestSession;
import io.stateshift.testing.StateStores;
import io.stateshift.testing.StatefulQueries;
import io.stateshift.testing.StreamRun;
import java.io.File;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.stream.Stream;
import org.apache.spark.network.util.JavaUtils;
import org.apache.spark.sql.SparkSession;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Spark's recursive delete runs in-process exactly while stateshift's tasks run, deletes what
 * Spark's {@code rm -rf} path deletes (the oracle), and the switch can be turned off. Spark 4.0 has
 * no such switch (tag in-process-deletes, left out there).
 */
@Tag("in-process-deletes")
class InProcessDeletesTest {
  @TempDir Path tmp;

  @Test
  void flagIsOffWhileAnyTaskHoldsItAndBackAfterTheLast() {
    boolean before = InProcessDeletes.flagValue();
    InProcessDeletes.acquire();
    InProcessDeletes.acquire();
    assertThat(InProcessDeletes.flagValue()).isFalse();
    InProcessDeletes.release();
    assertThat(InProcessDeletes.flagValue()).as("one task still runs").isFalse();
    InProcessDeletes.release();
    assertThat(InProcessDeletes.flagValue()).isEqualTo(before);
    assertThat(InProcessDeletes.active()).isFalse();
    assertThatThrownBy(InProcessDeletes::release).isInstanceOf(IllegalStateException.class);
  }

  @Test
  void deletesWhatSparksProcessPathDeletesAndNoLinkTarget() throws Exception {
    assertThat(InProcessDeletes.flagValue())
        .as("this test compares with Spark's Unix path")
        .isTrue();
    Path outside = Files.createDirectories(tmp.resolve("outside"));
    Files.writeString(outside.resolve("kept.txt"), "must survive");
    Path viaProcess = tree(tmp.resolve("rm"), outside);
    Path inProcess = tree(tmp.resolve("java"), outside);

    JavaUtils.deleteRecursively(viaProcess.toFile());
    InProcessDeletes.acquire();
    try {
      JavaUtils.deleteRecursively(inProcess.toFile());
    } finally {
      InProcessDeletes.release();
    }

    assertThat(viaProcess).doesNotExist();
    assertThat(inProcess).doesNotExist();
    assertThat(outside.resolve("kept.txt")).hasContent("must survive");
    // a folder that is already gone is no error on either path
    JavaUtils.deleteRecursively(new File(tmp.toFile(), "never-there"));
  }

  @Test
  void isOnDuringARepartitionsTasksOnlyAndCanBeTurnedOff() {
    SparkSession spark = SparkTestSession.get();
    StreamRun run = new StreamRun(spark, tmp.resolve("input"));
    run.writeEvents(0, 300, 40);
    Path checkpoint = tmp.resolve("checkpoint");
    run.runAvailable(
        StatefulQueries.WINDOWED_COUNT,
        checkpoint,
        tmp.resolve("sink"),
        StateStores.ROCKSDB.withPartitions(3));

    assertThat(flagSeenInsideTasks(spark, checkpoint, 6)).containsOnly(false);
    assertThat(InProcessDeletes.flagValue()).as("restored after the job").isTrue();

    spark.conf().set(InProcessDeletes.CONF, "false");
    try {
      assertThat(flagSeenInsideTasks(spark, checkpoint, 2)).containsOnly(true);
    } finally {
      spark.conf().unset(InProcessDeletes.CONF);
    }
  }

  /** Repartitions and returns {@code InProcessDeletes.flagValue()} as a write task saw it. */
  private static List<Boolean> flagSeenInsideTasks(SparkSession spark, Path checkpoint, int to) {
    List<Boolean> seen = new ArrayList<>();
    FailPoints.observe(
        point -> {
          if (point.equals("staging-task")) {
            synchronized (seen) {
              seen.add(InProcessDeletes.flagValue());
            }
          }
        });
    RepartitionResult result;
    try {
      result =
          StateShift.get(spark)
              .repartitionState(checkpoint.toString())
              .toPartitions(to)
              .assumeStopped()
              .execute();
    } finally {
      FailPoints.observe(null);
    }
    assertThat(result.toPartitions()).isEqualTo(to);
    assertThat(result.rowsMoved()).isPositive();
    assertThat(seen).isNotEmpty();
    return seen;
  }

  /** Files, nested folders and a link to {@code outside}, which a delete must not follow. */
  private static Path tree(Path root, Path outside) throws IOException {
    Files.createDirectories(root.resolve("a/b/c"));
    Files.writeString(root.resolve("a/one.sst"), "1");
    Files.writeString(root.resolve("a/b/c/two.log"), "2");
    Files.createSymbolicLink(root.resolve("a/b/link"), outside);
    try (Stream<Path> all = Files.walk(root)) {
      assertThat(all.count()).isEqualTo(7);
    }
    return root;
  }
}
