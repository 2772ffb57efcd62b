package io.stateshift;

/**
 * Raised when stateshift refuses or fails an operation. {@link #reason()} tells which; {@link
 * Reason#isBadInput()} separates refusals (the checkpoint was left untouched and the caller can fix
 * the input) from failures while working.
 */
public class StateShiftException extends RuntimeException {

  /** Why an operation was refused or failed. */
  public enum Reason {
    CHECKPOINT_NOT_FOUND(true),
    NOT_A_CHECKPOINT(true),
    CORRUPT_CHECKPOINT(true),
    STATELESS_QUERY(true),
    INVALID_PARTITION_COUNT(true),
    SAME_PARTITION_COUNT(true),
    /** A migration to the state store provider the checkpoint already uses. */
    SAME_PROVIDER(true),
    UNSUPPORTED_OPERATOR(true),
    UNSUPPORTED_CHECKPOINT(true),
    UNCOMMITTED_BATCH(true),
    CHECKPOINT_IN_USE(true),
    CHECKPOINT_NOT_WRITABLE(true),
    INTERRUPTED_REPARTITION(true),
    QUERY_CHANGED(true),
    INVALID_ARGUMENT(true),
    /** stateshift's module of one Spark line on the Spark of another. */
    SPARK_LINE_MISMATCH(true),
    FAILED(false);

    private final boolean badInput;

    Reason(boolean badInput) {
      this.badInput = badInput;
    }

    /** True when nothing was written and the caller can fix the input and retry. */
    public boolean isBadInput() {
      return badInput;
    }
  }

  private final Reason reason;

  public StateShiftException(Reason reason, String message) {
    super(message);
    this.reason = reason;
  }

  public StateShiftException(Reason reason, String message, Throwable cause) {
    super(message, serializable(cause));
    this.reason = reason;
  }

  /**
   * {@code cause}, or where it does not serialize a stand-in chain with the same messages and stack
   * traces. A refusal raised inside a Spark task reaches the driver only if it serializes whole:
   * otherwise Spark drops it, and the command reports a failure instead of the refusal. The RocksDB
   * exceptions of rocksdbjni 8 (Spark 3.5's) hold a status that does not serialize.
   */
  private static Throwable serializable(Throwable cause) {
    if (cause == null) {
      return null;
    }
    try (java.io.ObjectOutputStream out =
        new java.io.ObjectOutputStream(java.io.OutputStream.nullOutputStream())) {
      out.writeObject(cause);
      return cause;
    } catch (java.io.IOException e) {
      return standIn(cause);
    }
  }

  private static Throwable standIn(Throwable cause) {
    if (cause == null) {
      return null;
    }
    RuntimeException copy = new RuntimeException(cause.toString(), standIn(cause.getCause()));
    copy.setStackTrace(cause.getStackTrace());
    return copy;
  }

  public Reason reason() {
    return reason;
  }
}
