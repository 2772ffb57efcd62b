package io.stateshift.cli;

import static org.assertj.core.api.Assertions.assertThat;

import io.stateshift.testing.ProjectFiles;
import java.io.File;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The launcher's class-archive training, as {@code ./stateshift} runs it: in its own JVM with
 * {@code -XX:ArchiveClassesAtExit} on a class path of jars only (the JVM archives nothing from
 * class folders, so the compiled classes go into a jar first, as the launcher's are). Every command
 * it trains on must succeed (exit code 0), and a JVM must be able to map the archive it leaves
 * ({@code -Xshare:on} fails otherwise).
 */
class StartupTrainingTest {
  @TempDir Path tmp;

  @Test
  void trainingRunsEveryCommandAndLeavesAnArchiveAJvmCanMap() throws Exception {
    Path archive = tmp.resolve("classes.jsa");
    Path log = tmp.resolve("training.log");
    String classPath = jarsOnly();
    Process training =
        new ProcessBuilder(
                java(),
                "@" + ProjectFiles.sparkJvmOptions(),
                "-Xmx1g",
                "-Dlog4j2.configurationFile=" + ProjectFiles.cliLogSettings(),
                "-XX:ArchiveClassesAtExit=" + archive,
                "-cp",
                classPath,
                StartupTraining.class.getName())
            .redirectErrorStream(true)
            .redirectOutput(log.toFile())
            .start();
    assertThat(training.waitFor(5, TimeUnit.MINUTES)).as("training finished").isTrue();
    int exit = training.exitValue();
    assertThat(exit).as("training exit code; see %s:%n%s", log, Files.readString(log)).isZero();
    assertThat(Files.readString(log)).contains("Repartitioned");
    assertThat(archive).isNotEmptyFile();

    Process check =
        new ProcessBuilder(
                java(),
                "-XX:SharedArchiveFile=" + archive,
                "-Xshare:on",
                "-cp",
                classPath,
                "-version")
            .redirectErrorStream(true)
            .redirectOutput(tmp.resolve("check.log").toFile())
            .start();
    assertThat(check.waitFor(1, TimeUnit.MINUTES)).isTrue();
    assertThat(check.exitValue()).as(Files.readString(tmp.resolve("check.log"))).isZero();
  }

  private static String java() {
    return Path.of(System.getProperty("java.home"), "bin", "java").toString();
  }

  /**
   * The library jar Maven built before the tests (the core and the Spark line, as the command line
   * runs them), then every jar of the test class path that is not built here.
   */
  private static String jarsOnly() {
    List<String> path = new ArrayList<>(List.of(System.getProperty("stateshift.libraryJar")));
    for (String entry : System.getProperty("java.class.path").split(File.pathSeparator)) {
      if (entry.endsWith(".jar")
          && !Path.of(entry).toAbsolutePath().startsWith(ProjectFiles.root())) {
        path.add(entry);
      }
    }
    return String.join(File.pathSeparator, path);
  }
}
