package io.stateshift.internal;

import java.io.IOException;
import java.io.UncheckedIOException;

/**
 * Named points between the write steps of a repartition, where tests stop the process the hard way
 * ({@code -Dstateshift.failpoint=<name>}: SIGKILL, as a crash or an evicted container would) or
 * make the step fail with an I/O error ({@code -Dstateshift.failpoint.mode=io}). Without the
 * property every point is a no-op.
 */
public final class FailPoints {
  public static final String PROPERTY = "stateshift.failpoint";
  public static final String MODE_PROPERTY = "stateshift.failpoint.mode";

  /** Every point, in the order a repartition reaches them. */
  public static final java.util.List<String> ALL = java.util.List.of(
      "locked", "journal-staging", "staging-task", "staged", "journal-switching", "offsets",
      "publish-first-file", "published", "commit", "journal-finalizing", "metadata-v1",
      "retired", "history");

  private FailPoints() {}

  static void reached(String name) {
    String armed = System.getProperty(PROPERTY);
    if (armed == null || !armed.equals(name)) {
      return;
    }
    if ("io".equals(System.getProperty(MODE_PROPERTY))) {
      throw new UncheckedIOException(new IOException("injected I/O error at " + name));
    }
    System.err.println("stateshift: failpoint " + name + " reached, killing the process");
    System.err.flush();
    try {
      new ProcessBuilder("kill", "-9", Long.toString(ProcessHandle.current().pid()))
          .inheritIO().start().waitFor();
      Thread.sleep(10_000);
    } catch (IOException | InterruptedException e) {
      // fall through to halt
    }
    Runtime.getRuntime().halt(137);
  }
}
