package io.stateshift.checkpoint;

import io.stateshift.StateShiftException;
import io.stateshift.StateShiftException.Reason;
import java.io.FilterInputStream;
import java.io.IOException;
import java.io.InputStream;
import org.apache.hadoop.fs.ChecksumException;
import org.apache.hadoop.fs.Path;

/**
 * Tells a damaged state file (content that does not decode: truncated, overwritten, written with
 * another codec, or failing its checksum) from a failure to read it (an I/O error of the storage).
 * Damage is bad input: the user restores the checkpoint from a backup, and running the command
 * again would fail the same way. A storage failure may pass, and is reported as a failure.
 */
public final class StateFileDamage {
  private StateFileDamage() {}

  /**
   * A state file that cannot be decoded; {@code file} is the path in the checkpoint. Thrown by the
   * readers, turned into the user's error by {@link #refusal}.
   */
  public static final class DamagedFile extends IOException {
    final String file;

    DamagedFile(String file, Throwable cause) {
      super(file + " cannot be decoded: " + describe(cause), cause);
      this.file = file;
    }
  }

  /** An I/O error of the stream under a decoder: the storage failed, the content may be fine. */
  private static final class StorageFailure extends IOException {
    StorageFailure(IOException cause) {
      super(cause.getMessage(), cause);
    }
  }

  /**
   * The raw stream of a state file, to put under its decoder: its own I/O errors are marked, so
   * that {@link #classify} does not take them for damage. A checksum mismatch stays damage.
   */
  public static InputStream marked(InputStream raw) {
    return new FilterInputStream(raw) {
      @Override
      public int read() throws IOException {
        try {
          return super.read();
        } catch (ChecksumException e) {
          throw e;
        } catch (IOException e) {
          throw new StorageFailure(e);
        }
      }

      @Override
      public int read(byte[] b, int off, int len) throws IOException {
        try {
          return super.read(b, off, len);
        } catch (ChecksumException e) {
          throw e;
        } catch (IOException e) {
          throw new StorageFailure(e);
        }
      }

      @Override
      public long skip(long n) throws IOException {
        try {
          return super.skip(n);
        } catch (ChecksumException e) {
          throw e;
        } catch (IOException e) {
          throw new StorageFailure(e);
        }
      }
    };
  }

  /**
   * What a failure while decoding {@code file} (read through {@link #marked}) was: the storage's
   * own I/O error as it was, anything else (the decoder's exceptions, a record that does not fit,
   * an early end) as damage to the file.
   */
  public static IOException classify(Path file, Throwable e) {
    for (Throwable t = e; t != null; t = t.getCause()) {
      if (t instanceof DamagedFile damaged) {
        return damaged;
      }
      if (t instanceof StorageFailure failure) {
        return (IOException) failure.getCause();
      }
    }
    return new DamagedFile(file.toString(), e);
  }

  /** The user's error for a damaged file, its path relative to the checkpoint. */
  public static StateShiftException refusal(String checkpointRoot, DamagedFile damaged) {
    return refusal(checkpointRoot, damaged.file, describe(damaged.getCause()), damaged);
  }

  public static StateShiftException refusal(
      String checkpointRoot, String file, String problem, Throwable cause) {
    return new StateShiftException(
        Reason.CORRUPT_CHECKPOINT,
        "The state file "
            + PlacementCheck.relative(checkpointRoot, file)
            + " of checkpoint "
            + checkpointRoot
            + " is damaged: it cannot be read ("
            + problem
            + "). Restore the checkpoint from a "
            + "backup. The checkpoint was not changed.",
        cause);
  }

  /** The first {@link DamagedFile} in a chain of causes, or null. */
  static DamagedFile find(Throwable e) {
    for (Throwable t = e; t != null; t = t.getCause()) {
      if (t instanceof DamagedFile damaged) {
        return damaged;
      }
    }
    return null;
  }

  private static String describe(Throwable e) {
    if (e == null) {
      return "unknown";
    }
    String message = e.getMessage();
    return e.getClass().getSimpleName() + (message == null ? "" : ": " + message);
  }
}
