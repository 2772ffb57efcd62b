package io.stateshift.protocol;

import com.fasterxml.jackson.databind.DeserializationFeature;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.stateshift.StateShiftException;
import io.stateshift.StateShiftException.Reason;
import io.stateshift.checkpoint.CheckpointFiles;
import io.stateshift.config.StateShiftConf;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.Optional;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;
import org.apache.hadoop.fs.Path;

/**
 * An exclusive lease on a checkpoint, held as the file {@code _stateshift/lock}, created only if
 * absent as one atomic step of the store ({@link LeaseFiles}; a store without one is refused unless
 * the caller assumes the query stopped and nothing else runs). The holder rewrites the file every
 * third of the lease; its age is judged by the store's own timestamps, so clocks of different hosts
 * never meet. A lock is taken over at once when its holder is proven dead (same host, its process
 * gone or replaced, see {@link ProcessIdentity}; or this process, which released it but could not
 * delete it), and after its lease otherwise. A holder that missed its renewals and has at most
 * {@code spark.stateshift.lock.maxWaitMs} (60 s) left is waited out with a progress line rather
 * than refused. The lease is 60 s by default ({@code spark.stateshift.lock.leaseMs}). A query
 * starting with StateShiftExtensions is refused while the lock is held (see {@link QueryLease}).
 */
public final class CheckpointLock implements AutoCloseable {
  public static final long DEFAULT_LEASE_MS = StateShiftConf.LOCK_LEASE_MS.parse(null);
  public static final long DEFAULT_MAX_WAIT_MS = StateShiftConf.LOCK_MAX_WAIT_MS.parse(null);

  /** The name of the thread that renews a lease in the background. */
  public static final String RENEWER_THREAD = "stateshift-lock-renewer";

  static final String FILE = RepartitionJournal.DIR + "/lock";
  private static final ObjectMapper JSON =
      new ObjectMapper().configure(DeserializationFeature.FAIL_ON_UNKNOWN_PROPERTIES, false);

  /** Ids of the locks this process holds now: one of ours not among them was released. */
  private static final Set<String> HELD_HERE = ConcurrentHashMap.newKeySet();

  private static final int MAX_ATTEMPTS = 8;

  /** The content of the lock file. */
  public record Lease(
      String id,
      String owner,
      String purpose,
      long leaseMs,
      long pid,
      String hostKey,
      long processStartMs,
      long processStartTicks) {
    /** True when this lease's holder cannot be running any more. */
    boolean holderProvenDead() {
      if (writtenByThisProcess()) {
        return id != null && !HELD_HERE.contains(id);
      }
      return ProcessIdentity.provenDead(pid, hostKey, processStartMs, processStartTicks);
    }

    /**
     * True when this lease's holder is seen holding it on this host, whatever the clocks say: a
     * wall clock stepped forward past the lease must not hand a live holder's lock to another.
     */
    boolean holderProvenAlive() {
      if (writtenByThisProcess()) {
        return id != null && HELD_HERE.contains(id);
      }
      return ProcessIdentity.provenAlive(pid, hostKey, processStartTicks);
    }

    /** Whether this process wrote the lease: then whether it still holds it is known here. */
    private boolean writtenByThisProcess() {
      ProcessIdentity me = ProcessIdentity.current();
      return pid == me.pid() && hostKey != null && hostKey.equals(me.hostKey());
    }
  }

  /** A lock found held: its lease, and how long it has left by the store's clock. */
  public record Held(Lease lease, long remainingMs) {}

  /** How to take a lock: for tests, a clock that does not sleep and a hook between steps. */
  public record Options(
      boolean allowUnsafeCreate,
      Consumer<String> progress,
      LeaseClock clock,
      long leaseMs,
      long maxWaitMs,
      Consumer<String> beforeStep) {
    public static Options defaults() {
      return new Options(
          false,
          message -> {},
          LeaseClock.SYSTEM,
          StateShiftConf.LOCK_LEASE_MS.onDriver(),
          StateShiftConf.LOCK_MAX_WAIT_MS.onDriver(),
          step -> {});
    }

    public Options withAllowUnsafeCreate(boolean allow) {
      return new Options(allow, progress, clock, leaseMs, maxWaitMs, beforeStep);
    }

    public Options withProgress(Consumer<String> to) {
      return new Options(allowUnsafeCreate, to, clock, leaseMs, maxWaitMs, beforeStep);
    }

    public Options withClock(LeaseClock to) {
      return new Options(allowUnsafeCreate, progress, to, leaseMs, maxWaitMs, beforeStep);
    }

    public Options withLeaseMs(long to) {
      return new Options(allowUnsafeCreate, progress, clock, to, maxWaitMs, beforeStep);
    }

    public Options withBeforeStep(Consumer<String> to) {
      return new Options(allowUnsafeCreate, progress, clock, leaseMs, maxWaitMs, to);
    }
  }

  private final CheckpointFiles files;
  private final Path path;
  private final String purpose;
  private final Options options;
  private final LeaseFiles.Mode mode;
  private final String id = UUID.randomUUID().toString();
  private final String text;
  private final ScheduledExecutorService renewer;

  private CheckpointLock(CheckpointFiles files, String purpose, Options options) {
    this.files = files;
    this.path = files.path(FILE);
    this.purpose = purpose;
    this.options = options;
    this.mode = LeaseFiles.modeOf(files);
    ProcessIdentity me = ProcessIdentity.current();
    this.text =
        json(
            new Lease(
                id,
                me.owner(),
                purpose,
                options.leaseMs(),
                me.pid(),
                me.hostKey(),
                me.startMs(),
                me.startTicks()));
    this.renewer =
        Executors.newSingleThreadScheduledExecutor(
            r -> {
              Thread t = new Thread(r, RENEWER_THREAD);
              t.setDaemon(true);
              return t;
            });
  }

  public static CheckpointLock acquire(CheckpointFiles files, String purpose) {
    return acquire(files, purpose, Options.defaults());
  }

  public static CheckpointLock acquire(CheckpointFiles files, String purpose, long leaseMs) {
    return acquire(files, purpose, Options.defaults().withLeaseMs(leaseMs));
  }

  /**
   * Takes the lock; {@code assumeStopped} (the user's word that nothing else runs on the
   * checkpoint) lets it proceed on a store that cannot create a file only if absent.
   */
  static CheckpointLock acquire(
      CheckpointFiles files, String purpose, boolean assumeStopped, Consumer<String> progress) {
    return acquire(
        files,
        purpose,
        Options.defaults().withAllowUnsafeCreate(assumeStopped).withProgress(progress));
  }

  public static CheckpointLock acquire(CheckpointFiles files, String purpose, Options options) {
    CheckpointLock lock = new CheckpointLock(files, purpose, options);
    HELD_HERE.add(lock.id);
    try {
      lock.take();
    } catch (RuntimeException e) {
      HELD_HERE.remove(lock.id);
      lock.renewer.shutdownNow();
      throw e;
    }
    long period = Math.max(1, options.leaseMs() / 3);
    lock.renewer.scheduleAtFixedRate(lock::renew, period, period, TimeUnit.MILLISECONDS);
    return lock;
  }

  private void take() {
    if (mode == LeaseFiles.Mode.UNSAFE) {
      if (!options.allowUnsafeCreate()) {
        throw new StateShiftException(
            Reason.CHECKPOINT_IN_USE,
            "Cannot lock checkpoint "
                + files.root()
                + ": "
                + LeaseFiles.unsafeExplanation(files)
                + " Or pass "
                + "--assume-stopped (API: assumeStopped()) if you know that no query, repartition "
                + "or rollback runs on it now.");
      }
      options
          .progress()
          .accept(
              "warning: "
                  + LeaseFiles.unsafeExplanation(files)
                  + " Proceeding on --assume-stopped.");
    }
    boolean waited = false;
    int unreadable = 0;
    try {
      for (int attempt = 0; attempt < MAX_ATTEMPTS; attempt++) {
        options.beforeStep().accept("create");
        if (LeaseFiles.createExclusive(files, path, text, mode)) {
          return;
        }
        Optional<LeaseFiles.Read> there = LeaseFiles.read(files, path);
        if (there.isEmpty()) {
          continue; // released in the meantime
        }
        Lease held = parse(there.get().text());
        if (held == null && unreadable++ < 3) {
          options.clock().sleep(1_000); // being written (HDFS shows a file before its close)
          continue;
        }
        if (held != null && held.holderProvenDead()) {
          options
              .progress()
              .accept(
                  "The lock of "
                      + held.owner()
                      + " ("
                      + held.purpose()
                      + ") was left by a process that is gone: taking it over.");
          takeOver(there.get());
          continue;
        }
        long leaseMs = held != null && held.leaseMs() > 0 ? held.leaseMs() : options.leaseMs();
        long age = LeaseFiles.storeNow(files, path.getParent()) - there.get().modifiedMs();
        long remaining = leaseMs - age;
        // seen holding it here: live, whatever its age by the clocks says
        boolean alive = held != null && held.holderProvenAlive();
        if (alive) {
          remaining = Math.max(remaining, leaseMs / 3);
        }
        if (remaining <= 0) {
          takeOver(there.get()); // expired: its holder stopped renewing, so it died
          continue;
        }
        String who =
            held == null ? "an unreadable lock" : held.owner() + " (" + held.purpose() + ")";
        // A live holder rewrites the lock every third of its lease; one that let half of it
        // pass without is most likely dead: wait for the rest rather than refuse.
        if (!waited && !alive && age > leaseMs / 2 && remaining <= options.maxWaitMs()) {
          options
              .progress()
              .accept(
                  "waiting "
                      + (remaining + 999) / 1000
                      + " s for the lease of "
                      + who
                      + " on "
                      + files.root()
                      + " to expire");
          // S3 gives modification times in whole seconds: a second more makes sure.
          options.clock().sleep(remaining + 1_000);
          waited = true;
          Optional<LeaseFiles.Read> after = LeaseFiles.read(files, path);
          if (after.isPresent() && after.get().equals(there.get())) {
            takeOver(there.get()); // not renewed in all that time: its holder is dead
          }
          continue;
        }
        throw new StateShiftException(
            Reason.CHECKPOINT_IN_USE,
            "Checkpoint "
                + files.root()
                + " is locked by "
                + who
                + " until its lease expires in "
                + (remaining + 999) / 1000
                + " s. Wait for it to finish; a lease whose holder "
                + "died expires by itself (at once when the holder ran on this host).");
      }
    } catch (IOException | java.io.UncheckedIOException e) {
      throw new StateShiftException(
          Reason.CHECKPOINT_NOT_WRITABLE,
          "Cannot write to checkpoint "
              + files.root()
              + " ("
              + e.getMessage()
              + "). "
              + "Repartitioning needs write access to the checkpoint folder.",
          e);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new StateShiftException(
          Reason.FAILED, "Interrupted while waiting for the lock of " + files.root(), e);
    }
    throw new StateShiftException(
        Reason.CHECKPOINT_IN_USE,
        "Checkpoint " + files.root() + " is being locked by another process. Try again.");
  }

  /**
   * Removes a lock found dead. Several takers may find the same dead lock; only the one that
   * creates its take-over marker (create-if-absent, named after that very lock) removes it, and
   * only if the lock is still that one. A taker that read the dead lock long ago and comes late
   * finds another lock there and leaves it alone.
   */
  private void takeOver(LeaseFiles.Read dead) throws IOException {
    Path marker =
        files.path(
            RepartitionJournal.DIR
                + "/takeover-"
                + UUID.nameUUIDFromBytes(
                    (dead.text() + "@" + dead.modifiedMs()).getBytes(StandardCharsets.UTF_8)));
    options.beforeStep().accept("takeover");
    if (!LeaseFiles.createExclusive(files, marker, text, mode)) {
      // Another taker is at it. Its marker outlives it only if it died within these few steps:
      // then the marker's own holder is dead, or the marker is older than a lease.
      Optional<LeaseFiles.Read> other = LeaseFiles.read(files, marker);
      if (other.isPresent()) {
        Lease taker = parse(other.get().text());
        long age = LeaseFiles.storeNow(files, marker.getParent()) - other.get().modifiedMs();
        if ((taker != null && taker.holderProvenDead()) || age > options.leaseMs()) {
          files.deleteQuietly(marker);
        }
      }
      return;
    }
    try {
      Optional<LeaseFiles.Read> still = LeaseFiles.read(files, path);
      if (still.isPresent() && still.get().equals(dead)) {
        options.beforeStep().accept("delete");
        files.delete(path, false);
      }
    } finally {
      files.deleteQuietly(marker);
    }
  }

  /** The holder of the lock, if it is held, its holder not proven dead and its lease not over. */
  static Optional<Held> liveHolder(CheckpointFiles files) {
    Path path = files.path(FILE);
    Optional<LeaseFiles.Read> there = LeaseFiles.read(files, path);
    if (there.isEmpty()) {
      return Optional.empty();
    }
    Lease held = parse(there.get().text());
    if (held == null || held.holderProvenDead()) {
      return Optional.empty(); // unreadable: a holder that died while writing it
    }
    long leaseMs = held.leaseMs() > 0 ? held.leaseMs() : DEFAULT_LEASE_MS;
    long remaining =
        there.get().modifiedMs() + leaseMs - LeaseFiles.storeNow(files, path.getParent());
    if (held.holderProvenAlive()) {
      remaining = Math.max(remaining, leaseMs / 3); // live here, whatever the clocks say
    }
    return remaining > 0 ? Optional.of(new Held(held, remaining)) : Optional.empty();
  }

  private static Lease parse(String text) {
    try {
      Lease lease = JSON.readValue(text, Lease.class);
      return lease.owner() == null ? null : lease;
    } catch (Exception e) {
      return null; // unreadable: a holder died while writing it, or it is being written
    }
  }

  private static String json(Lease lease) {
    try {
      return JSON.writeValueAsString(lease);
    } catch (com.fasterxml.jackson.core.JsonProcessingException e) {
      throw new IllegalStateException(e);
    }
  }

  /** True while the lock file is this lock's: a lock taken over after a long stall is not. */
  private boolean stillMine() {
    return LeaseFiles.read(files, path).map(read -> read.text().equals(text)).orElse(false);
  }

  private void renew() {
    try {
      if (stillMine()) {
        // The same text: the rewrite gives the file a new modification time on the store.
        LeaseFiles.replace(files, path, text, mode);
      }
    } catch (IOException | RuntimeException ignored) {
      // a missed renewal shortens the lease; the next one retries
    }
  }

  @Override
  public void close() {
    renewer.shutdownNow();
    try {
      // a renewal in flight would write the lock again after its deletion
      renewer.awaitTermination(10, TimeUnit.SECONDS);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
    try {
      if (stillMine()) {
        files.deleteQuietly(path);
      }
    } catch (RuntimeException ignored) {
      // left behind: this process no longer lists it as held, so a next taker here takes it over
    } finally {
      HELD_HERE.remove(id);
    }
    Path dir = path.getParent();
    if (files.list(dir).isEmpty()) {
      files.deleteQuietly(dir); // leave no trace on a checkpoint that was not changed
    }
  }
}
