package io.stateshift.cli;

import static org.assertj.core.api.Assertions.assertThat;

import io.stateshift.testing.CheckpointDigest;
import io.stateshift.testing.ChildJvm;
import io.stateshift.testing.SparkTestSession;
import io.stateshift.testing.StateStores;
import io.stateshift.testing.StatefulQueries;
import io.stateshift.testing.StreamRun;
import java.io.File;
import java.io.OutputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.jar.JarEntry;
import java.util.jar.JarOutputStream;
import javax.tools.JavaCompiler;
import javax.tools.ToolProvider;
import org.apache.spark.sql.SparkSession;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The command line loads a file system connector from {@code --jars}, as a user adds hadoop-aws for
 * S3: a file system under its own scheme, compiled by this test into a jar that is not on the class
 * path, registered with {@code --conf spark.hadoop.fs.<scheme>.impl}. Without --jars the command
 * cannot open the checkpoint (exit 2, nothing changed); with it, the repartition runs on that
 * scheme and the query's output afterwards equals an uninterrupted run's.
 */
class ConnectorJarTest {
  private static final String SCHEME = "shadowfs";
  private static final String FS_CLASS = "connector.ShadowFileSystem";
  private static final String AFS_CLASS = "connector.ShadowFs";

  private final SparkSession spark = SparkTestSession.get();

  @TempDir Path tmp;

  @Test
  void aConnectorFromJarsOpensItsSchemeOnTheDriverAndInTasks() throws Exception {
    StreamRun run = new StreamRun(spark, tmp.resolve("input"));
    run.writeEvents(0, 200, 30);
    run.writeEvents(1, 200, 30);
    run.runAvailable(
        StatefulQueries.WINDOWED_COUNT, checkpoint(), sink(), StateStores.HDFS.withPartitions(4));
    Path jar = connectorJar();
    assertThat(classPathHas(FS_CLASS)).as("the connector is only in its jar").isFalse();
    String uri = SCHEME + "://" + checkpoint();
    List<String> conf =
        List.of(
            "--conf",
            "spark.hadoop.fs." + SCHEME + ".impl=" + FS_CLASS,
            "--conf",
            "spark.hadoop.fs.AbstractFileSystem." + SCHEME + ".impl=" + AFS_CLASS);

    Map<String, String> before = CheckpointDigest.of(checkpoint());
    int exit =
        cli(
            tmp.resolve("without.log"),
            conf,
            "repartition",
            "--checkpoint",
            uri,
            "--partitions",
            "3",
            "--assume-stopped");
    assertThat(exit).as("log: %s", Files.readString(tmp.resolve("without.log"))).isEqualTo(2);
    assertThat(Files.readString(tmp.resolve("without.log")))
        .contains("Cannot open checkpoint location " + uri)
        .contains(FS_CLASS);
    exit =
        cli(
            tmp.resolve("missing.log"),
            conf,
            "repartition",
            "--checkpoint",
            uri,
            "--partitions",
            "3",
            "--jars",
            tmp.resolve("no-such.jar").toString());
    assertThat(exit).isEqualTo(2);
    assertThat(Files.readString(tmp.resolve("missing.log")))
        .contains("--jars: no such file " + tmp.resolve("no-such.jar"));
    assertThat(CheckpointDigest.of(checkpoint())).as("refused: nothing changed").isEqualTo(before);

    exit =
        cli(
            tmp.resolve("with.log"),
            conf,
            "repartition",
            "--checkpoint",
            uri,
            "--partitions",
            "3",
            "--jars",
            jar.toString(),
            "--assume-stopped");
    String log = Files.readString(tmp.resolve("with.log"));
    assertThat(exit).as("log: %s", log).isEqualTo(0);
    assertThat(log).contains(uri.replace("://", ":"));
    assertThat(Files.readString(tmp.resolve("opened-by.txt")))
        .as("the connector served the driver and the tasks")
        .contains("driver")
        .contains("task");

    // The query continues on the local path and counts as if nothing had happened.
    run.writeEvents(2, 200, 30);
    run.writeFlush(3);
    var last =
        run.runAvailable(
            StatefulQueries.WINDOWED_COUNT,
            checkpoint(),
            sink(),
            StateStores.HDFS.withPartitions(7));
    assertThat(StreamRun.stateInstances(last)).containsOnly(3L);
    StreamRun oracle = new StreamRun(spark, tmp.resolve("oracle-input"));
    for (int i = 0; i < 3; i++) {
      oracle.writeEvents(i, 200, 30);
    }
    oracle.writeFlush(3);
    oracle.runAvailable(
        StatefulQueries.WINDOWED_COUNT,
        tmp.resolve("oracle-checkpoint"),
        tmp.resolve("oracle-sink"),
        StateStores.HDFS.withPartitions(2));
    assertThat(run.sinkRows(sink(), StatefulQueries.WINDOWED_COUNT))
        .isNotEmpty()
        .containsExactlyElementsOf(
            oracle.sinkRows(tmp.resolve("oracle-sink"), StatefulQueries.WINDOWED_COUNT));
  }

  /** Runs the command line in a fresh JVM (its own Spark, as the launcher starts it). */
  private int cli(Path log, List<String> conf, String... args) throws Exception {
    String[] all =
        java.util.stream.Stream.concat(java.util.Arrays.stream(args), conf.stream())
            .toArray(String[]::new);
    return ChildJvm.runCli(log, List.of("-Dshadowfs.trace=" + tmp.resolve("opened-by.txt")), all);
  }

  /**
   * The local file system under another scheme, with the FileContext binding Spark's checkpoint
   * manager uses, compiled into a jar. It notes which kind of thread opened it: driver or task.
   */
  private Path connectorJar() throws Exception {
    Path src = Files.createDirectories(tmp.resolve("connector-src/connector"));
    Files.writeString(
        src.resolve("ShadowFileSystem.java"),
        """
        package connector;

        public class ShadowFileSystem extends org.apache.hadoop.fs.RawLocalFileSystem {
          @Override
          public java.net.URI getUri() {
            return java.net.URI.create("%1$s:///");
          }

          @Override
          public String getScheme() {
            return "%1$s";
          }

          @Override
          public void initialize(java.net.URI uri, org.apache.hadoop.conf.Configuration conf)
              throws java.io.IOException {
            super.initialize(uri, conf);
            trace();
          }

          @Override
          public org.apache.hadoop.fs.FSDataInputStream open(org.apache.hadoop.fs.Path f,
              int bufferSize) throws java.io.IOException {
            trace();
            return super.open(f, bufferSize);
          }

          private static void trace() {
            String file = System.getProperty("shadowfs.trace");
            String who = org.apache.spark.TaskContext.get() == null ? "driver\\n" : "task\\n";
            try {
              java.nio.file.Files.writeString(java.nio.file.Path.of(file), who,
                  java.nio.file.StandardOpenOption.CREATE, java.nio.file.StandardOpenOption.APPEND);
            } catch (java.io.IOException e) {
              throw new java.io.UncheckedIOException(e);
            }
          }
        }
        """
            .formatted(SCHEME));
    Files.writeString(
        src.resolve("ShadowFs.java"),
        """
        package connector;

        public class ShadowFs extends org.apache.hadoop.fs.DelegateToFileSystem {
          public ShadowFs(java.net.URI uri, org.apache.hadoop.conf.Configuration conf)
              throws java.io.IOException, java.net.URISyntaxException {
            super(uri, new ShadowFileSystem(), conf, "%s", false);
          }
        }
        """
            .formatted(SCHEME));
    Path classes = Files.createDirectories(tmp.resolve("connector-classes"));
    JavaCompiler javac = ToolProvider.getSystemJavaCompiler();
    int compiled =
        javac.run(
            null,
            null,
            null,
            "-d",
            classes.toString(),
            "-cp",
            System.getProperty("java.class.path"),
            src.resolve("ShadowFileSystem.java").toString(),
            src.resolve("ShadowFs.java").toString());
    assertThat(compiled).isZero();
    Path jar = tmp.resolve("shadowfs-connector.jar");
    try (JarOutputStream out = new JarOutputStream(Files.newOutputStream(jar))) {
      for (String name : List.of("ShadowFileSystem.class", "ShadowFs.class")) {
        out.putNextEntry(new JarEntry("connector/" + name));
        Files.copy(classes.resolve("connector").resolve(name), (OutputStream) out);
        out.closeEntry();
      }
    }
    return jar;
  }

  private static boolean classPathHas(String className) {
    String file = className.replace('.', File.separatorChar) + ".class";
    return java.util.Arrays.stream(System.getProperty("java.class.path").split(File.pathSeparator))
        .anyMatch(entry -> Files.exists(Path.of(entry).resolve(file)));
  }

  private Path checkpoint() {
    return tmp.resolve("checkpoint");
  }

  private Path sink() {
    return tmp.resolve("sink");
  }
}
