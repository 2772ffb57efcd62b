package io.stateshift.protocol;

import static org.assertj.core.api.Assertions.assertThat;

import io.stateshift.checkpoint.CheckpointFiles;
import io.stateshift.checkpoint.StateLayout;
import java.nio.file.Path;
import java.util.List;
import org.apache.hadoop.conf.Configuration;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * What the journal of an interrupted attempt tells the commands that meet it: the log batches
 * stateshift wrote itself (which the guess at a running query leaves out) and the command that
 * finishes the attempt.
 */
class RepartitionJournalTest {
  private static final String ROOT = "hdfs://nn:8020/checkpoints/q";

  @TempDir Path dir;

  private static RepartitionJournal attempt(int from, int to) {
    return RepartitionJournal.start(from, to, 4, null, List.of());
  }

  @Test
  void theFinishingCommandRunsTheSameChangeAgain() {
    RepartitionJournal repartition = attempt(8, 16).withPhase(RepartitionJournal.Phase.SWITCHING);
    assertThat(repartition.kind()).isEqualTo("repartition");
    assertThat(repartition.finishingCommand(ROOT))
        .isEqualTo("./stateshift repartition --checkpoint " + ROOT + " --partitions 16");

    RepartitionJournal toRocksDb =
        attempt(8, 8)
            .withProviders(StateLayout.HDFS_PROVIDER, StateLayout.ROCKSDB_PROVIDER)
            .withFormatVersions(1, 2);
    assertThat(toRocksDb.kind()).isEqualTo("migration");
    assertThat(toRocksDb.finishingCommand(ROOT))
        .isEqualTo(
            "./stateshift migrate --checkpoint " + ROOT + " --provider rocksdb --format-version 2");

    RepartitionJournal formatAndCount =
        attempt(8, 4)
            .withProviders(StateLayout.ROCKSDB_PROVIDER, StateLayout.ROCKSDB_PROVIDER)
            .withFormatVersions(2, 1);
    assertThat(formatAndCount.finishingCommand(ROOT))
        .isEqualTo(
            "./stateshift migrate --checkpoint " + ROOT + " --format-version 1 --partitions 4");

    // a rollback is finished by a repartition to the count it restores, then has nothing to do
    RepartitionJournal rollback = repartition.withPhase(RepartitionJournal.Phase.ROLLING_BACK);
    assertThat(rollback.kind()).isEqualTo("rollback");
    assertThat(rollback.finishingCommand(ROOT))
        .isEqualTo("./stateshift repartition --checkpoint " + ROOT + " --partitions 8");
  }

  @Test
  void anAttemptPastStagingWroteItsBatchsLogEntries() {
    CheckpointFiles files = CheckpointFiles.at(dir.toString(), new Configuration());
    assertThat(RepartitionJournal.ownLogBatches(files)).isEmpty();

    RepartitionJournal staging = attempt(8, 16);
    staging.save(files);
    // nothing of the attempt is in the logs yet: an entry of batch 5 would be a query's
    assertThat(RepartitionJournal.ownLogBatches(files)).isEmpty();

    for (RepartitionJournal.Phase phase :
        List.of(
            RepartitionJournal.Phase.SWITCHING,
            RepartitionJournal.Phase.FINALIZING,
            RepartitionJournal.Phase.ROLLING_BACK)) {
      staging.withPhase(phase).save(files);
      assertThat(RepartitionJournal.ownLogBatches(files)).as("in %s", phase).containsExactly(5L);
    }

    // completed: the history's record names the batch
    RepartitionHistory.record(files, staging.withPhase(RepartitionJournal.Phase.FINALIZING));
    RepartitionJournal.delete(files);
    assertThat(RepartitionJournal.ownLogBatches(files)).containsExactly(5L);
  }
}
