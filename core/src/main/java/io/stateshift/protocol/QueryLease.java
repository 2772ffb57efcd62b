package io.stateshift.protocol;

import com.fasterxml.jackson.databind.DeserializationFeature;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.stateshift.StateShiftException;
import io.stateshift.StateShiftException.Reason;
import io.stateshift.checkpoint.CheckpointFiles;
import io.stateshift.config.StateShiftConf;
import java.util.Map;
import java.util.Optional;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;
import org.apache.hadoop.fs.Path;

/**
 * The lease a running query holds on its checkpoint, as the file {@code _stateshift/query-lease},
 * so that a repartition or rollback in any process sees that the query runs. The
 * StateShiftExtensions listener takes it when the query starts, renews it every third of its length
 * while the query is active and deletes it when the query ends. A holder that died stops renewing:
 * the lease then expires after its length (60 s by default, {@code
 * spark.stateshift.query.leaseMs}), judged by the store's timestamps, and an expired lease is proof
 * that its query stopped. On the holder's own host its death is proven at once (see {@link
 * ProcessIdentity}).
 */
public final class QueryLease {
  public static final long DEFAULT_LEASE_MS = StateShiftConf.QUERY_LEASE_MS.parse(null);
  static final String FILE = RepartitionJournal.DIR + "/query-lease";
  private static final ObjectMapper JSON =
      new ObjectMapper().configure(DeserializationFeature.FAIL_ON_UNKNOWN_PROPERTIES, false);
  private static final ScheduledExecutorService RENEWER =
      Executors.newSingleThreadScheduledExecutor(
          r -> {
            Thread t = new Thread(r, "stateshift-query-lease-renewer");
            t.setDaemon(true);
            return t;
          });

  /** Leases held by queries of this process, by run id. */
  private static final Map<UUID, QueryLease> HELD = new ConcurrentHashMap<>();

  /** When runs of this process ended, by query id: they explain log writes up to then. */
  private static final Map<String, Long> STOPPED_HERE = new ConcurrentHashMap<>();

  /** The content of the lease file. */
  public record Holder(
      String queryId,
      String runId,
      String owner,
      long leaseMs,
      long pid,
      String hostKey,
      long processStartMs,
      long processStartTicks) {
    boolean inThisProcess() {
      ProcessIdentity me = ProcessIdentity.current();
      return pid == me.pid() && me.hostKey().equals(hostKey);
    }
  }

  /** A lease file read: its holder and the store's modification time of it. */
  record Found(Holder holder, long modifiedMs) {
    /** What is left of the lease by the store's clock. */
    long remainingMs(CheckpointFiles files) {
      long leaseMs = holder.leaseMs() > 0 ? holder.leaseMs() : DEFAULT_LEASE_MS;
      Path path = files.path(FILE);
      return modifiedMs + leaseMs - LeaseFiles.storeNow(files, path.getParent());
    }

    /**
     * Its holder is seen running on this host (same pid and start tick): its lease is live whatever
     * the clocks say, so a wall clock stepped forward (NTP, a virtual machine restored) does not
     * hand a live query's state to a change.
     */
    boolean holderProvenAlive() {
      return ProcessIdentity.provenAlive(
          holder.pid(), holder.hostKey(), holder.processStartTicks());
    }

    /** Its holder cannot be running: its process on this host is gone or was replaced. */
    boolean holderProvenDead() {
      return !holder.inThisProcess()
          && ProcessIdentity.provenDead(
              holder.pid(), holder.hostKey(), holder.processStartMs(), holder.processStartTicks());
    }
  }

  private final CheckpointFiles files;
  private final UUID queryId;
  private final UUID runId;
  private final BooleanSupplier active;
  private final long leaseMs;
  private volatile ScheduledFuture<?> renewal;

  private QueryLease(
      CheckpointFiles files, UUID queryId, UUID runId, BooleanSupplier active, long leaseMs) {
    this.files = files;
    this.queryId = queryId;
    this.runId = runId;
    this.active = active;
    this.leaseMs = leaseMs;
  }

  /**
   * Takes the lease for a starting query. Refuses the start while a repartition or rollback holds
   * the checkpoint lock: the query writes its lease first and checks the lock second, and a
   * repartition takes the lock first and checks for a lease second, so one of the two always sees
   * the other.
   */
  public static void take(CheckpointFiles files, UUID queryId, UUID runId, BooleanSupplier active) {
    QueryLease lease =
        new QueryLease(files, queryId, runId, active, StateShiftConf.QUERY_LEASE_MS.onDriver());
    STOPPED_HERE.remove(queryId.toString());
    HELD.put(runId, lease);
    lease.write();
    Optional<CheckpointLock.Held> lock = CheckpointLock.liveHolder(files);
    if (lock.isPresent()) {
      lease.release();
      CheckpointLock.Lease held = lock.get().lease();
      throw new StateShiftException(
          Reason.CHECKPOINT_IN_USE,
          "Checkpoint "
              + files.root()
              + " is locked by "
              + held.owner()
              + " ("
              + held.purpose()
              + "), so the query cannot start on it now. Start it again when that is done; if "
              + "that process died, its lock expires in "
              + (lock.get().remainingMs() + 999) / 1000
              + " s.");
    }
    long period = Math.max(1, lease.leaseMs / 3);
    lease.renewal =
        RENEWER.scheduleAtFixedRate(lease::renewOrRelease, period, period, TimeUnit.MILLISECONDS);
  }

  /** Releases the lease of a query run of this process, if it holds one. */
  public static void release(UUID runId) {
    QueryLease lease = HELD.get(runId);
    if (lease != null) {
      lease.release();
    }
  }

  /**
   * Why a repartition or rollback must not start now because a query holds the lease, or empty. The
   * starting query of the on-demand path does not count (it waits for the repartition), nor does an
   * expired lease, nor a lease of this process whose query has ended.
   */
  public static Optional<String> refusal(CheckpointFiles files, UUID startingQuery) {
    Optional<Found> read = read(files);
    if (read.isEmpty()) {
      return Optional.empty();
    }
    Holder holder = read.get().holder();
    if ((startingQuery != null && holder.queryId().equals(startingQuery.toString()))
        || read.get().holderProvenDead()) {
      return Optional.empty();
    }
    if (holder.inThisProcess()) {
      QueryLease here = HELD.get(UUID.fromString(holder.runId()));
      if (here == null || !here.active.getAsBoolean()) {
        return Optional.empty(); // ended here; its termination event has not been handled yet
      }
    }
    long remaining = read.get().remainingMs(files);
    if (remaining <= 0 && read.get().holderProvenAlive()) {
      remaining = holder.leaseMs() > 0 ? holder.leaseMs() : DEFAULT_LEASE_MS;
    }
    if (remaining <= 0) {
      return Optional.empty();
    }
    return Optional.of(
        "Query "
            + holder.queryId()
            + " (run "
            + holder.runId()
            + ") is running "
            + "on checkpoint "
            + files.root()
            + " in process "
            + holder.owner()
            + ": it holds the "
            + "query lease, which it renews while it runs. Stop the query before changing its state. "
            + "If its process has died, the lease expires by itself in "
            + (remaining + 999) / 1000
            + " s; try again then.");
  }

  /**
   * True when a lease file is present but its holder died without releasing it: the lease expired,
   * or its process on this host is gone.
   */
  public static boolean expiredLeasePresent(CheckpointFiles files) {
    return read(files)
        .map(
            found ->
                found.holderProvenDead()
                    || (found.remainingMs(files) <= 0 && !found.holderProvenAlive()))
        .orElse(false);
  }

  /**
   * True when a query with this id ran in this process with the lease and had ended by {@code
   * writtenAtMs}: a log write at that time was its own.
   */
  public static boolean stoppedInThisProcessBy(String queryId, long writtenAtMs) {
    Long stoppedAt = STOPPED_HERE.get(queryId);
    if (stoppedAt != null && writtenAtMs <= stoppedAt) {
      return true;
    }
    return HELD.values().stream()
        .anyMatch(
            lease -> // ended, termination not yet handled
            lease.queryId.toString().equals(queryId) && !lease.active.getAsBoolean());
  }

  static Optional<Found> read(CheckpointFiles files) {
    try {
      Optional<LeaseFiles.Read> read = LeaseFiles.read(files, files.path(FILE));
      if (read.isEmpty()) {
        return Optional.empty();
      }
      Holder holder = JSON.readValue(read.get().text(), Holder.class);
      return holder.queryId() == null || holder.runId() == null
          ? Optional.empty()
          : Optional.of(new Found(holder, read.get().modifiedMs()));
    } catch (Exception e) {
      return Optional.empty(); // half written by a holder that died, or already deleted
    }
  }

  private void write() {
    ProcessIdentity me = ProcessIdentity.current();
    try {
      // Replaced in one step where the store can: a reader never finds the lease missing.
      LeaseFiles.replace(
          files,
          files.path(FILE),
          JSON.writeValueAsString(
              new Holder(
                  queryId.toString(),
                  runId.toString(),
                  me.owner(),
                  leaseMs,
                  me.pid(),
                  me.hostKey(),
                  me.startMs(),
                  me.startTicks())),
          LeaseFiles.modeOf(files));
    } catch (com.fasterxml.jackson.core.JsonProcessingException e) {
      throw new IllegalStateException(e);
    } catch (java.io.IOException e) {
      throw new java.io.UncheckedIOException(
          "Cannot write " + files.path(FILE) + ": " + e.getMessage(), e);
    }
  }

  private void renewOrRelease() {
    try {
      if (active.getAsBoolean()) {
        write();
      } else {
        release();
      }
    } catch (RuntimeException ignored) {
      // a missed renewal shortens the lease; the next one retries
    }
  }

  private synchronized void release() {
    if (HELD.remove(runId) == null) {
      return;
    }
    if (renewal != null) {
      renewal.cancel(false);
    }
    STOPPED_HERE.put(queryId.toString(), System.currentTimeMillis());
    Path path = files.path(FILE);
    if (read(files).map(found -> found.holder().runId().equals(runId.toString())).orElse(false)) {
      files.deleteQuietly(path);
    }
    Path dir = path.getParent();
    if (files.exists(dir) && files.list(dir).isEmpty()) {
      files.deleteQuietly(dir); // leave no trace of the lease
    }
  }
}
