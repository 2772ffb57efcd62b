package io.stateshift.protocol;

import static org.assertj.core.api.Assertions.assertThat;

import io.stateshift.spark.state.ScalaBridge;
import io.stateshift.testing.SparkTestSession;
import java.util.ArrayList;
import java.util.List;
import java.util.Properties;
import org.apache.spark.ExecutorLostFailure;
import org.apache.spark.Resubmitted$;
import org.apache.spark.Success$;
import org.apache.spark.TaskEndReason;
import org.apache.spark.TaskState;
import org.apache.spark.scheduler.SparkListenerJobStart;
import org.apache.spark.scheduler.SparkListenerTaskEnd;
import org.apache.spark.scheduler.SparkListenerTaskStart;
import org.apache.spark.scheduler.StageInfo;
import org.apache.spark.scheduler.TaskInfo;
import org.apache.spark.scheduler.TaskLocality;
import org.junit.jupiter.api.Test;
import scala.Option;

/**
 * The progress lines of a job whose executor was lost: the tasks it ran end as failed (or, done
 * already, as resubmitted) and run again elsewhere. Each partition counts once, when it first
 * succeeds, so the line never reads more than the stage's task count ("5/2" before).
 */
class JobProgressTest {
  private static final String GROUP = "stateshift-progress-test";
  private static final int STAGE = 9_000_001;

  private long nextTaskId = 1;

  @Test
  void aTaskRunAgainAfterItsExecutorWasLostCountsOnce() {
    List<String> lines = new ArrayList<>();
    try (JobProgress progress = new JobProgress(SparkTestSession.get(), GROUP, lines::add)) {
      progress.onJobStart(jobStart(2));

      // partition 0 succeeds on executor 1, partition 1 is lost with executor 2
      end(progress, 0, "1", Success$.MODULE$);
      end(progress, 1, "2", new ExecutorLostFailure("2", true, Option.empty()));
      // partition 0's output is lost too (its executor went): resubmitted, then run again
      end(progress, 0, "1", Resubmitted$.MODULE$);
      end(progress, 0, "3", Success$.MODULE$);
      end(progress, 1, "3", Success$.MODULE$);

      assertThat(lines).containsExactly("splitting: 1/2", "splitting: 2/2");
      assertThat(progress.runningTasks()).as("every task started has ended").isZero();
    }
  }

  private SparkListenerJobStart jobStart(int tasks) {
    StageInfo stage =
        new StageInfo(
            STAGE,
            0,
            "split",
            tasks,
            ScalaBridge.untypedSeq(List.of()),
            ScalaBridge.untypedSeq(List.of()),
            "",
            null,
            ScalaBridge.untypedSeq(List.of()),
            Option.empty(),
            0,
            false,
            0);
    Properties properties = new Properties();
    properties.setProperty("spark.jobGroup.id", GROUP);
    properties.setProperty(io.stateshift.checkpoint.spi.Redistribution.PROGRESS_LABEL, "splitting");
    return new SparkListenerJobStart(1, 0L, ScalaBridge.seq(List.of(stage)), properties);
  }

  /** A task of {@code partition} started (unless resubmitted) and ended with {@code reason}. */
  private void end(JobProgress progress, int partition, String executor, TaskEndReason reason) {
    boolean resubmitted = reason instanceof Resubmitted$;
    TaskInfo info =
        new TaskInfo(
            nextTaskId++,
            partition,
            0,
            partition,
            0L,
            executor,
            "localhost",
            TaskLocality.PROCESS_LOCAL(),
            false);
    if (!resubmitted) {
      progress.onTaskStart(new SparkListenerTaskStart(STAGE, 0, info));
    }
    info.markFinished(
        reason instanceof Success$ || resubmitted ? TaskState.FINISHED() : TaskState.FAILED(), 1L);
    progress.onTaskEnd(new SparkListenerTaskEnd(STAGE, 0, "ResultTask", reason, info, null, null));
    try {
      Thread.sleep(600); // past the half second between two lines: each end may print one
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }
}
