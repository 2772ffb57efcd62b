package io.stateshift.monitor;

/**
 * Receives the monitor's alerts (page someone, post to a chat, count them). Set by class name in
 * {@code spark.stateshift.monitor.alertCallbacks} (a public no-argument constructor), or add one
 * with {@link StreamMonitor#addCallback} or {@link StreamMonitor#addGlobalCallback}. Called on
 * Spark's listener thread: return quickly.
 */
@FunctionalInterface
public interface AlertCallback {
  void onAlert(Alert alert);
}
