package io.stateshift.spark.state;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.api.Test;

/**
 * A write task runs on the cores Spark grants a task ({@code spark.task.cpus}): never more threads
 * than that on a local disk, the I/O threads' count where stores wait on requests, and at most four
 * waves of tasks, each writing its share of (store, new partition) targets.
 */
class WriteSharingTest {

  @Test
  void aTaskWritesOnAsManyThreadsAsItHasCores() {
    // one core a task (the default): one target at a time, a task per new partition
    assertThat(StateRedistributionJob.WriteSharing.of(1, 8, 2, 1, 1))
        .isEqualTo(new StateRedistributionJob.WriteSharing(8, 1));
    // ... up to four waves of tasks: 64 partitions on 2 cores in 8 tasks of 8, one at a time
    assertThat(StateRedistributionJob.WriteSharing.of(1, 64, 2, 1, 1))
        .isEqualTo(new StateRedistributionJob.WriteSharing(8, 1));
    assertThat(StateRedistributionJob.WriteSharing.of(4, 8, 2, 1, 1))
        .isEqualTo(new StateRedistributionJob.WriteSharing(2, 1));
    // four cores a task on 8 cores: two tasks at once, each writing four partitions at once
    assertThat(StateRedistributionJob.WriteSharing.of(1, 8, 8, 4, 1))
        .isEqualTo(new StateRedistributionJob.WriteSharing(2, 4));
    // a join's four stores, two cores a task on 4 cores: two tasks, two threads each
    assertThat(StateRedistributionJob.WriteSharing.of(4, 6, 4, 2, 1))
        .isEqualTo(new StateRedistributionJob.WriteSharing(2, 2));
    // remote checkpoint, four stores at once per task: 64 partitions in 8 tasks of 8, four at once
    assertThat(StateRedistributionJob.WriteSharing.of(1, 64, 2, 1, 4))
        .isEqualTo(new StateRedistributionJob.WriteSharing(8, 4));
    // a join on a remote checkpoint: a task per core, four stores at once
    assertThat(StateRedistributionJob.WriteSharing.of(4, 6, 2, 1, 4))
        .isEqualTo(new StateRedistributionJob.WriteSharing(2, 4));
  }

  @Test
  void everyTargetIsWrittenAndNoTaskRunsMoreThreadsThanItsCores() {
    for (int stores : new int[] {1, 2, 4}) {
      for (int partitions = 1; partitions <= 40; partitions++) {
        for (int cores = 1; cores <= 16; cores++) {
          for (int taskCpus = 1; taskCpus <= cores; taskCpus++) {
            StateRedistributionJob.WriteSharing sharing =
                StateRedistributionJob.WriteSharing.of(stores, partitions, cores, taskCpus, 1);
            assertThat(sharing.threadsPerTask()).isBetween(1, taskCpus);
            assertThat(sharing.tasks()).isBetween(1, partitions);
            int slots = cores / taskCpus;
            // at most four waves of tasks; with fewer partitions, every slot busy in the first
            assertThat(sharing.tasks()).isLessThanOrEqualTo(slots * 4);
            if (stores == 1) {
              assertThat((long) sharing.tasks() * sharing.threadsPerTask())
                  .isGreaterThanOrEqualTo(Math.min(partitions, slots));
            }
          }
        }
      }
    }
  }
}
