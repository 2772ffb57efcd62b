package io.stateshift;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.stateshift.checkpoint.CheckpointFiles;
import io.stateshift.protocol.CheckpointLock;
import io.stateshift.testing.CheckpointDigest;
import io.stateshift.testing.SparkTestSession;
import io.stateshift.testing.StateStores;
import io.stateshift.testing.StatefulQueries;
import io.stateshift.testing.StreamRun;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.streaming.StreamingQuery;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Reversible and exclusive: rollback, verify, backups, locks and running queries. */
class RollbackAndVerifyTest {
  private final SparkSession spark = SparkTestSession.get();

  @TempDir Path tmp;

  private StreamRun checkpointWith(StateStores store, int partitions) {
    StreamRun run = new StreamRun(spark, tmp.resolve("input"));
    run.writeEvents(0, 300, 30);
    run.writeEvents(1, 300, 30);
    run.runAvailable(
        StatefulQueries.WINDOWED_COUNT,
        tmp.resolve("checkpoint"),
        tmp.resolve("sink"),
        store.withPartitions(partitions));
    return run;
  }

  @Test
  void rollbackRestoresTheLayoutByteForByteAndTheQueryRunsOnIt() {
    checkpointWith(StateStores.ROCKSDB, 6);
    Path checkpoint = tmp.resolve("checkpoint");
    Map<String, String> before = withoutStateshiftFolder(CheckpointDigest.of(checkpoint));
    Path backup = tmp.resolve("backup");

    RepartitionResult result =
        StateShift.get(spark)
            .repartitionState(checkpoint.toString())
            .toPartitions(2)
            .backupTo(backup.toString())
            .execute();
    assertThat(result.toPartitions()).isEqualTo(2);
    assertThat(checkpoint.resolve("state/0/5")).doesNotExist(); // not left looking live
    assertThat(backup).isDirectoryRecursivelyContaining("glob:**/state/0/5/*.zip");
    VerificationReport verified = StateShift.get(spark).verify(checkpoint.toString());
    assertThat(verified.problems()).isEmpty();
    assertThat(verified.partitions()).isEqualTo(2);

    RepartitionPlan undone = StateShift.get(spark).rollbackRepartition(checkpoint.toString());
    assertThat(undone.toPartitions()).isEqualTo(6);
    assertThat(withoutStateshiftFolder(CheckpointDigest.of(checkpoint))).isEqualTo(before);
    assertThat(StateShift.get(spark).verify(checkpoint.toString()).problems()).isEmpty();
  }

  @Test
  void rollbackIsRefusedOnceABatchRanOnTheNewLayout() {
    StreamRun run = checkpointWith(StateStores.HDFS, 4);
    Path checkpoint = tmp.resolve("checkpoint");
    StateShift.get(spark).repartitionState(checkpoint.toString()).toPartitions(7).execute();
    run.writeEvents(2, 100, 30);
    run.runAvailable(
        StatefulQueries.WINDOWED_COUNT,
        checkpoint,
        tmp.resolve("sink"),
        StateStores.HDFS.withPartitions(4));
    var digest = CheckpointDigest.of(checkpoint);
    assertThatThrownBy(() -> StateShift.get(spark).rollbackRepartition(checkpoint.toString()))
        .isInstanceOf(StateShiftException.class)
        .hasMessageContaining("has run on the new layout")
        .hasMessageContaining("--partitions 4");
    assertThat(CheckpointDigest.of(checkpoint)).isEqualTo(digest);
  }

  @Test
  void verifyFindsKeysInTheWrongPartitionAndTheCliExitsWithOne() throws Exception {
    checkpointWith(StateStores.HDFS, 3);
    Path checkpoint = tmp.resolve("checkpoint");
    // Swap the files of two partitions: every key of both is now in the wrong place.
    Path p0 = checkpoint.resolve("state/0/0");
    Path p1 = checkpoint.resolve("state/0/1");
    Path swap = checkpoint.resolve("state/0/swap");
    Files.move(p0, swap);
    Files.move(p1, p0);
    Files.move(swap, p1);
    // The schema file lives in partition 0: put it back where Spark reads it.
    Files.createDirectories(p0.resolve("_metadata"));
    Files.move(p1.resolve("_metadata/schema"), p0.resolve("_metadata/schema"));

    VerificationReport report = StateShift.get(spark).verify(checkpoint.toString());
    assertThat(report.ok()).isFalse();
    assertThat(report.problems())
        .anySatisfy(
            p -> assertThat(p).contains("partition 0").contains("belong to another partition"));
    var out = new java.io.ByteArrayOutputStream();
    int code =
        new io.stateshift.cli.StateShiftCli(new java.io.PrintStream(out), System.err)
            .run(new String[] {"verify", "--checkpoint", checkpoint.toString()});
    assertThat(code).isEqualTo(1);
    assertThat(out.toString()).contains("belong to another partition");
  }

  @Test
  void aSecondRepartitionIsRefusedWhileTheFirstHoldsTheLockAndALeaseExpires() throws Exception {
    checkpointWith(StateStores.HDFS, 4);
    Path checkpoint = tmp.resolve("checkpoint");
    CheckpointFiles files =
        CheckpointFiles.at(checkpoint.toString(), spark.sparkContext().hadoopConfiguration());
    try (CheckpointLock held = CheckpointLock.acquire(files, "another repartition", 60_000)) {
      assertThatThrownBy(
              () ->
                  StateShift.get(spark)
                      .repartitionState(checkpoint.toString())
                      .toPartitions(8)
                      .execute())
          .isInstanceOfSatisfying(
              StateShiftException.class,
              e -> assertThat(e.reason()).isEqualTo(StateShiftException.Reason.CHECKPOINT_IN_USE))
          .hasMessageContaining("another repartition");
    }
    // A holder on another host that died stops renewing: once its lease has expired by the
    // store's clock (the file was last written 61 s ago), the next caller proceeds. The record
    // is of an older version (no lease length: 60 s), whose expiry field is not trusted.
    Files.createDirectories(checkpoint.resolve("_stateshift"));
    Path lock = checkpoint.resolve("_stateshift/lock");
    Files.writeString(
        lock,
        "{\"owner\":\"1234@gone\",\"purpose\":\"repartition\","
            + "\"expiresAtMs\":"
            + (System.currentTimeMillis() + 600_000)
            + "}");
    Files.setLastModifiedTime(
        lock, java.nio.file.attribute.FileTime.fromMillis(System.currentTimeMillis() - 61_000));
    RepartitionResult result =
        StateShift.get(spark).repartitionState(checkpoint.toString()).toPartitions(8).execute();
    assertThat(result.toPartitions()).isEqualTo(8);
    assertThat(checkpoint.resolve("_stateshift/lock")).doesNotExist();
  }

  @Test
  void aQueryRunningOnTheCheckpointIsRefused() throws Exception {
    checkpointWith(StateStores.HDFS, 4);
    Path checkpoint = tmp.resolve("checkpoint");
    StreamingQuery running =
        StatefulQueries.WINDOWED_COUNT
            .apply(
                spark
                    .readStream()
                    .schema(StreamRun.EVENT_SCHEMA)
                    .json(tmp.resolve("input").toString()))
            .writeStream()
            .format("noop")
            .outputMode("append")
            .option("checkpointLocation", checkpoint.toString())
            .start();
    try {
      running.processAllAvailable();
      assertThatThrownBy(
              () ->
                  StateShift.get(spark)
                      .repartitionState(checkpoint.toString())
                      .toPartitions(8)
                      .execute())
          .isInstanceOfSatisfying(
              StateShiftException.class,
              e -> assertThat(e.reason()).isEqualTo(StateShiftException.Reason.CHECKPOINT_IN_USE))
          .hasMessageContaining("is running on checkpoint");
      // Only the running query's lease is there: the refused attempt wrote nothing.
      try (var left = Files.list(checkpoint.resolve("_stateshift"))) {
        assertThat(
                left.map(p -> p.getFileName().toString())
                    .filter(
                        name -> !name.startsWith("."))) // the local file system's checksum files
            .containsExactly("query-lease");
      }
    } finally {
      running.stop();
    }
  }

  private static Map<String, String> withoutStateshiftFolder(Map<String, String> digest) {
    Map<String, String> out = new java.util.TreeMap<>(digest);
    out.keySet().removeIf(k -> k.startsWith("_stateshift"));
    return out;
  }
}
