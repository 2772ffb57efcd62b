package io.stateshift.doctor;

/** How much a finding matters: the doctor exits with 1 when any finding is an ERROR. */
public enum Severity {
  /** A measurement or a recommendation that needs no action. */
  INFO,
  /** Works today, but will hurt as the stream grows or when it has to recover. */
  WARNING,
  /** Broken or about to break: act before the next restart. */
  ERROR
}
