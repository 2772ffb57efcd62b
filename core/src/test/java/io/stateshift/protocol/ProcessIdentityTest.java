package io.stateshift.protocol;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/**
 * A holder on this host is judged by its boot-relative start, so a wall clock stepped between its
 * record and the check (NTP, a virtual machine restored) neither kills a live holder nor revives a
 * dead one.
 */
class ProcessIdentityTest {

  @Test
  void aLiveHolderWhoseWallClockStartMovedIsNotDead() throws Exception {
    assumeTrue(Files.exists(Path.of("/proc/self/stat")), "needs Linux's /proc");
    Process holder = new ProcessBuilder("sleep", "60").start();
    try {
      long ticks = ProcessIdentity.startTicksOf(holder.pid());
      assertThat(ticks).isPositive();
      String hostKey = ProcessIdentity.current().hostKey();
      long wallClockStart = holder.info().startInstant().orElseThrow().toEpochMilli();
      long steppedByAnHour = wallClockStart - TimeUnit.HOURS.toMillis(1);

      assertThat(ProcessIdentity.provenDead(holder.pid(), hostKey, steppedByAnHour, ticks))
          .isFalse();
      assertThat(ProcessIdentity.provenAlive(holder.pid(), hostKey, ticks)).isTrue();
      // another process now under the holder's pid: another start tick
      assertThat(ProcessIdentity.provenDead(holder.pid(), hostKey, wallClockStart, ticks + 1))
          .isTrue();
      assertThat(ProcessIdentity.provenAlive(holder.pid(), hostKey, ticks + 1)).isFalse();
      // records without ticks (older ones) fall back to the wall-clock start
      assertThat(ProcessIdentity.provenDead(holder.pid(), hostKey, wallClockStart, 0)).isFalse();
      // another host's key proves nothing either way
      assertThat(ProcessIdentity.provenDead(holder.pid(), "elsewhere", steppedByAnHour, 1))
          .isFalse();
      assertThat(ProcessIdentity.provenAlive(holder.pid(), "elsewhere", ticks)).isFalse();
    } finally {
      holder.destroyForcibly();
      holder.waitFor();
    }
    assertThat(
            ProcessIdentity.provenDead(holder.pid(), ProcessIdentity.current().hostKey(), 1L, 1L))
        .as("its process is gone")
        .isTrue();
  }

  @Test
  void thisProcessKnowsItsOwnStartTick() {
    assumeTrue(Files.exists(Path.of("/proc/self/stat")), "needs Linux's /proc");
    ProcessIdentity me = ProcessIdentity.current();
    assertThat(me.startTicks()).isPositive().isEqualTo(ProcessIdentity.startTicksOf(me.pid()));
    assertThat(ProcessIdentity.provenAlive(me.pid(), me.hostKey(), me.startTicks())).isTrue();
  }
}
