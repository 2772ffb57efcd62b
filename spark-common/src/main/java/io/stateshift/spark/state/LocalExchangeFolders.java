package io.stateshift.spark.state;

import java.io.File;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.util.Comparator;
import java.util.Optional;
import java.util.UUID;
import java.util.stream.Stream;

/**
 * The file exchanges' folders on this machine's local disk ({@code spark.local.dir} in local mode).
 * A run removes its own folder when it ends, but a killed run cannot, and its staged state (as much
 * as the checkpoint's) would stay on the disk for good. So each folder names its owner process (pid
 * and start time, which a reused pid does not match), and every new exchange first removes the
 * folders beside it whose owner is gone. A folder without an owner file is left alone: nothing
 * tells whose it is.
 */
public final class LocalExchangeFolders {
  static final String PREFIX = "stateshift-exchange-";
  static final String OWNER_FILE = "_owner";

  private LocalExchangeFolders() {}

  /**
   * Creates a new exchange folder under {@code parent}, owned by this process, after removing the
   * folders there whose owner has died.
   */
  static File create(File parent) {
    removeOrphans(parent);
    File folder = new File(parent, PREFIX + UUID.randomUUID());
    try {
      Files.createDirectories(folder.toPath());
      Files.writeString(folder.toPath().resolve(OWNER_FILE), owner(ProcessHandle.current()));
    } catch (IOException e) {
      throw new UncheckedIOException("Cannot create the exchange folder " + folder, e);
    }
    return folder;
  }

  /**
   * Removes killed runs' exchange folders from where a command in local mode puts them (the first
   * of {@code SPARK_LOCAL_DIRS}, {@code spark.local.dir} or the JVM's temporary folder, as Spark
   * chooses), for a command line that starts: its own exchange, if it runs one, does the same.
   */
  public static int removeOrphansFromLocalDir() {
    String dirs = System.getenv("SPARK_LOCAL_DIRS");
    if (dirs == null || dirs.isBlank()) {
      dirs = System.getProperty("spark.local.dir", System.getProperty("java.io.tmpdir"));
    }
    return removeOrphans(new File(dirs.split(",")[0].trim()));
  }

  /** Removes the exchange folders under {@code parent} whose owner process is gone. */
  static int removeOrphans(File parent) {
    File[] folders = parent.listFiles((dir, name) -> name.startsWith(PREFIX));
    int removed = 0;
    for (File folder : folders == null ? new File[0] : folders) {
      String owner = readOwner(folder);
      if (owner != null && !alive(owner)) {
        removed += deleteQuietly(folder) ? 1 : 0;
      }
    }
    return removed;
  }

  /** "pid startMillis": the start time tells a live owner from a later process given its pid. */
  static String owner(ProcessHandle process) {
    long started = process.info().startInstant().map(i -> i.toEpochMilli()).orElse(-1L);
    return process.pid() + " " + started;
  }

  static boolean alive(String owner) {
    String[] parts = owner.trim().split(" ");
    long pid;
    long started;
    try {
      pid = Long.parseLong(parts[0]);
      started = parts.length > 1 ? Long.parseLong(parts[1]) : -1L;
    } catch (NumberFormatException e) {
      return true; // not ours to judge
    }
    Optional<ProcessHandle> process = ProcessHandle.of(pid);
    if (process.isEmpty() || !process.get().isAlive()) {
      return false;
    }
    return started < 0 || owner(process.get()).equals(owner.trim());
  }

  private static String readOwner(File folder) {
    try {
      return Files.readString(folder.toPath().resolve(OWNER_FILE), StandardCharsets.UTF_8);
    } catch (IOException e) {
      return null; // none (NoSuchFileException), or unreadable: left alone
    }
  }

  private static boolean deleteQuietly(File folder) {
    try (Stream<java.nio.file.Path> paths = Files.walk(folder.toPath())) {
      paths.sorted(Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
    } catch (IOException | UncheckedIOException e) {
      return false; // another run removing it at the same time, or a file in use: next time
    }
    return !folder.exists();
  }
}
