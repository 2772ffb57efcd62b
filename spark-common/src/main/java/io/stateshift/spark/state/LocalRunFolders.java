package io.stateshift.spark.state;

import java.io.File;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.util.Comparator;
import java.util.List;
import java.util.Optional;
import java.util.UUID;
import java.util.stream.Stream;
import org.apache.spark.SparkConf;
import org.apache.spark.util.Utils;

/**
 * The folders a run keeps on this machine's local disk ({@code spark.local.dir}) in local mode: the
 * file exchanges' folders, and Spark's own of a command's session ({@code spark-*}, where the state
 * stores' local copies live, and {@code blockmgr-*}, the shuffle's files). A run removes them when
 * it ends, but a killed run cannot, and what they hold (as much as the checkpoint's state) would
 * stay on the disk for good. So each such folder names its owner process (pid and start time, which
 * a reused pid does not match), and the next command, or the next exchange, removes those whose
 * owner is gone. A folder without an owner file is left alone: nothing tells whose it is (another
 * Spark application's, say).
 */
public final class LocalRunFolders {
  static final String PREFIX = "stateshift-exchange-";
  static final String OWNER_FILE = "_owner";

  /** The folders a run may own: its exchanges', and Spark's own in {@code spark.local.dir}. */
  private static final List<String> OWNED_PREFIXES = List.of(PREFIX, "spark-", "blockmgr-");

  private LocalRunFolders() {}

  /**
   * Creates a new exchange folder under {@code parent}, owned by this process, after removing the
   * folders there whose owner has died.
   */
  static File create(File parent) {
    removeOrphans(parent);
    File folder = new File(parent, PREFIX + UUID.randomUUID());
    try {
      Files.createDirectories(folder.toPath());
      claim(folder);
    } catch (IOException e) {
      throw new UncheckedIOException("Cannot create the exchange folder " + folder, e);
    }
    return folder;
  }

  /**
   * Makes this process the owner of the local folders of a command's own session in local mode
   * (Spark's {@code spark-*} and {@code blockmgr-*} folders), so that the next command removes them
   * if this one is killed, and removes those of killed commands before it. Only a command's own
   * session: an application's folders are Spark's, and the application's, to manage.
   */
  public static void claimSessionFolders(SparkConf conf, List<File> sessionFolders) {
    for (File folder : sessionFolders) {
      try {
        claim(folder);
      } catch (IOException e) {
        // not claimed: left behind if this run is killed, as by Spark itself
      }
    }
    for (String root : Utils.getConfiguredLocalDirs(conf)) {
      removeOrphans(new File(root));
    }
  }

  private static void claim(File folder) throws IOException {
    Files.writeString(folder.toPath().resolve(OWNER_FILE), owner(ProcessHandle.current()));
  }

  /**
   * Removes killed runs' folders from where a command in local mode puts them (the first of {@code
   * SPARK_LOCAL_DIRS}, {@code spark.local.dir} or the JVM's temporary folder, as Spark chooses),
   * for a command line that starts: a head start on {@link #claimSessionFolders}.
   */
  public static int removeOrphansFromLocalDir() {
    String dirs = System.getenv("SPARK_LOCAL_DIRS");
    if (dirs == null || dirs.isBlank()) {
      dirs = System.getProperty("spark.local.dir", System.getProperty("java.io.tmpdir"));
    }
    return removeOrphans(new File(dirs.split(",")[0].trim()));
  }

  /** Removes the folders under {@code parent} that a run owned and whose owner process is gone. */
  static int removeOrphans(File parent) {
    File[] folders =
        parent.listFiles((dir, name) -> OWNED_PREFIXES.stream().anyMatch(name::startsWith));
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
    return process.pid() + " " + startMillis(process);
  }

  /** The process's start time, -1 where the system does not tell it. */
  private static long startMillis(ProcessHandle process) {
    return process.info().startInstant().map(i -> i.toEpochMilli()).orElse(-1L);
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
    long startedNow = startMillis(process.get());
    // a start time that either side does not know cannot prove the owner gone
    return started < 0 || startedNow < 0 || startedNow == started;
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
