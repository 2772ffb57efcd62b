package io.stateshift.spark.state;

import io.stateshift.config.StateShiftConf;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * Wall time of the steps of one task (load the old store, iterate, write, ingest, commit, close),
 * printed to stderr when {@code spark.stateshift.profile} is true in the application's conf. Used
 * to profile the repartition job (bench/run); costs two nanoTime calls per step otherwise.
 */
final class TaskTimer {
  static final boolean ENABLED = StateShiftConf.PROFILE.inTask();

  private final String task;
  private final Map<String, Long> nanos = new LinkedHashMap<>();
  private final Map<String, String> notes = new LinkedHashMap<>();
  private final long started = System.nanoTime();
  private long stepStart = started;

  TaskTimer(String task) {
    this.task = task;
  }

  /** Ends the current step under {@code name} and starts the next one. */
  void lap(String name) {
    long now = System.nanoTime();
    nanos.merge(name, now - stepStart, Long::sum);
    stepStart = now;
  }

  /** Adds a free-form detail to the report. */
  void note(String name, String detail) {
    notes.put(name, detail);
  }

  void report() {
    if (!ENABLED) {
      return;
    }
    StringBuilder line =
        new StringBuilder("stateshift-profile ")
            .append(task)
            .append(String.format(" total=%.0f", (System.nanoTime() - started) / 1e6));
    nanos.forEach(
        (k, v) -> line.append(' ').append(k).append('=').append(String.format("%.0f", v / 1e6)));
    notes.forEach((k, v) -> line.append(' ').append(k).append('=').append(v));
    System.err.println(line);
  }
}
