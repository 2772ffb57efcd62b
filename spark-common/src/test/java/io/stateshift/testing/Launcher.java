package io.stateshift.testing;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

/**
 * Runs {@code ./stateshift}, the launcher users run, from the project's root: its own class path
 * (which builds the project first when the jar is missing or older than the sources), not the test
 * class path, so a connector reaches it only the ways a user gives one ({@code --packages}, {@code
 * --jars}, {@code STATESHIFT_CLASSPATH}).
 */
public final class Launcher {
  private Launcher() {}

  /**
   * Runs it on the line under test ({@code STATESHIFT_SPARK_LINE}, {@code
   * STATESHIFT_SCALA_VERSION}) to its end, with {@code env} added, stdout and stderr to {@code
   * log}; its exit code.
   */
  public static int run(Path log, Map<String, String> env, String... args) throws Exception {
    return run(log, log, env, args);
  }

  /** The same with stdout to {@code out} and stderr to {@code log} (one file when equal). */
  public static int run(Path out, Path log, Map<String, String> env, String... args)
      throws Exception {
    List<String> command = new ArrayList<>();
    command.add(ProjectFiles.root().resolve("stateshift").toString());
    command.addAll(List.of(args));
    ProcessBuilder builder = new ProcessBuilder(command).directory(ProjectFiles.root().toFile());
    // no class archive: each test build rewrites the jar, and recording one takes half a minute
    builder.environment().put("STATESHIFT_CLASS_ARCHIVE", "off");
    // the line under test, whatever the machine's SPARK_HOME says; a null in env removes a name
    builder.environment().remove("SPARK_HOME");
    builder.environment().put("STATESHIFT_SPARK_LINE", System.getProperty("stateshift.line"));
    // and its Scala: the 3.5 line runs on 2.12 unless told otherwise
    builder.environment().put("STATESHIFT_SCALA_VERSION", System.getProperty("stateshift.scala"));
    env.forEach(
        (name, value) -> {
          if (value == null) {
            builder.environment().remove(name);
          } else {
            builder.environment().put(name, value);
          }
        });
    if (out.equals(log)) {
      builder.redirectErrorStream(true).redirectOutput(log.toFile());
    } else {
      builder.redirectOutput(out.toFile()).redirectError(log.toFile());
    }
    // a build the launcher may start first takes a minute or two
    Process process = builder.start();
    if (!process.waitFor(10, TimeUnit.MINUTES)) {
      process.destroyForcibly();
      throw new IllegalStateException("./stateshift did not finish; see " + log);
    }
    return process.exitValue();
  }
}
