package io.stateshift.monitor;

/**
 * One alert raised by the {@link StreamMonitor}.
 *
 * @param type what happened
 * @param queryId the query's id (stable across restarts: the checkpoint's)
 * @param queryName the query's name, or null
 * @param runId the run that raised it
 * @param batchId the batch at which it was raised, or -1
 * @param message what happened, with the numbers
 * @param timestampMs when it was raised
 */
public record Alert(
    AlertType type,
    String queryId,
    String queryName,
    String runId,
    long batchId,
    String message,
    long timestampMs) {
  @Override
  public String toString() {
    return type + " [" + (queryName == null ? queryId : queryName) + "] " + message;
  }
}
