package io.stateshift.protocol;

import java.net.InetAddress;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Optional;

/**
 * Who holds a lock or lease, precisely enough to prove from the same host that the holder is dead.
 * A pid alone is not enough: pids are reused, and containers on one host repeat them (and often the
 * host name). So the record also carries the process's start time and a host key made of the host
 * name, the kernel's boot id and the pid namespace: a reader with the same host key sees the same
 * processes, and a holder whose pid is gone, or now belongs to a process that started at another
 * time, is dead.
 *
 * <p>The start is compared in the kernel's clock ticks since boot ({@code /proc/<pid>/stat}) where
 * both sides know it: Java's start instant is that count added to the boot time in wall-clock
 * terms, which moves when the wall clock is stepped (NTP, a virtual machine restored or migrated),
 * and a step between the holder's record and the reader's check would otherwise make a live holder
 * look like another process.
 */
public record ProcessIdentity(
    long pid, String host, String hostKey, long startMs, long startTicks) {

  private static final ProcessIdentity CURRENT = probe();

  public static ProcessIdentity current() {
    return CURRENT;
  }

  /** {@code pid@host}, as Java names a process (and as messages show it). */
  public String owner() {
    return pid + "@" + host;
  }

  /**
   * True only when this process can see the holder's processes (same host key) and the holder's
   * process is gone or is another process now. Unknown fields (an older record, a platform without
   * start times) never prove anything.
   */
  public static boolean provenDead(long pid, String hostKey, long startMs, long startTicks) {
    if (pid <= 0 || hostKey == null || !hostKey.equals(CURRENT.hostKey)) {
      return false;
    }
    Optional<ProcessHandle> process = ProcessHandle.of(pid);
    if (process.isEmpty() || !process.get().isAlive()) {
      return true;
    }
    long ticks = startTicksOf(pid);
    if (startTicks > 0 && ticks > 0) {
      return ticks != startTicks;
    }
    long started = startOf(process.get());
    // Start times are reported in whole clock ticks (10 ms) on Linux: allow for rounding.
    return startMs > 0 && started > 0 && Math.abs(started - startMs) > 1_000;
  }

  /**
   * True only when the holder's process is running on this host: same host key, its pid alive and
   * started at the recorded clock tick. A lease such a holder wrote is live whatever the clocks
   * say.
   */
  public static boolean provenAlive(long pid, String hostKey, long startTicks) {
    if (pid <= 0 || startTicks <= 0 || hostKey == null || !hostKey.equals(CURRENT.hostKey)) {
      return false;
    }
    Optional<ProcessHandle> process = ProcessHandle.of(pid);
    return process.isPresent() && process.get().isAlive() && startTicksOf(pid) == startTicks;
  }

  private static ProcessIdentity probe() {
    ProcessHandle self = ProcessHandle.current();
    String host = hostName();
    String key = host + "|" + read("/proc/sys/kernel/random/boot_id") + "|" + pidNamespace();
    return new ProcessIdentity(self.pid(), host, key, startOf(self), startTicksOf(self.pid()));
  }

  /**
   * A process's start in clock ticks since boot (field 22 of {@code /proc/<pid>/stat}, after the
   * command name in parentheses, which may itself hold spaces); 0 where unknown.
   */
  static long startTicksOf(long pid) {
    String stat = read("/proc/" + pid + "/stat");
    int end = stat.lastIndexOf(')');
    if (end < 0) {
      return 0;
    }
    String[] fields = stat.substring(end + 1).trim().split(" ");
    // fields[0] is the state, field 3 of the file; the start time is field 22
    int index = 22 - 3;
    try {
      return fields.length > index ? Long.parseLong(fields[index]) : 0;
    } catch (NumberFormatException e) {
      return 0;
    }
  }

  private static long startOf(ProcessHandle process) {
    return process.info().startInstant().map(java.time.Instant::toEpochMilli).orElse(0L);
  }

  private static String hostName() {
    String name = System.getenv("HOSTNAME");
    try {
      name = InetAddress.getLocalHost().getHostName();
    } catch (Exception e) {
      // keep the environment's name, or the JVM's own naming below
    }
    if (name == null || name.isBlank()) {
      String jvm = java.lang.management.ManagementFactory.getRuntimeMXBean().getName();
      name = jvm.substring(jvm.indexOf('@') + 1);
    }
    return name;
  }

  private static String read(String file) {
    try {
      return Files.readString(Path.of(file)).trim();
    } catch (Exception e) {
      return "";
    }
  }

  private static String pidNamespace() {
    try {
      return Files.readSymbolicLink(Path.of("/proc/self/ns/pid")).toString();
    } catch (Exception e) {
      return "";
    }
  }
}
