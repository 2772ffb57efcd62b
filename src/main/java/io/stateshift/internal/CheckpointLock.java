package io.stateshift.internal;

import com.fasterxml.jackson.databind.ObjectMapper;
import io.stateshift.StateShiftException;
import io.stateshift.StateShiftException.Reason;
import java.io.IOException;
import java.io.OutputStream;
import java.lang.management.ManagementFactory;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import org.apache.hadoop.fs.FileAlreadyExistsException;
import org.apache.hadoop.fs.Path;

/**
 * An exclusive lease on a checkpoint, held as the file {@code _stateshift/lock}, created only if
 * absent (atomic on HDFS and object stores with conditional create). The holder renews the lease
 * every third of its length; a holder that died stops renewing, and once the lease has expired the
 * next caller takes it over, so a crash never blocks the checkpoint for longer than one lease
 * (60 s by default, {@code -Dstateshift.lockLeaseMs}). A query starting with StateShiftExtensions
 * is refused while the lock is held (see {@link QueryLease}).
 */
public final class CheckpointLock implements AutoCloseable {
  public static final long DEFAULT_LEASE_MS = 60_000;
  /** The name of the thread that renews a lease in the background. */
  public static final String RENEWER_THREAD = "stateshift-lock-renewer";
  private static final ObjectMapper JSON = new ObjectMapper();

  /** The content of the lock file. */
  public record Lease(String owner, String purpose, long expiresAtMs) {}

  private final CheckpointFiles files;
  private final Path path;
  private final String owner;
  private final String purpose;
  private final long leaseMs;
  private final ScheduledExecutorService renewer;

  private CheckpointLock(CheckpointFiles files, String purpose, long leaseMs) {
    this.files = files;
    this.path = files.path(RepartitionJournal.DIR + "/lock");
    this.owner = ManagementFactory.getRuntimeMXBean().getName();
    this.purpose = purpose;
    this.leaseMs = leaseMs;
    this.renewer = Executors.newSingleThreadScheduledExecutor(r -> {
      Thread t = new Thread(r, RENEWER_THREAD);
      t.setDaemon(true);
      return t;
    });
  }

  public static CheckpointLock acquire(CheckpointFiles files, String purpose) {
    return acquire(files, purpose, Long.getLong("stateshift.lockLeaseMs", DEFAULT_LEASE_MS));
  }

  public static CheckpointLock acquire(CheckpointFiles files, String purpose, long leaseMs) {
    CheckpointLock lock = new CheckpointLock(files, purpose, leaseMs);
    lock.take();
    lock.renewer.scheduleAtFixedRate(lock::renew, leaseMs / 3, leaseMs / 3, TimeUnit.MILLISECONDS);
    return lock;
  }

  private void take() {
    for (int attempt = 0; attempt < 2; attempt++) {
      try {
        files.fs().mkdirs(path.getParent());
        try (OutputStream out = files.fs().create(path, false)) {
          out.write(leaseJson().getBytes(StandardCharsets.UTF_8));
        }
        return;
      } catch (FileAlreadyExistsException e) {
        Lease held = readLease();
        if (held != null && held.expiresAtMs() > System.currentTimeMillis()) {
          throw new StateShiftException(Reason.CHECKPOINT_IN_USE,
              "Checkpoint " + files.root() + " is locked by " + held.owner() + " ("
                  + held.purpose() + ") until its lease expires in "
                  + (held.expiresAtMs() - System.currentTimeMillis()) / 1000 + " s. Wait for it to "
                  + "finish; a lease whose holder died expires by itself.");
        }
        files.deleteQuietly(path); // expired: its holder stopped renewing, so it died
      } catch (IOException e) {
        throw new StateShiftException(Reason.CHECKPOINT_NOT_WRITABLE,
            "Cannot write to checkpoint " + files.root() + " (" + e.getMessage() + "). "
                + "Repartitioning needs write access to the checkpoint folder.", e);
      }
    }
    throw new StateShiftException(Reason.CHECKPOINT_IN_USE,
        "Checkpoint " + files.root() + " is being locked by another process. Try again.");
  }

  private Lease readLease() {
    return read(files, path);
  }

  /** The holder of the lock, if it is held and its lease has not expired. */
  static java.util.Optional<Lease> liveHolder(CheckpointFiles files) {
    Path path = files.path(RepartitionJournal.DIR + "/lock");
    if (!files.exists(path)) {
      return java.util.Optional.empty();
    }
    Lease held = read(files, path);
    return held != null && held.expiresAtMs() > System.currentTimeMillis()
        ? java.util.Optional.of(held) : java.util.Optional.empty();
  }

  private static Lease read(CheckpointFiles files, Path path) {
    try {
      return JSON.readValue(files.readText(path), Lease.class);
    } catch (Exception e) {
      return null; // unreadable: a holder died while writing it
    }
  }

  private String leaseJson() {
    try {
      return JSON.writeValueAsString(
          new Lease(owner, purpose, System.currentTimeMillis() + leaseMs));
    } catch (com.fasterxml.jackson.core.JsonProcessingException e) {
      throw new IllegalStateException(e);
    }
  }

  private void renew() {
    try {
      files.replace(path, leaseJson());
    } catch (RuntimeException ignored) {
      // a missed renewal shortens the lease; the next one retries
    }
  }

  @Override
  public void close() {
    renewer.shutdownNow();
    files.deleteQuietly(path);
    Path dir = path.getParent();
    if (files.list(dir).isEmpty()) {
      files.deleteQuietly(dir); // leave no trace on a checkpoint that was not changed
    }
  }
}
