package io.stateshift.cli;

import static org.assertj.core.api.Assertions.assertThat;

import io.stateshift.testing.ProjectFiles;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * How {@code ./stateshift} picks the Spark line: {@code --spark-line} first, then {@code
 * STATESHIFT_SPARK_LINE}, then the Spark of {@code SPARK_HOME}; a line this build does not have is
 * refused with exit 2 before anything is built or started.
 */
class LauncherLineTest {
  @TempDir Path tmp;

  @Test
  void anUnknownLineIsRefusedWithTheLinesThereAre() throws Exception {
    Result r = launch(Map.of("STATESHIFT_SPARK_LINE", "5.9"), "--version");
    assertThat(r.exit).isEqualTo(2);
    assertThat(r.output)
        .contains("STATESHIFT_SPARK_LINE names Spark line '5.9'")
        .contains("4.1, 4.2");
  }

  @Test
  void theFirstOptionWinsOverTheEnvironment() throws Exception {
    Result r = launch(Map.of("STATESHIFT_SPARK_LINE", "4.2"), "--spark-line", "4.0", "classpath");
    assertThat(r.exit).isEqualTo(2);
    assertThat(r.output)
        .contains(
            "--spark-line names Spark line 4.0, which this build of stateshift does not have");
  }

  @Test
  void aSparkHomeNamesItsLine() throws Exception {
    Path home = tmp.resolve("spark-3.5.8");
    Files.createDirectories(home.resolve("jars"));
    Files.createFile(home.resolve("jars/spark-core_2.12-3.5.8.jar"));
    Result r = launch(Map.of("SPARK_HOME", home.toString()), "inspect", "--checkpoint", "/x");
    assertThat(r.exit).isEqualTo(2);
    assertThat(r.output).contains("SPARK_HOME (Spark 3.5.8) names Spark line 3.5");
  }

  @Test
  void aSparkHomeWithoutSparkIsRefused() throws Exception {
    Result r = launch(Map.of("SPARK_HOME", tmp.toString()), "--version");
    assertThat(r.exit).isEqualTo(2);
    assertThat(r.output).contains("holds no jars/spark-core_*.jar");
  }

  private record Result(int exit, String output) {}

  private Result launch(Map<String, String> env, String... args) throws Exception {
    Path log = tmp.resolve("launcher.log");
    ProcessBuilder builder =
        new ProcessBuilder(
                concat(ProjectFiles.root().resolve("stateshift").toString(), List.of(args)))
            .redirectErrorStream(true)
            .redirectOutput(log.toFile());
    builder.environment().remove("STATESHIFT_SPARK_LINE");
    builder.environment().remove("SPARK_HOME");
    builder.environment().putAll(env);
    Process p = builder.start();
    assertThat(p.waitFor(60, TimeUnit.SECONDS)).as("the launcher answers at once").isTrue();
    return new Result(p.exitValue(), Files.readString(log));
  }

  private static List<String> concat(String first, List<String> rest) {
    List<String> all = new java.util.ArrayList<>();
    all.add(first);
    all.addAll(rest);
    return all;
  }
}
