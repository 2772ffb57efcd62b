package io.stateshift.checkpoint.spi;

/** What the monitor reads of a running query: its trigger interval and checkpoint. */
public record StreamingQueryInfo(long triggerIntervalMs, String checkpointRoot) {}
