package io.stateshift.monitor;

/** What the monitor alerts on. */
public enum AlertType {
  /** Batch duration above the trigger interval for K batches in a row: the stream falls behind. */
  SLOW_BATCHES,
  /** State rows of an operator grew for K batches in a row without levelling off. */
  STATE_GROWTH,
  /** The backlog of the sources grew for K batches in a row. */
  BACKLOG_GROWTH,
  /** The query terminated with an exception. */
  QUERY_FAILED,
  /** The query took in no data for longer than the idle timeout. */
  QUERY_IDLE
}
