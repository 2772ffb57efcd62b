package io.stateshift.protocol;

import io.stateshift.config.StateShiftConf;
import java.io.IOException;
import org.apache.spark.SparkEnv;

/**
 * Named points between the write steps of a repartition, where tests stop the process the hard way
 * ({@code spark.stateshift.test.failpoint=<name>} in the application's conf, e.g. {@code
 * -Dspark.stateshift.test.failpoint=<name>}, which reaches executors: SIGKILL, as a crash or an
 * evicted container would). In a task, only the first attempt is killed, so that a retry on another
 * executor can finish the job. Tests that fail single file system operations use the names to group
 * the operations into steps ({@link #observe}). Without the setting and an observer every point is
 * a no-op.
 */
public final class FailPoints {
  public static final String PROPERTY = StateShiftConf.FAILPOINT.key();
  private static volatile java.util.function.Consumer<String> observer;

  /** Every point, in the order a repartition reaches them. */
  public static final java.util.List<String> ALL =
      java.util.List.of(
          "locked",
          "journal-staging",
          "staging-task",
          "staged",
          "journal-switching",
          "offsets",
          "publish-first-file",
          "published",
          "commit",
          "journal-finalizing",
          "metadata-v1",
          "retired",
          "history");

  /** After the file sink log's entry for the new batch (reached only with a file sink). */
  public static final String SINK_LOG = "sink-log";

  /**
   * After each old version file a change of state checkpoint format moves out of a kept partition
   * folder (reached only by such a migration, in phase FINALIZING).
   */
  public static final String RETIRED_FORMAT = "retired-format";

  /**
   * After the old files a prepared layout's base versions replace are moved aside, before the new
   * files move in (reached on every switch; the step moves files only from a prepared layout).
   */
  public static final String REPLACED = "replaced";

  private FailPoints() {}

  /** Tells {@code listener} each point reached, in this JVM; null stops it. For tests. */
  public static void observe(java.util.function.Consumer<String> listener) {
    observer = listener;
  }

  public static void reached(String name) {
    java.util.function.Consumer<String> listening = observer;
    if (listening != null) {
      listening.accept(name);
    }
    String armed =
        SparkEnv.get() != null
            ? StateShiftConf.FAILPOINT.inTask()
            : StateShiftConf.FAILPOINT.onDriver();
    if (!armed.equals(name)) {
      return;
    }
    org.apache.spark.TaskContext task = org.apache.spark.TaskContext.get();
    if (task != null && (task.attemptNumber() > 0 || task.stageAttemptNumber() > 0)) {
      return; // a retry: the crash already happened
    }
    System.err.println("stateshift: failpoint " + name + " reached, killing the process");
    System.err.flush();
    try {
      new ProcessBuilder("kill", "-9", Long.toString(ProcessHandle.current().pid()))
          .inheritIO()
          .start()
          .waitFor();
      Thread.sleep(10_000);
    } catch (IOException | InterruptedException e) {
      // fall through to halt
    }
    Runtime.getRuntime().halt(137);
  }
}
