package io.stateshift;

import static org.assertj.core.api.Assertions.assertThat;

import io.stateshift.testing.AppJar;
import io.stateshift.testing.ProjectFiles;
import io.stateshift.testing.SessionConf;
import io.stateshift.testing.SparkTestSession;
import io.stateshift.testing.StreamRun;
import io.stateshift.testing.SubmitApp;
import java.io.File;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.SparkSession;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * stateshift installed the ways users install it, through Spark's own spark-submit entry point
 * ({@code org.apache.spark.deploy.SparkSubmit}) in a new JVM whose class path holds Spark but not
 * stateshift: first {@code --packages} resolved from a local file repository laid out as {@code mvn
 * install} lays it out, with the rest of the set-up in a spark-defaults.conf; then {@code --jars}
 * with the runtime jar, restarting the query with {@code
 * spark.sql.streaming.stateStore.partitions}. The jars are the ones Maven built before the tests
 * (the {@code process-test-classes} phase), so this runs in {@code mvn test}.
 */
class SparkSubmitTest {
  private final SparkSession spark = SparkTestSession.get();
  @TempDir Path tmp;

  @Test
  @Tag("cover") // every line's own spark-submit
  void submittedAppRestartsOnANewPartitionCountWithPackagesThenJars() throws Exception {
    Path libraryJar = builtJar("stateshift.libraryJar");
    Path runtimeJar = builtJar("stateshift.runtimeJar");
    Path repo = localRepository(libraryJar);
    Path appJar = AppJar.of(tmp.resolve("app.jar"), SubmitApp.class);
    Path input = tmp.resolve("input");
    String checkpoint = tmp.resolve("checkpoint").toString();
    String sink = tmp.resolve("sink").toString();
    StreamRun events = new StreamRun(spark, input);
    events.writeEvents(0, 200, 25);
    events.writeEvents(1, 200, 25);

    // 1. --packages, the rest from a spark-defaults.conf as the README shows it
    Path defaults = tmp.resolve("spark-defaults.conf");
    List<String> settings =
        new ArrayList<>(
            List.of(
                "spark.sql.extensions            io.stateshift.StateShiftExtensions",
                "spark.sql.shuffle.partitions    3",
                "spark.jars.ivy                  " + tmp.resolve("ivy"),
                "spark.ui.enabled                false"));
    if (SQL_PROCEDURES) {
      settings.add("spark.sql.catalog.stateshift    io.stateshift.sql.StateShiftCatalog");
    }
    Files.writeString(defaults, String.join("\n", settings) + "\n");
    Map<String, String> first =
        submit(
            "packages",
            List.of(
                "--packages",
                "io.stateshift:"
                    + System.getProperty("stateshift.artifactId")
                    + ":"
                    + System.getProperty("stateshift.version"),
                "--repositories",
                repo.toUri().toString(),
                "--properties-file",
                defaults.toString()),
            appJar,
            input,
            checkpoint,
            sink);
    assertThat(first.get("stateInstances")).isEqualTo("[3, 3, 3, 3]");
    if (SQL_PROCEDURES) {
      assertThat(first.get("inspectPartitions")).isEqualTo("[3]");
      assertThat(first.get("inspectStores")).isEqualTo("2");
    }

    // 2. --jars with the runtime jar; the restart asks for 6 partitions
    events.writeEvents(2, 200, 25);
    events.writeEvents(3, 200, 25);
    Map<String, String> second =
        submit(
            "jars",
            withProcedures(
                List.of(
                    "--jars",
                    runtimeJar.toString(),
                    "--conf",
                    "spark.sql.extensions=io.stateshift.StateShiftExtensions",
                    "--conf",
                    "spark.sql.streaming.stateStore.partitions=6",
                    "--conf",
                    "spark.sql.shuffle.partitions=3",
                    "--conf",
                    "spark.ui.enabled=false")),
            appJar,
            input,
            checkpoint,
            sink);
    assertThat(second.get("stateInstances")).isEqualTo("[6, 6, 6, 6]");
    assertThat(second.get("repartitionMs")).isNotEqualTo("null");
    if (SQL_PROCEDURES) {
      assertThat(second.get("inspectPartitions")).isEqualTo("[6]");
    }

    // The output equals the same query's uninterrupted run over the same input.
    assertThat(lastBatch(sink)).containsExactlyElementsOf(oracle(input));
  }

  /** Whether this Spark has procedure catalogs ({@code CALL}; 4.0 and later): 3.5 has none. */
  private static final boolean SQL_PROCEDURES =
      hasClass("org.apache.spark.sql.connector.catalog.ProcedureCatalog");

  private static boolean hasClass(String name) {
    try {
      Class.forName(name, false, SparkSubmitTest.class.getClassLoader());
      return true;
    } catch (ClassNotFoundException e) {
      return false;
    }
  }

  /** The options, with the SQL procedures' catalog where this Spark has procedure catalogs. */
  private static List<String> withProcedures(List<String> options) {
    List<String> out = new ArrayList<>(options);
    if (SQL_PROCEDURES) {
      out.addAll(
          List.of("--conf", "spark.sql.catalog.stateshift=io.stateshift.sql.StateShiftCatalog"));
    }
    return out;
  }

  private static Path builtJar(String property) {
    Path jar = Path.of(System.getProperty(property, "unset"));
    assertThat(jar)
        .as("%s: run through Maven (mvn test builds the jars before the tests)", property)
        .isRegularFile();
    return jar;
  }

  /** A Maven repository with the library jar and its POM where {@code mvn install} puts them. */
  private Path localRepository(Path libraryJar) throws Exception {
    String artifact = System.getProperty("stateshift.artifactId");
    String version = System.getProperty("stateshift.version");
    Path repo = tmp.resolve("repo");
    Path dir = repo.resolve("io/stateshift").resolve(artifact).resolve(version);
    Files.createDirectories(dir);
    Files.copy(libraryJar, dir.resolve(artifact + "-" + version + ".jar"));
    // the POM `mvn install` publishes: flattened, so no parent is fetched
    Files.copy(Path.of(".flattened-pom.xml"), dir.resolve(artifact + "-" + version + ".pom"));
    return repo;
  }

  /** Runs spark-submit in a new JVM; returns the app's result lines as a map. */
  private Map<String, String> submit(
      String name, List<String> options, Path appJar, Path input, String checkpoint, String sink)
      throws Exception {
    Path result = tmp.resolve(name + "-result.txt");
    Path log = Path.of("target", "spark-submit-" + name + ".log").toAbsolutePath();
    Path home = Files.createDirectories(tmp.resolve("home")); // no ~/.m2 or ~/.ivy2 of the host
    List<String> command =
        new ArrayList<>(
            List.of(
                Path.of(System.getProperty("java.home"), "bin", "java").toString(),
                "@" + ProjectFiles.sparkJvmOptions(),
                "-Xmx1g",
                "-XX:TieredStopAtLevel=1",
                "-Duser.home=" + home,
                "-cp",
                sparkClassPath(),
                "org.apache.spark.deploy.SparkSubmit",
                "--master",
                "local[2]",
                "--class",
                SubmitApp.class.getName()));
    command.addAll(options);
    command.addAll(
        List.of(appJar.toString(), input.toString(), checkpoint, sink, result.toString()));
    Process process =
        new ProcessBuilder(command).redirectErrorStream(true).redirectOutput(log.toFile()).start();
    if (!process.waitFor(8, TimeUnit.MINUTES)) {
      process.destroyForcibly();
      throw new AssertionError("spark-submit did not finish; see " + log);
    }
    assertThat(process.exitValue()).as("spark-submit exit code; see %s", log).isZero();
    Map<String, String> out = new LinkedHashMap<>();
    for (String line : Files.readAllLines(result)) {
      int eq = line.indexOf('=');
      out.put(line.substring(0, eq), line.substring(eq + 1));
    }
    return out;
  }

  /** The test class path less stateshift's own classes: Spark, Hadoop, Delta and the rest. */
  private static String sparkClassPath() {
    List<String> entries =
        Arrays.stream(System.getProperty("java.class.path").split(File.pathSeparator))
            .filter(e -> !Path.of(e).toAbsolutePath().startsWith(ProjectFiles.root()))
            .toList();
    assertThat(entries).noneMatch(e -> e.contains("stateshift") && e.endsWith(".jar"));
    return String.join(File.pathSeparator, entries);
  }

  private List<String> lastBatch(String sink) {
    Dataset<Row> all = spark.read().parquet(sink);
    long last =
        ((Number) all.agg(org.apache.spark.sql.functions.max("batch")).first().get(0)).longValue();
    return all
        .filter(org.apache.spark.sql.functions.col("batch").equalTo(last))
        .drop("batch")
        .collectAsList()
        .stream()
        .map(Row::toString)
        .sorted()
        .toList();
  }

  private List<String> oracle(Path input) throws Exception {
    String sink = tmp.resolve("oracle-sink").toString();
    Runnable restoreSettings = SessionConf.set(spark, Map.of("spark.sql.shuffle.partitions", "5"));
    try {
      SubmitApp.runAvailable(spark, input.toString(), tmp.resolve("oracle-cp").toString(), sink);
    } finally {
      restoreSettings.run();
    }
    StreamRun.awaitQueryEvents(spark);
    List<String> rows = lastBatch(sink);
    assertThat(rows).hasSize(25);
    return rows;
  }
}
