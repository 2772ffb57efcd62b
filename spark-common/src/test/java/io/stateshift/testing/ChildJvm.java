package io.stateshift.testing;

import static org.assertj.core.api.Assertions.assertThat;

import io.stateshift.protocol.FailPoints;
import java.io.File;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

/** Runs the stateshift command line in a separate JVM, so a test can kill it for real. */
public final class ChildJvm {
  private ChildJvm() {}

  /** Runs the CLI with extra system properties; returns the exit code (137 when SIGKILLed). */
  public static int runCli(Path log, List<String> systemProperties, String... args)
      throws Exception {
    return run(log, systemProperties, "io.stateshift.cli.StateShiftCli", args);
  }

  /**
   * Runs the CLI killed with SIGKILL at failpoint {@code point}, then the same command line again
   * at once, as a user does after a crash; the first must have been killed (exit 137), the second
   * must succeed. Logs go to {@code killed.log} and {@code again.log} in {@code dir}.
   */
  public static void killAtThenRunAgain(Path dir, String point, String... args) throws Exception {
    Path killedLog = dir.resolve("killed.log");
    int killed = runCli(killedLog, List.of("-D" + FailPoints.PROPERTY + "=" + point), args);
    assertThat(killed).as("exit code; log: %s", Files.readString(killedLog)).isEqualTo(137);
    Path againLog = dir.resolve("again.log");
    int again = runCli(againLog, List.of(), args);
    assertThat(again).as("rerun; log: %s", Files.readString(againLog)).isZero();
  }

  /** Runs a main class of the test class path to its end; returns the exit code. */
  public static int run(Path log, List<String> systemProperties, String mainClass, String... args)
      throws Exception {
    Process process = start(log, systemProperties, mainClass, args);
    if (!process.waitFor(5, TimeUnit.MINUTES)) {
      process.destroyForcibly();
      throw new IllegalStateException("child JVM did not finish; see " + log);
    }
    return process.exitValue();
  }

  /**
   * Starts a main class of the test class path in a new JVM, output to {@code log}. The JIT is
   * limited to its first tier: these JVMs live for seconds, and start-up dominates. Its temporary
   * files (Spark's local dirs, RocksDB's native library, staged exchange files) go to a folder
   * beside the log, inside the test's own temporary folder: a JVM the test kills cannot delete
   * them, and the test's clean-up then does.
   */
  public static Process start(
      Path log, List<String> systemProperties, String mainClass, String... args) throws Exception {
    List<String> command = new ArrayList<>();
    command.add(Path.of(System.getProperty("java.home"), "bin", "java").toString());
    command.add("@" + ProjectFiles.sparkJvmOptions());
    command.add("-Xmx1g");
    command.add("-XX:TieredStopAtLevel=1");
    command.add("-XX:+UseSerialGC");
    Path tmp = log.resolveSibling(log.getFileName() + ".tmp");
    Files.createDirectories(tmp);
    command.add("-Djava.io.tmpdir=" + tmp); // a system property given below wins
    command.addAll(systemProperties);
    command.add("-cp");
    command.add(System.getProperty("java.class.path"));
    command.add(mainClass);
    command.addAll(List.of(args));
    return new ProcessBuilder(command)
        .redirectErrorStream(true)
        .redirectOutput(log.toFile())
        .start();
  }

  public static String classPathSeparator() {
    return File.pathSeparator;
  }
}
