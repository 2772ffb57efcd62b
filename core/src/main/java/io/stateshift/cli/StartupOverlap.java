package io.stateshift.cli;

import io.stateshift.checkpoint.spi.SparkLine;
import io.stateshift.checkpoint.spi.SparkLines;

/**
 * Work a fresh command's JVM would otherwise do on its critical path, started on a background
 * thread as the command starts, while the main thread starts Spark (see {@link
 * SparkLine#warmUpCommandLine()}): Spark's RocksDB checkpoint metadata and RocksDB's native
 * library, which the first read tasks need, and the removal of killed runs' local exchange folders.
 * All are only head starts: whatever is not done yet when needed is done by whoever needs it, as
 * without this thread (an exchange removes them too before it creates its own).
 */
final class StartupOverlap {
  private StartupOverlap() {}

  private static final java.util.concurrent.atomic.AtomicBoolean BEGUN =
      new java.util.concurrent.atomic.AtomicBoolean();

  /** Starts the head starts, once per JVM. */
  static void begin() {
    if (BEGUN.getAndSet(true)) {
      return;
    }
    Thread thread =
        new Thread(
            () -> {
              try {
                SparkLines.get().warmUpCommandLine();
              } catch (Exception | LinkageError e) {
                // a head start only (another Spark version, no temp folder): nothing depends on it
              }
            },
            "stateshift-startup-overlap");
    thread.setDaemon(true);
    thread.start();
  }
}
