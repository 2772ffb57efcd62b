package io.stateshift.cli;

import static org.assertj.core.api.Assertions.assertThat;

import io.stateshift.testing.Launcher;
import java.io.File;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The class path {@code ./stateshift} runs with (the launcher itself, which builds the project
 * first when its jar is missing or older than the sources): stateshift's jar, Spark, Delta and
 * their dependencies, and nothing of the test scope. A test-scope jar there (hadoop-aws and the AWS
 * SDK, above all) would make an {@code s3a://} path work without {@code --packages}, by accident,
 * and then leave the connector out of what {@code --packages} ships to a cluster's executors.
 */
class LauncherClassPathTest {
  @TempDir Path tmp;

  @Test
  void theLaunchersClassPathHoldsNoTestScopeJar() throws Exception {
    Path log = tmp.resolve("classpath.log");
    Path out = tmp.resolve("classpath.txt");
    assertThat(Launcher.run(out, log, Map.of(), "classpath", "--full"))
        .as("log: %s", read(log))
        .isZero();
    List<String> names =
        Arrays.stream(Files.readString(out).strip().split(File.pathSeparator))
            .map(entry -> Path.of(entry).getFileName().toString())
            .toList();
    assertThat(names)
        .as("Spark and stateshift are there")
        .contains("stateshift.jar")
        .anyMatch(name -> name.startsWith("spark-sql_"))
        .anyMatch(name -> name.startsWith("delta-spark_"));
    assertThat(names)
        .as("the test scope's jars are not")
        .noneMatch(name -> name.startsWith("junit-"))
        .noneMatch(name -> name.startsWith("assertj-"))
        .noneMatch(name -> name.startsWith("hadoop-aws-"))
        .noneMatch(name -> name.startsWith("bundle-")) // the AWS SDK's
        // the rest of the S3A connector: in the application's class loader apart from the SDK,
        // it fails with NoClassDefFoundError once the connector comes from --packages
        .noneMatch(name -> name.startsWith("analyticsaccelerator-s3-"))
        .noneMatch(name -> name.startsWith("wildfly-openssl-"))
        .noneMatch(name -> name.startsWith("hadoop-client-minicluster-"))
        .noneMatch(name -> name.startsWith("kafka_") || name.startsWith("kafka-server"))
        .noneMatch(name -> name.startsWith("spark-sql-kafka"))
        .noneMatch(name -> name.startsWith("s3proxy"));
  }

  /** Without a connector, an s3a path is refused (exit 2) with the --packages that adds it. */
  @Test
  void anS3aPathWithoutTheConnectorIsRefusedWithTheFix() throws Exception {
    Path log = tmp.resolve("inspect.log");
    int exit =
        Launcher.run(log, Map.of(), "inspect", "--checkpoint", "s3a://no-such-bucket/checkpoint");
    assertThat(exit).as("log: %s", read(log)).isEqualTo(2);
    assertThat(read(log))
        .contains("Cannot open checkpoint location s3a://no-such-bucket/checkpoint")
        .contains("--packages org.apache.hadoop:hadoop-aws:")
        .doesNotContain("\tat ");
  }

  private static String read(Path file) throws Exception {
    return Files.exists(file) ? Files.readString(file) : "(none)";
  }
}
