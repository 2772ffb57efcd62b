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
 */
public record ProcessIdentity(long pid, String host, String hostKey, long startMs) {

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
  public static boolean provenDead(long pid, String hostKey, long startMs) {
    if (pid <= 0 || hostKey == null || !hostKey.equals(CURRENT.hostKey)) {
      return false;
    }
    Optional<ProcessHandle> process = ProcessHandle.of(pid);
    if (process.isEmpty() || !process.get().isAlive()) {
      return true;
    }
    long started = startOf(process.get());
    // Start times are reported in whole clock ticks (10 ms) on Linux: allow for rounding.
    return startMs > 0 && started > 0 && Math.abs(started - startMs) > 1_000;
  }

  private static ProcessIdentity probe() {
    ProcessHandle self = ProcessHandle.current();
    String host = hostName();
    String key = host + "|" + read("/proc/sys/kernel/random/boot_id") + "|" + pidNamespace();
    return new ProcessIdentity(self.pid(), host, key, startOf(self));
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
