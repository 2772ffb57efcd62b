package io.stateshift.cli;

import static org.assertj.core.api.Assertions.assertThat;

import io.stateshift.testing.Launcher;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.HashMap;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * How {@code ./stateshift} picks the Spark line: {@code --spark-line} first, then {@code
 * STATESHIFT_SPARK_LINE}, then the Spark of {@code SPARK_HOME}; a line this build does not have, or
 * a Scala version the line does not run on, is refused with exit 2 before anything is built or
 * started.
 */
class LauncherLineTest {
  @TempDir Path tmp;

  @Test
  void anUnknownLineIsRefusedWithTheLinesThereAre() throws Exception {
    Result r = launch(Map.of("STATESHIFT_SPARK_LINE", "5.9"), "--version");
    assertThat(r.exit).isEqualTo(2);
    assertThat(r.output)
        .contains("STATESHIFT_SPARK_LINE names Spark line '5.9'")
        .contains("3.5, 4.0, 4.1, 4.2");
  }

  @Test
  void theFirstOptionWinsOverTheEnvironment() throws Exception {
    Result r = launch(Map.of("STATESHIFT_SPARK_LINE", "4.2"), "--spark-line", "3.4", "classpath");
    assertThat(r.exit).isEqualTo(2);
    assertThat(r.output).contains("--spark-line names Spark line '3.4'");
  }

  @Test
  void aSparkHomeNamesItsLine() throws Exception {
    Path home = tmp.resolve("spark-3.4.4");
    Files.createDirectories(home.resolve("jars"));
    Files.createFile(home.resolve("jars/spark-core_2.12-3.4.4.jar"));
    Result r = launch(Map.of("SPARK_HOME", home.toString()), "inspect", "--checkpoint", "/x");
    assertThat(r.exit).isEqualTo(2);
    assertThat(r.output).contains("SPARK_HOME (Spark 3.4.4) names Spark line '3.4'");
  }

  @Test
  void aSparkHomeWithoutSparkIsRefused() throws Exception {
    Result r = launch(Map.of("SPARK_HOME", tmp.toString()), "--version");
    assertThat(r.exit).isEqualTo(2);
    assertThat(r.output).contains("holds no jars/spark-core_*.jar");
  }

  @Test
  void aScalaVersionTheLineDoesNotHaveIsRefused() throws Exception {
    Result r =
        launch(
            Map.of("STATESHIFT_SPARK_LINE", "4.2", "STATESHIFT_SCALA_VERSION", "2.12"),
            "--version");
    assertThat(r.exit).isEqualTo(2);
    assertThat(r.output)
        .contains("STATESHIFT_SCALA_VERSION=2.12: Spark 4.2 runs on Scala 2.13 only");
    r =
        launch(
            Map.of("STATESHIFT_SPARK_LINE", "3.5", "STATESHIFT_SCALA_VERSION", "3"), "classpath");
    assertThat(r.exit).isEqualTo(2);
    assertThat(r.output).contains("the Spark 3.5 line runs on Scala 2.12 or 2.13");
  }

  private record Result(int exit, String output) {}

  /** The launcher with {@code env} instead of the line under test. */
  private Result launch(Map<String, String> env, String... args) throws Exception {
    Map<String, String> only = new HashMap<>(env);
    only.putIfAbsent("STATESHIFT_SPARK_LINE", null);
    only.putIfAbsent("STATESHIFT_SCALA_VERSION", null);
    Path log = tmp.resolve("launcher.log");
    long started = System.nanoTime();
    int exit = Launcher.run(log, only, args);
    assertThat(Duration.ofNanos(System.nanoTime() - started))
        .as("the launcher answers at once, before any build")
        .isLessThan(Duration.ofSeconds(30));
    return new Result(exit, Files.readString(log));
  }
}
