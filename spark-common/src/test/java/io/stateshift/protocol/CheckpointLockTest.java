package io.stateshift.protocol;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.fasterxml.jackson.databind.ObjectMapper;
import io.stateshift.StateShiftException;
import io.stateshift.StateShiftException.Reason;
import io.stateshift.checkpoint.CheckpointFiles;
import io.stateshift.testing.ChildJvm;
import io.stateshift.testing.HoldLockMain;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.FileTime;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Consumer;
import org.apache.hadoop.conf.Configuration;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The checkpoint lock on a local disk: exclusive among concurrent takers, taken over at once from a
 * holder proven dead, a holder that stopped renewing waited out, a live one refused, and a store
 * without create-if-absent refused unless the caller assumes nothing else runs. Lease times are the
 * store's (file modification times); waits run on a clock that does not sleep.
 */
class CheckpointLockTest {
  private static final ObjectMapper JSON = new ObjectMapper();

  @TempDir Path tmp;

  /** A clock whose sleep only counts: tests see what would have been waited. */
  static final class FakeClock implements LeaseClock {
    final AtomicLong now = new AtomicLong(1_000_000);
    final List<Long> sleeps = new CopyOnWriteArrayList<>();
    Runnable duringSleep = () -> {};

    @Override
    public long nowMs() {
      return now.get();
    }

    @Override
    public void sleep(long ms) {
      sleeps.add(ms);
      now.addAndGet(ms);
      duringSleep.run();
    }
  }

  @Test
  void aLockLeftByAKilledProcessIsTakenOverAtOnce() throws Exception {
    Path checkpoint = Files.createDirectories(tmp.resolve("checkpoint"));
    Process child =
        ChildJvm.start(
            tmp.resolve("child.log"),
            List.of(),
            HoldLockMain.class.getName(),
            checkpoint.toString(),
            tmp.resolve("marker").toString());
    try {
      long deadline = System.currentTimeMillis() + 120_000;
      while (!Files.exists(tmp.resolve("marker"))) {
        assertThat(child.isAlive() && System.currentTimeMillis() < deadline)
            .as("the child took the lock; log: %s", read(tmp.resolve("child.log")))
            .isTrue();
        Thread.sleep(100);
      }
      CheckpointFiles files = files(checkpoint);
      assertThatThrownBy(() -> CheckpointLock.acquire(files, "repartition to 3", options()))
          .isInstanceOfSatisfying(
              StateShiftException.class,
              e -> assertThat(e.reason()).isEqualTo(Reason.CHECKPOINT_IN_USE))
          .hasMessageContaining("is locked by " + child.pid() + "@")
          .hasMessageContaining("(held by a child JVM)");
    } finally {
      child.destroyForcibly(); // SIGKILL: the lock file stays, its 10-minute lease running
      assertThat(child.waitFor(1, TimeUnit.MINUTES)).isTrue();
    }
    assertThat(checkpoint.resolve("_stateshift/lock")).exists();
    List<String> progress = new ArrayList<>();
    FakeClock clock = new FakeClock();
    long started = System.nanoTime();
    try (CheckpointLock lock =
        CheckpointLock.acquire(
            files(checkpoint),
            "repartition to 3",
            options().withClock(clock).withProgress(progress::add))) {
      assertThat(lockText(checkpoint)).contains("repartition to 3");
    }
    assertThat(clock.sleeps).as("nothing waited").isEmpty();
    assertThat(TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - started)).isLessThan(5_000);
    assertThat(progress).anyMatch(line -> line.contains("was left by a process that is gone"));
    assertThat(checkpoint.resolve("_stateshift")).as("released without a trace").doesNotExist();
  }

  @Test
  void aLockThisProcessReleasedButCouldNotDeleteIsTakenOverAtOnce() throws Exception {
    Path checkpoint = Files.createDirectories(tmp.resolve("checkpoint"));
    CheckpointLock first = CheckpointLock.acquire(files(checkpoint), "rollback", options());
    String left = lockText(checkpoint);
    first.close();
    // as if the deletion had failed: the file is back, written by this very process
    Files.createDirectories(checkpoint.resolve("_stateshift"));
    Files.writeString(checkpoint.resolve("_stateshift/lock"), left);
    FakeClock clock = new FakeClock();
    try (CheckpointLock lock =
        CheckpointLock.acquire(files(checkpoint), "repartition to 3", options().withClock(clock))) {
      assertThat(lockText(checkpoint)).contains("repartition to 3");
    }
    assertThat(clock.sleeps).isEmpty();
  }

  @Test
  void aHolderOnAnotherHostThatStoppedRenewingIsWaitedOutWithAProgressLine() throws Exception {
    Path checkpoint = Files.createDirectories(tmp.resolve("checkpoint"));
    writeForeignLock(checkpoint, 60_000, 50_000); // 50 s old of 60: renewals missed
    List<String> progress = new ArrayList<>();
    FakeClock clock = new FakeClock();
    long started = System.nanoTime();
    try (CheckpointLock lock =
        CheckpointLock.acquire(
            files(checkpoint),
            "repartition to 3",
            options().withClock(clock).withProgress(progress::add))) {
      assertThat(lockText(checkpoint)).contains("repartition to 3");
    }
    assertThat(progress)
        .anyMatch(
            line ->
                line.matches(
                    "waiting (9|10|11) s for the lease of 4242@elsewhere \\(repartition to 8\\) on .* to "
                        + "expire"));
    assertThat(clock.sleeps).hasSize(1);
    assertThat(clock.sleeps.get(0)).isBetween(9_000L, 12_000L);
    assertThat(TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - started))
        .as("the wait ran on the injected clock")
        .isLessThan(5_000);
  }

  @Test
  void aHolderThatRenewsWhileWaitedForIsRefused() throws Exception {
    Path checkpoint = Files.createDirectories(tmp.resolve("checkpoint"));
    writeForeignLock(checkpoint, 60_000, 50_000);
    FakeClock clock = new FakeClock();
    clock.duringSleep = () -> touch(checkpoint.resolve("_stateshift/lock"), 0); // it renews
    assertThatThrownBy(
            () ->
                CheckpointLock.acquire(
                    files(checkpoint), "repartition to 3", options().withClock(clock)))
        .isInstanceOfSatisfying(
            StateShiftException.class,
            e -> assertThat(e.reason()).isEqualTo(Reason.CHECKPOINT_IN_USE))
        .hasMessageContaining("is locked by 4242@elsewhere (repartition to 8)");
    assertThat(clock.sleeps).hasSize(1);
  }

  @Test
  void aLiveHolderOnAnotherHostIsRefusedAtOnceByTheStoreClock() throws Exception {
    Path checkpoint = Files.createDirectories(tmp.resolve("checkpoint"));
    writeForeignLock(checkpoint, 60_000, 1_000); // renewed a second ago
    String before = lockText(checkpoint);
    FakeClock clock = new FakeClock();
    assertThatThrownBy(
            () ->
                CheckpointLock.acquire(
                    files(checkpoint), "repartition to 3", options().withClock(clock)))
        .isInstanceOfSatisfying(
            StateShiftException.class,
            e -> assertThat(e.reason()).isEqualTo(Reason.CHECKPOINT_IN_USE))
        .hasMessageMatching(
            "(?s).*is locked by 4242@elsewhere \\(repartition to 8\\) until its "
                + "lease expires in (58|59|60) s.*");
    assertThat(clock.sleeps).isEmpty();
    assertThat(lockText(checkpoint)).isEqualTo(before);
    try (var files = Files.list(checkpoint.resolve("_stateshift"))) {
      assertThat(files.map(p -> p.getFileName().toString())).containsExactly("lock");
    }
  }

  /**
   * A lock whose holder runs on this host (same pid and start tick) is live even when its last
   * renewal looks a lease old, as after a wall clock stepped forward: it is refused, not taken
   * over.
   */
  @Test
  void aHolderSeenRunningOnThisHostIsRefusedEvenWhenTheClocksSayItsLeaseExpired() throws Exception {
    Path checkpoint = Files.createDirectories(tmp.resolve("checkpoint"));
    Process holder = new ProcessBuilder("sleep", "60").start();
    try {
      Path lock = Files.createDirectories(checkpoint.resolve("_stateshift")).resolve("lock");
      Files.writeString(
          lock,
          JSON.writeValueAsString(
              new CheckpointLock.Lease(
                  "x-4",
                  holder.pid() + "@here",
                  "repartition to 8",
                  60_000,
                  holder.pid(),
                  ProcessIdentity.current().hostKey(),
                  1L, // a wall-clock start that no longer matches
                  ProcessIdentity.startTicksOf(holder.pid()))));
      touch(lock, 61_000);
      String before = lockText(checkpoint);
      assertThatThrownBy(
              () ->
                  CheckpointLock.acquire(
                      files(checkpoint), "repartition to 3", options().withClock(new FakeClock())))
          .isInstanceOfSatisfying(
              StateShiftException.class,
              e -> assertThat(e.reason()).isEqualTo(Reason.CHECKPOINT_IN_USE))
          .hasMessageContaining("is locked by " + holder.pid() + "@here (repartition to 8)");
      assertThat(lockText(checkpoint)).isEqualTo(before);
    } finally {
      holder.destroyForcibly();
      holder.waitFor();
    }
  }

  @Test
  void anExpiredLeaseIsTakenOverWhateverTheClocksOfTheTwoHostsSay() throws Exception {
    Path checkpoint = Files.createDirectories(tmp.resolve("checkpoint"));
    writeForeignLock(checkpoint, 60_000, 61_000);
    FakeClock clock = new FakeClock();
    try (CheckpointLock lock =
        CheckpointLock.acquire(files(checkpoint), "repartition to 3", options().withClock(clock))) {
      assertThat(lockText(checkpoint)).contains("repartition to 3");
    }
    assertThat(clock.sleeps).isEmpty();
  }

  /**
   * Two takers at once, paused at random between their steps: exactly one holds the lock, 20 times
   * in a row, with no lock before and with a dead holder's lock to take over.
   */
  @Test
  void exactlyOneOfTwoConcurrentTakersWins() throws Exception {
    Random random = new Random(20);
    for (int trial = 0; trial < 20; trial++) {
      Path checkpoint = Files.createDirectories(tmp.resolve("race-" + trial));
      if (trial % 2 == 1) {
        writeDeadLock(checkpoint);
      }
      assertThat(race(files(checkpoint), random.nextLong()))
          .as("winners of trial %d", trial)
          .isEqualTo(1);
    }
  }

  /** Two takers race for the lock; returns how many held it. */
  static int race(CheckpointFiles files, long seed) throws Exception {
    CyclicBarrier start = new CyclicBarrier(2);
    List<Object> outcomes = new CopyOnWriteArrayList<>();
    List<CheckpointLock> held = new CopyOnWriteArrayList<>();
    CyclicBarrier done = new CyclicBarrier(2);
    List<Thread> threads = new ArrayList<>();
    for (int t = 0; t < 2; t++) {
      Random random = new Random(seed + t);
      boolean[] first = {true};
      Consumer<String> pause =
          step -> {
            try {
              if (first[0]) {
                first[0] = false;
                start.await(); // both are about to create
              }
              Thread.sleep(random.nextInt(15));
            } catch (Exception e) {
              throw new IllegalStateException(e);
            }
          };
      Thread thread =
          new Thread(
              () -> {
                try {
                  held.add(
                      CheckpointLock.acquire(
                          files,
                          "taker",
                          options().withBeforeStep(pause).withClock(new FakeClock())));
                  outcomes.add("won");
                } catch (StateShiftException e) {
                  outcomes.add(e.reason() == Reason.CHECKPOINT_IN_USE ? e.reason() : e);
                } catch (Throwable e) {
                  outcomes.add(e);
                }
                try {
                  done.await(); // hold the lock until both have tried
                } catch (Exception ignored) {
                  // the assertion below sees the outcomes
                }
              });
      threads.add(thread);
      thread.start();
    }
    for (Thread thread : threads) {
      thread.join(60_000);
    }
    for (CheckpointLock lock : held) {
      lock.close();
    }
    assertThat(outcomes)
        .hasSize(2)
        .allMatch(o -> o.equals("won") || o.equals(Reason.CHECKPOINT_IN_USE));
    return (int) outcomes.stream().filter("won"::equals).count();
  }

  @Test
  void aStoreWithoutCreateIfAbsentIsRefusedUnlessTheCallerAssumesNothingElseRuns()
      throws Exception {
    Path checkpoint = Files.createDirectories(tmp.resolve("checkpoint"));
    // Hadoop's view file system over the local disk: a create that is a check then a write
    Configuration conf = new Configuration();
    conf.set("fs.viewfs.mounttable.cp.link./data", tmp.toUri().toString());
    CheckpointFiles files = CheckpointFiles.at("viewfs://cp/data/checkpoint", conf);
    assertThat(LeaseFiles.modeOf(files)).isEqualTo(LeaseFiles.Mode.UNSAFE);
    assertThatThrownBy(() -> CheckpointLock.acquire(files, "repartition to 3", options()))
        .isInstanceOfSatisfying(
            StateShiftException.class,
            e -> assertThat(e.reason()).isEqualTo(Reason.CHECKPOINT_IN_USE))
        .hasMessageContaining("offers no create-if-absent")
        .hasMessageContaining("--assume-stopped");
    assertThat(checkpoint.resolve("_stateshift")).doesNotExist();
    List<String> progress = new ArrayList<>();
    try (CheckpointLock lock =
        CheckpointLock.acquire(
            files,
            "repartition to 3",
            options().withAllowUnsafeCreate(true).withProgress(progress::add))) {
      assertThat(lockText(checkpoint)).contains("repartition to 3");
    }
    assertThat(progress)
        .anyMatch(
            line ->
                line.startsWith("warning: ") && line.contains("Proceeding on --assume-stopped"));
  }

  // ---- helpers ----

  private static CheckpointLock.Options options() {
    return CheckpointLock.Options.defaults().withLeaseMs(60_000);
  }

  private static CheckpointFiles files(Path checkpoint) {
    return CheckpointFiles.at(checkpoint.toString(), new Configuration());
  }

  private static String lockText(Path checkpoint) throws Exception {
    return Files.readString(checkpoint.resolve("_stateshift/lock"));
  }

  private static String read(Path file) {
    try {
      return Files.readString(file);
    } catch (Exception e) {
      return "(none)";
    }
  }

  /** A lock of a process on another host, last written {@code ageMs} ago. */
  private static void writeForeignLock(Path checkpoint, long leaseMs, long ageMs) throws Exception {
    Path lock = Files.createDirectories(checkpoint.resolve("_stateshift")).resolve("lock");
    Files.writeString(
        lock,
        JSON.writeValueAsString(
            new CheckpointLock.Lease(
                "x-1",
                "4242@elsewhere",
                "repartition to 8",
                leaseMs,
                4242,
                "elsewhere|boot|pid:[1]",
                1L,
                1L)));
    touch(lock, ageMs);
  }

  /** A lock of a process of this host that has exited. */
  private static void writeDeadLock(Path checkpoint) throws Exception {
    Process gone = new ProcessBuilder("true").start();
    gone.waitFor();
    Path lock = Files.createDirectories(checkpoint.resolve("_stateshift")).resolve("lock");
    Files.writeString(
        lock,
        JSON.writeValueAsString(
            new CheckpointLock.Lease(
                "x-2",
                gone.pid() + "@here",
                "repartition to 8",
                600_000,
                gone.pid(),
                ProcessIdentity.current().hostKey(),
                1L,
                1L)));
  }

  private static void touch(Path file, long ageMs) {
    try {
      Files.setLastModifiedTime(file, FileTime.fromMillis(System.currentTimeMillis() - ageMs));
    } catch (Exception e) {
      throw new IllegalStateException(e);
    }
  }
}
