package io.stateshift;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.stateshift.HistoryEntry.Kind;
import io.stateshift.HistoryEntry.Outcome;
import io.stateshift.protocol.FailPoints;
import io.stateshift.testing.CheckpointDigest;
import io.stateshift.testing.FaultyFileSystem;
import io.stateshift.testing.SparkTestSession;
import io.stateshift.testing.StateStores;
import io.stateshift.testing.StatefulQueries;
import io.stateshift.testing.StreamRun;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import org.apache.spark.sql.SparkSession;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** {@link StateShift#history}: what was done to a checkpoint, failures included, refusals not. */
class HistoryTest {
  private final SparkSession spark = SparkTestSession.get();

  @TempDir Path tmp;

  private Path checkpoint(StateStores store, int partitions) {
    StreamRun run = new StreamRun(spark, tmp.resolve("input"));
    run.writeEvents(0, 300, 30);
    run.writeEvents(1, 300, 30);
    Path checkpoint = tmp.resolve("checkpoint");
    run.runAvailable(
        StatefulQueries.WINDOWED_COUNT,
        checkpoint,
        tmp.resolve("sink"),
        store.withPartitions(partitions));
    return checkpoint;
  }

  @Test
  void aRepartitionAndItsRollbackAreListedWithTheirFigures() {
    Path checkpoint = checkpoint(StateStores.ROCKSDB, 4);
    String cp = checkpoint.toString();
    assertThat(StateShift.get(spark).history(cp)).isEmpty();

    RepartitionResult result =
        StateShift.get(spark).repartitionState(cp).toPartitions(2).assumeStopped().execute();
    List<HistoryEntry> afterRepartition = StateShift.get(spark).history(cp);
    assertThat(afterRepartition).hasSize(1);
    HistoryEntry repartition = afterRepartition.get(0);
    assertThat(repartition.kind()).isEqualTo(Kind.REPARTITION);
    assertThat(repartition.outcome()).isEqualTo(Outcome.COMPLETED);
    assertThat(repartition.fromPartitions()).isEqualTo(4);
    assertThat(repartition.toPartitions()).isEqualTo(2);
    assertThat(repartition.batch()).isEqualTo(result.batchId());
    assertThat(repartition.rowsMoved()).isEqualTo(result.rowsMoved()).isPositive();
    assertThat(repartition.bytesMoved()).isEqualTo(result.bytesMoved()).isPositive();
    assertThat(repartition.durationMs()).isBetween(0L, result.totalMillis() + 1000);
    assertThat(repartition.path()).startsWith("rocksdb");
    assertThat(repartition.application())
        .contains(spark.sparkContext().appName())
        .contains(spark.sparkContext().applicationId());
    assertThat(repartition.user()).isEqualTo(spark.sparkContext().sparkUser());
    assertThat(repartition.rolledBack()).isFalse();
    assertThat(repartition.message()).isEmpty();

    StateShift.get(spark).rollbackRepartition(cp, true);
    List<HistoryEntry> afterRollback = StateShift.get(spark).history(cp);
    assertThat(afterRollback).hasSize(2);
    assertThat(afterRollback.get(0).attemptId()).isEqualTo(repartition.attemptId());
    assertThat(afterRollback.get(0).rolledBack()).isTrue();
    HistoryEntry rollback = afterRollback.get(1);
    assertThat(rollback.kind()).isEqualTo(Kind.ROLLBACK);
    assertThat(rollback.outcome()).isEqualTo(Outcome.COMPLETED);
    assertThat(rollback.fromPartitions()).isEqualTo(2);
    assertThat(rollback.toPartitions()).isEqualTo(4);
    assertThat(rollback.batch()).isEqualTo(result.batchId());
    assertThat(rollback.durationMs()).isNotNegative();
    assertThat(rollback.startedAt().orElseThrow())
        .isAfterOrEqualTo(repartition.startedAt().orElseThrow());

    // A refusal is not recorded, and leaves the checkpoint (its history included) as it was.
    Map<String, String> before = CheckpointDigest.of(checkpoint);
    assertThatThrownBy(() -> StateShift.get(spark).repartitionState(cp).toPartitions(4).execute())
        .isInstanceOfSatisfying(
            StateShiftException.class,
            e -> assertThat(e.reason()).isEqualTo(StateShiftException.Reason.SAME_PARTITION_COUNT));
    assertThatThrownBy(() -> StateShift.get(spark).rollbackRepartition(cp, true))
        .isInstanceOf(StateShiftException.class)
        .hasMessageContaining("nothing to roll back");
    assertThat(CheckpointDigest.of(checkpoint)).isEqualTo(before);
    assertThat(StateShift.get(spark).history(cp)).hasSize(2);
  }

  @Test
  void aFailureAfterTheLockIsRecordedAndSoIsTheRunThatFinishesIt() {
    FaultyFileSystem.register(spark.sparkContext().hadoopConfiguration());
    Path checkpoint = checkpoint(StateStores.HDFS, 4);
    String cp = FaultyFileSystem.uriOf(checkpoint);
    // The first write of the switch (offsets/N+1) fails: the journal says SWITCHING.
    FaultyFileSystem.reset(false);
    FaultyFileSystem.failAt("journal-switching", 0);
    FailPoints.observe(FaultyFileSystem::step);
    try {
      assertThatThrownBy(
              () ->
                  StateShift.get(spark)
                      .repartitionState(cp)
                      .toPartitions(6)
                      .assumeStopped()
                      .execute())
          .isInstanceOfSatisfying(
              StateShiftException.class,
              e -> assertThat(e.reason()).isEqualTo(StateShiftException.Reason.FAILED))
          .hasMessageContaining("had begun");
    } finally {
      FailPoints.observe(null);
    }
    assertThat(FaultyFileSystem.failed()).isNotNull();
    List<HistoryEntry> failed = StateShift.get(spark).history(cp);
    assertThat(failed).hasSize(1);
    HistoryEntry failure = failed.get(0);
    assertThat(failure.kind()).isEqualTo(Kind.REPARTITION);
    assertThat(failure.outcome()).isEqualTo(Outcome.FAILED);
    assertThat(failure.fromPartitions()).isEqualTo(4);
    assertThat(failure.toPartitions()).isEqualTo(6);
    assertThat(failure.message().orElseThrow())
        .startsWith("FAILED: ")
        .contains("injected I/O error")
        .contains("had begun");
    assertThat(failure.path()).startsWith("hdfs");

    // The next run finishes the interrupted attempt: listed as completed, after the failure.
    StateShift.get(spark).repartitionState(cp).toPartitions(6).assumeStopped().execute();
    List<HistoryEntry> finished = StateShift.get(spark).history(cp);
    assertThat(finished).hasSize(2);
    HistoryEntry completed = finished.get(1);
    assertThat(completed.outcome()).isEqualTo(Outcome.COMPLETED);
    assertThat(completed.attemptId()).isEqualTo(failure.attemptId());
    assertThat(completed.toPartitions()).isEqualTo(6);
    assertThat(completed.rowsMoved()).isPositive();
    assertThat(completed.message()).contains("finished after an interruption");
    assertThat(StateShift.get(spark).verify(cp).problems()).isEmpty();
  }
}
