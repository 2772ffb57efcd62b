package io.stateshift;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.stateshift.StateShiftException.Reason;
import io.stateshift.testing.CheckpointDigest;
import io.stateshift.testing.SparkTestSession;
import io.stateshift.testing.StateStores;
import io.stateshift.testing.StatefulQueries;
import io.stateshift.testing.StreamRun;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import org.apache.spark.api.java.function.VoidFunction2;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.streaming.StreamingQuery;
import org.apache.spark.sql.streaming.Trigger;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Bad input is refused with an error naming the problem and the fix, and the checkpoint is left
 * byte-for-byte as it was (a digest of every file and folder before and after).
 */
class BadInputTest {
  private final SparkSession spark = SparkTestSession.get();

  @TempDir Path tmp;

  @Test
  void pathThatDoesNotExist() {
    Path missing = tmp.resolve("no-such-checkpoint");
    assertRefused(missing, 8, Reason.CHECKPOINT_NOT_FOUND, "does not exist");
    assertThat(missing).doesNotExist();
  }

  @Test
  void folderThatIsNotACheckpoint() throws Exception {
    Path folder = Files.createDirectories(tmp.resolve("just-a-folder"));
    Files.writeString(folder.resolve("notes.txt"), "hello");
    assertRefused(folder, 8, Reason.NOT_A_CHECKPOINT, "not a streaming checkpoint");
  }

  @Test
  void checkpointOfAStatelessQuery() throws Exception {
    StreamRun run = new StreamRun(spark, tmp.resolve("input"));
    run.writeEvents(0, 50, 5);
    Path checkpoint = tmp.resolve("stateless");
    runQuery(
        spark
            .readStream()
            .schema(StreamRun.EVENT_SCHEMA)
            .json(tmp.resolve("input").toString())
            .select("device"),
        checkpoint,
        "append",
        false);
    assertRefused(checkpoint, 8, Reason.STATELESS_QUERY, "no state");
  }

  @Test
  void samePartitionCountAsNow() {
    Path checkpoint = aggregationCheckpoint(4);
    assertRefused(checkpoint, 4, Reason.SAME_PARTITION_COUNT, "already has 4 partitions");
  }

  @Test
  void zeroOrNegativeCounts() {
    Path checkpoint = aggregationCheckpoint(4);
    var before = CheckpointDigest.of(checkpoint);
    for (int bad : new int[] {0, -3}) {
      assertThatThrownBy(
              () ->
                  StateShift.get(spark)
                      .repartitionState(checkpoint.toString())
                      .toPartitions(bad)
                      .execute())
          .isInstanceOfSatisfying(
              StateShiftException.class,
              e -> assertThat(e.reason()).isEqualTo(Reason.INVALID_PARTITION_COUNT))
          .hasMessageContaining("at least 1");
    }
    assertThat(CheckpointDigest.of(checkpoint)).isEqualTo(before);
  }

  @Test
  void unsupportedOperator() throws Exception {
    StreamRun run = new StreamRun(spark, tmp.resolve("input"));
    run.writeEvents(0, 50, 5);
    Path checkpoint = tmp.resolve("limit");
    runQuery(
        spark
            .readStream()
            .schema(StreamRun.EVENT_SCHEMA)
            .json(tmp.resolve("input").toString())
            .limit(10),
        checkpoint,
        "append",
        false);
    assertRefused(checkpoint, 8, Reason.UNSUPPORTED_OPERATOR, "cannot be repartitioned");
  }

  @Test
  void uncommittedLastBatch() throws Exception {
    StreamRun run = new StreamRun(spark, tmp.resolve("input"));
    run.writeEvents(0, 50, 5);
    Path checkpoint = tmp.resolve("uncommitted");
    Dataset<Row> counts =
        spark
            .readStream()
            .schema(StreamRun.EVENT_SCHEMA)
            .json(tmp.resolve("input").toString())
            .groupBy("device")
            .count();
    runQuery(counts, checkpoint, "complete", false);
    run.writeEvents(1, 50, 5);
    runQuery(counts, checkpoint, "complete", true); // the sink fails: offsets written, no commit
    assertThat(checkpoint.resolve("offsets/1")).exists();
    assertThat(checkpoint.resolve("commits/1")).doesNotExist();
    assertRefused(checkpoint, 8, Reason.UNCOMMITTED_BATCH, "was not committed");
  }

  @Test
  void commandLineExitsWithTwoAndPrintsTheReason() throws Exception {
    Path checkpoint = aggregationCheckpoint(4);
    Files.delete(checkpoint.resolve("metadata")); // the query id: the checkpoint is damaged
    var before = CheckpointDigest.of(checkpoint);
    var err = new java.io.ByteArrayOutputStream();
    int code =
        new io.stateshift.cli.StateShiftCli(System.out, new java.io.PrintStream(err))
            .run(
                new String[] {
                  "repartition", "--checkpoint", checkpoint.toString(), "--partitions", "8"
                });
    assertThat(code).isEqualTo(2);
    assertThat(err.toString()).contains("'metadata' file").contains("Restore");
    assertThat(CheckpointDigest.of(checkpoint)).isEqualTo(before);
  }

  @Test
  void commandLineRepartitionToTheCountItHasIsNothingToDo() {
    // The API refuses (SAME_PARTITION_COUNT, above); the command line succeeds, so a script can
    // repartition unconditionally.
    Path checkpoint = aggregationCheckpoint(4);
    var before = CheckpointDigest.of(checkpoint);
    var out = new java.io.ByteArrayOutputStream();
    int code =
        new io.stateshift.cli.StateShiftCli(new java.io.PrintStream(out), System.err)
            .run(
                new String[] {
                  "repartition", "--checkpoint", checkpoint.toString(), "--partitions", "4"
                });
    assertThat(code).isZero();
    assertThat(out.toString()).contains("already has 4 partitions. Nothing to do.");
    assertThat(CheckpointDigest.of(checkpoint)).isEqualTo(before);
  }

  @Test
  void dryRunWritesNothing() {
    Path checkpoint = aggregationCheckpoint(4);
    var before = CheckpointDigest.of(checkpoint);
    RepartitionPlan plan =
        StateShift.get(spark).repartitionState(checkpoint.toString()).toPartitions(6).plan();
    assertThat(plan.fromPartitions()).isEqualTo(4);
    assertThat(plan.toPartitions()).isEqualTo(6);
    assertThat(plan.repartitionBatch()).isEqualTo(plan.lastCommittedBatch() + 1);
    assertThat(plan.operators())
        .extracting(RepartitionPlan.OperatorInfo::name)
        .containsExactly("stateStoreSave");
    assertThat(CheckpointDigest.of(checkpoint)).isEqualTo(before);
  }

  private Path aggregationCheckpoint(int partitions) {
    StreamRun run = new StreamRun(spark, tmp.resolve("agg-input"));
    run.writeEvents(0, 100, 10);
    Path checkpoint = tmp.resolve("agg-checkpoint");
    run.runAvailable(
        StatefulQueries.GROUPED_COUNT,
        checkpoint,
        tmp.resolve("agg-sink"),
        StateStores.HDFS.withPartitions(partitions));
    return checkpoint;
  }

  private void runQuery(Dataset<Row> query, Path checkpoint, String mode, boolean failSink)
      throws Exception {
    StreamingQuery q =
        query
            .writeStream()
            .outputMode(mode)
            .option("checkpointLocation", checkpoint.toString())
            .trigger(Trigger.AvailableNow())
            .foreachBatch(
                (VoidFunction2<Dataset<Row>, Long>)
                    (batch, id) -> {
                      if (failSink) {
                        throw new IllegalStateException("injected sink failure");
                      }
                      batch.count();
                    })
            .start();
    try {
      q.awaitTermination();
    } catch (org.apache.spark.sql.streaming.StreamingQueryException e) {
      assertThat(failSink).as("query failed unexpectedly: %s", e.getMessage()).isTrue();
    }
  }

  private void assertRefused(Path checkpoint, int partitions, Reason reason, String message) {
    Map<String, String> before = Files.exists(checkpoint) ? CheckpointDigest.of(checkpoint) : null;
    assertThatThrownBy(
            () ->
                StateShift.get(spark)
                    .repartitionState(checkpoint.toString())
                    .toPartitions(partitions)
                    .execute())
        .isInstanceOfSatisfying(
            StateShiftException.class,
            e -> {
              assertThat(e.reason()).isEqualTo(reason);
              assertThat(e.reason().isBadInput()).isTrue();
            })
        .hasMessageContaining(message);
    if (before != null) {
      assertThat(CheckpointDigest.of(checkpoint)).isEqualTo(before);
    }
  }
}
