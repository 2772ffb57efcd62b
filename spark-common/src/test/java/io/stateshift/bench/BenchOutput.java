package io.stateshift.bench;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;

/** What the benchmarks print and record beside their timings: progress lines, logs, the commit. */
final class BenchOutput {
  private BenchOutput() {}

  /** A progress line on standard error, stamped with the time of day. */
  static void log(String format, Object... args) {
    Object[] all = new Object[args.length + 1];
    all[0] = java.time.LocalTime.now();
    System.arraycopy(args, 0, all, 1, args.length);
    System.err.printf(Locale.ROOT, "[bench %tT] " + format + "%n", all);
  }

  /** The last lines of a child process's log, for an error message. */
  static String tail(Path file) {
    try {
      List<String> lines = Files.readAllLines(file);
      return String.join("\n", lines.subList(Math.max(0, lines.size() - 15), lines.size()));
    } catch (IOException e) {
      return "(no log)";
    }
  }

  /** What {@code git args...} prints in {@code projectDir}; empty when it fails. */
  static String git(Path projectDir, String... args) {
    List<String> command = new ArrayList<>(List.of("git"));
    command.addAll(List.of(args));
    try {
      Process p =
          new ProcessBuilder(command)
              .directory(projectDir.toFile())
              .redirectErrorStream(true)
              .start();
      String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
      p.waitFor();
      return p.exitValue() == 0 ? out : "";
    } catch (IOException | InterruptedException e) {
      return "";
    }
  }
}
