package io.stateshift.cli;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.within;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.stateshift.demo.DeviceCountsDemo;
import io.stateshift.testing.CheckpointDigest;
import io.stateshift.testing.SparkTestSession;
import io.stateshift.testing.StateStores;
import io.stateshift.testing.StatefulQueries;
import io.stateshift.testing.StreamRun;
import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import org.apache.spark.sql.SparkSession;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The command line as a script meets it: misspelt options, flags given a value, help, version,
 * idempotent repartitions, JSON output, the demo's folder, and history.
 */
public class StateShiftCliTest {
  private static final ObjectMapper JSON = new ObjectMapper();
  private final SparkSession spark = SparkTestSession.get(); // the CLI uses the program's session

  @TempDir Path tmp;

  /** What one command line printed and returned. */
  public record Run(int exit, String out, String err) {
    public JsonNode json() throws Exception {
      return JSON.readTree(out);
    }
  }

  /** Runs the command line in this JVM; its exit code and what it printed. */
  public static Run cli(String... args) {
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    ByteArrayOutputStream err = new ByteArrayOutputStream();
    int exit =
        new StateShiftCli(
                new PrintStream(out, true, StandardCharsets.UTF_8),
                new PrintStream(err, true, StandardCharsets.UTF_8))
            .run(args);
    return new Run(
        exit, out.toString(StandardCharsets.UTF_8), err.toString(StandardCharsets.UTF_8));
  }

  private Path checkpoint(int partitions) {
    StreamRun run = new StreamRun(spark, tmp.resolve("input"));
    run.writeEvents(0, 200, 20);
    Path checkpoint = tmp.resolve("checkpoint");
    run.runAvailable(
        StatefulQueries.GROUPED_COUNT,
        checkpoint,
        tmp.resolve("sink"),
        StateStores.HDFS.withPartitions(partitions));
    return checkpoint;
  }

  @Test
  void misspeltOptionsAndFlagsWithValuesAreRefusedBeforeAnythingRuns() {
    Path checkpoint = checkpoint(4);
    Map<String, String> before = CheckpointDigest.of(checkpoint);
    String cp = checkpoint.toString();

    // The misspelling that once ran a real repartition and ignored the option.
    Run misspelt =
        cli(
            "repartition",
            "--checkpoint",
            cp,
            "--partitions",
            "3",
            "--backupTo",
            tmp.resolve("backup").toString());
    assertThat(misspelt.exit()).isEqualTo(StateShiftCli.BAD_INPUT);
    assertThat(misspelt.err())
        .contains("unknown option --backupTo for repartition")
        .contains("did you mean --backup-to?")
        .contains("stateshift help repartition");
    assertThat(cli("repartition", "--checkpoint", cp, "--partitons", "3").err())
        .contains("did you mean --partitions?");
    assertThat(cli("doctor", "--checkpoint", cp, "--core", "4").err())
        .contains("did you mean --cores?");
    // an option of another command is unknown here
    assertThat(cli("inspect", "--checkpoint", cp, "--partitions", "3").exit())
        .isEqualTo(StateShiftCli.BAD_INPUT);
    Run command = cli("repartiton", "--checkpoint", cp, "--partitions", "3");
    assertThat(command.exit()).isEqualTo(StateShiftCli.BAD_INPUT);
    assertThat(command.err()).contains("did you mean repartition?");

    // A flag takes no value: "--assume-stopped=false" once turned the safety check off.
    for (String flag : new String[] {"--dry-run=false", "--assume-stopped=false", "--json=true"}) {
      Run withValue = cli("repartition", "--checkpoint", cp, "--partitions", "3", flag);
      assertThat(withValue.exit()).as(flag).isEqualTo(StateShiftCli.BAD_INPUT);
      assertThat(withValue.err())
          .as(flag)
          .contains("is a flag and takes no value")
          .contains("leave it out");
    }
    assertThat(cli("rollback", "--checkpoint", cp, "--assume-stopped=false").exit())
        .isEqualTo(StateShiftCli.BAD_INPUT);

    // Values are checked, and required options named.
    assertThat(cli("repartition", "--checkpoint", cp, "--partitions", "0").err())
        .contains("--partitions must be at least 1");
    assertThat(cli("repartition", "--checkpoint", cp, "--partitions", "many").err())
        .contains("--partitions takes a whole number, got 'many'");
    assertThat(cli("repartition", "--checkpoint", cp).err())
        .contains("--partitions <n> is required");
    assertThat(
            cli("repartition", "--checkpoint", cp, "--partitions", "3", "--partitions", "5").err())
        .contains("--partitions is given twice");
    assertThat(cli("repartition", "--checkpoint", cp, "--partitions", "3", "now").err())
        .contains("unexpected argument 'now'");
    assertThat(cli("doctor", "--checkpoint", cp, "--conf", "novalue").err())
        .contains("--conf takes key=value");
    assertThat(CheckpointDigest.of(checkpoint)).isEqualTo(before);
  }

  @Test
  void argumentErrorsComeBeforeSparkStarts() throws Exception {
    // A child JVM without a session: a misspelt option must not wait for Spark to start.
    Path log = tmp.resolve("child.log");
    long started = System.nanoTime();
    int exit =
        io.stateshift.testing.ChildJvm.runCli(
            log,
            java.util.List.of(),
            "repartition",
            "--checkpoint",
            tmp.resolve("nowhere").toString(),
            "--partitions",
            "3",
            "--backupTo",
            "x");
    String output = Files.readString(log);
    assertThat(exit).as(output).isEqualTo(StateShiftCli.BAD_INPUT);
    assertThat(output)
        .contains("did you mean --backup-to?")
        .doesNotContain("SparkContext")
        .doesNotContain("Running Spark version");
    assertThat((System.nanoTime() - started) / 1_000_000).as("ms").isLessThan(30_000);
  }

  @Test
  void helpAndVersionGoToStdoutWithExitZero() {
    for (String[] global : new String[][] {{"--help"}, {"-h"}, {"help"}}) {
      Run help = cli(global);
      assertThat(help.exit()).isZero();
      assertThat(help.out())
          .contains("usage: stateshift <command>")
          .contains("repartition")
          .contains("history")
          .contains("Exit codes");
      assertThat(help.err()).isEmpty();
    }
    for (String[] perCommand :
        new String[][] {
          {"help", "repartition"},
          {"repartition", "--help"},
          {"repartition", "-h"},
          {"repartition", "--checkpoint", "x", "--bogus", "--help"}
        }) {
      Run help = cli(perCommand);
      assertThat(help.exit()).as(String.join(" ", perCommand)).isZero();
      assertThat(help.out())
          .contains("usage: stateshift repartition --checkpoint <path> " + "--partitions <n>")
          .contains("--backup-to <path>")
          // the default, however the help wraps it
          .containsPattern("\\(default:\\s+_stateshift/ in the checkpoint\\)")
          .contains("--assume-stopped")
          .contains("--dry-run")
          .contains("--json")
          .contains("example:\n  stateshift repartition --checkpoint");
      assertThat(help.err()).isEmpty();
    }
    // every command has its own usage, with an example
    for (CliCommand command : CommandLine.COMMANDS) {
      Run help = cli("help", command.name());
      assertThat(help.exit()).isZero();
      assertThat(help.out())
          .startsWith("usage: stateshift " + command.name())
          .contains("example:\n  stateshift " + command.name());
    }
    Run demoHelp = cli("demo", "--help");
    assertThat(demoHelp.out())
        .contains("--events <n>")
        .contains("(default: 60000")
        .contains("--dir <path>")
        .contains("a new temporary folder per run");
    assertThat(cli("help", "repartiton").err()).contains("did you mean repartition?");
    Run none = cli();
    assertThat(none.exit()).isEqualTo(StateShiftCli.BAD_INPUT);
    assertThat(none.err()).contains("usage: stateshift <command>");

    Run version = cli("--version");
    assertThat(version.exit()).isZero();
    assertThat(version.out())
        .containsPattern("^stateshift \\d+\\.\\d+\\.\\d+")
        .contains(
            "built for Spark "
                + System.getProperty("stateshift.line")
                + " (compiled against "
                + org.apache.spark.package$.MODULE$.SPARK_VERSION()
                + ", Scala "
                + System.getProperty("stateshift.scala")
                + ")")
        .contains("Spark on the class path: " + org.apache.spark.package$.MODULE$.SPARK_VERSION());
  }

  @Test
  void repartitionToTheCountItHasIsNothingToDoAndJsonIsParseable() throws Exception {
    Path checkpoint = checkpoint(4);
    Map<String, String> before = CheckpointDigest.of(checkpoint);
    String cp = checkpoint.toString();

    Run same = cli("repartition", "--checkpoint", cp, "--partitions", "4");
    assertThat(same.exit()).isZero();
    assertThat(same.out()).contains("already has 4 partitions").contains("Nothing to do");
    Run sameJson = cli("repartition", "--checkpoint", cp, "--partitions", "4", "--json");
    assertThat(sameJson.exit()).isZero();
    JsonNode nothing = sameJson.json();
    assertThat(nothing.get("schema").asText()).isEqualTo("stateshift/v1");
    assertThat(nothing.get("command").asText()).isEqualTo("repartition");
    assertThat(nothing.get("ok").asBoolean()).isTrue();
    assertThat(nothing.get("changed").asBoolean()).isFalse();
    assertThat(nothing.get("nothingToDo").asBoolean()).isTrue();
    assertThat(CheckpointDigest.of(checkpoint)).isEqualTo(before);

    // Errors are JSON too, on stdout, with the reason a script can branch on.
    Run missing =
        cli(
            "repartition",
            "--checkpoint",
            tmp.resolve("nowhere").toString(),
            "--partitions",
            "3",
            "--json");
    assertThat(missing.exit()).isEqualTo(StateShiftCli.BAD_INPUT);
    JsonNode error = missing.json();
    assertThat(error.get("ok").asBoolean()).isFalse();
    assertThat(error.get("exitCode").asInt()).isEqualTo(2);
    assertThat(error.get("error").get("reason").asText()).isEqualTo("CHECKPOINT_NOT_FOUND");
    assertThat(error.get("error").get("message").asText()).contains("does not exist");
    JsonNode usage =
        cli("repartition", "--checkpoint", cp, "--partitions", "3", "--dryrun", "--json").json();
    assertThat(usage.get("ok").asBoolean()).isFalse();
    assertThat(usage.get("error").get("reason").asText()).isEqualTo("USAGE");
    assertThat(usage.get("error").get("message").asText()).contains("did you mean --dry-run?");

    JsonNode plan =
        cli("repartition", "--checkpoint", cp, "--partitions", "6", "--dry-run", "--json").json();
    assertThat(plan.get("dryRun").asBoolean()).isTrue();
    assertThat(plan.get("changed").asBoolean()).isFalse();
    assertThat(plan.get("plan").get("fromPartitions").asInt()).isEqualTo(4);
    // the state's size is what the partition folders hold (their .crc files hidden by Hadoop)
    long[] listed = stateFilesAndBytes(checkpoint);
    assertThat(plan.get("plan").get("stateFiles").asLong()).isEqualTo(listed[0]).isPositive();
    assertThat(plan.get("plan").get("stateBytes").asLong()).isEqualTo(listed[1]);
    JsonNode estimate = plan.get("plan").get("estimate");
    assertThat(estimate.get("seconds").asDouble()).isPositive();
    assertThat(estimate.get("taskSlotsSource").asText()).contains(spark.sparkContext().master());
    assertThat(estimate.get("taskSlots").asInt()).isPositive();
    assertThat(estimate.get("work").get("oldStores").asLong()).isEqualTo(4);
    assertThat(estimate.get("work").get("newStores").asLong()).isEqualTo(6);
    assertThat(estimate.get("work").get("filesRead").asLong()).isEqualTo(listed[0]);
    assertThat(estimate.get("work").get("storage").asText()).isEqualTo("local");
    double terms = 0;
    for (JsonNode term : estimate.get("termSeconds")) {
      terms += term.asDouble();
    }
    assertThat(terms).isCloseTo(estimate.get("seconds").asDouble(), within(1e-9));
    Run dryRunText = cli("repartition", "--checkpoint", cp, "--partitions", "6", "--dry-run");
    assertThat(dryRunText.exit()).as(dryRunText.err()).isZero();
    assertThat(dryRunText.out())
        .contains("partitions:        4 -> 6")
        .containsPattern("state: +[\\d,]+ bytes in " + String.format("%,d", listed[0]) + " files")
        .containsPattern("Estimated time: ~[\\d.,]+ s on \\d+ task slots? \\(cost model fitted on ")
        .contains("dry run: nothing was written");
    assertThat(CheckpointDigest.of(checkpoint)).isEqualTo(before);

    Run done =
        cli("repartition", "--checkpoint", cp, "--partitions", "6", "--assume-stopped", "--json");
    assertThat(done.exit()).as(done.err()).isZero();
    JsonNode result = done.json();
    assertThat(result.get("ok").asBoolean()).isTrue();
    assertThat(result.get("changed").asBoolean()).isTrue();
    assertThat(result.get("plan").get("toPartitions").asInt()).isEqualTo(6);
    assertThat(result.get("result").get("rowsMoved").asLong()).isPositive();
    assertThat(result.get("result").get("stores").size()).isPositive();
    // what does not apply is null, not -1: no prepared layout was used
    assertThat(result.get("result").get("path").get("preparedBatch").isNull()).isTrue();

    JsonNode inspected = cli("inspect", "--checkpoint", cp, "--json").json();
    assertThat(inspected.get("schema").asText()).isEqualTo("stateshift/v1");
    assertThat(inspected.get("partitions").asInt()).isEqualTo(6);
    JsonNode verified = cli("verify", "--checkpoint", cp, "--json").json();
    assertThat(verified.get("ok").asBoolean()).isTrue();
    assertThat(verified.get("problems").size()).isZero();
    assertThat(verified.get("rowsChecked").asLong())
        .isEqualTo(result.get("result").get("rowsMoved").asLong());
  }

  /** The files and bytes directly in the state's partition folders, .crc files left out. */
  private static long[] stateFilesAndBytes(Path checkpoint) throws java.io.IOException {
    long[] out = new long[2];
    Path state = checkpoint.resolve("state");
    try (var walk = Files.walk(state, 3)) {
      walk.filter(Files::isRegularFile)
          .map(state::relativize)
          .filter(f -> f.getNameCount() == 3 && f.getName(1).toString().matches("\\d+"))
          .filter(f -> !f.getFileName().toString().startsWith("."))
          // Spark 4.1's own checksum of a state file (N.delta.crc), not state
          .filter(f -> !f.getFileName().toString().endsWith(".crc"))
          .map(state::resolve)
          .forEach(
              f -> {
                out[0]++;
                out[1] += f.toFile().length();
              });
    }
    return out;
  }

  @Test
  void historyListsTheRepartitionAndTheRollback() throws Exception {
    Path checkpoint = checkpoint(4);
    String cp = checkpoint.toString();
    assertThat(cli("history", "--checkpoint", cp).out()).contains("No repartition");

    JsonNode done =
        cli("repartition", "--checkpoint", cp, "--partitions", "7", "--assume-stopped", "--json")
            .json();
    assertThat(done.get("ok").asBoolean()).isTrue();
    Run rollback = cli("rollback", "--checkpoint", cp, "--assume-stopped", "--json");
    assertThat(rollback.exit()).as(rollback.err()).isZero();
    assertThat(rollback.json().get("toPartitions").asInt()).isEqualTo(4);

    Run history = cli("history", "--checkpoint", cp, "--json");
    assertThat(history.exit()).as(history.err()).isZero();
    // qualified, as the other commands print it
    assertThat(history.json().get("checkpoint").asText()).isEqualTo("file:" + cp);
    JsonNode entries = history.json().get("entries");
    assertThat(entries.size()).isEqualTo(2);
    JsonNode repartition = entries.get(0);
    assertThat(repartition.get("kind").asText()).isEqualTo("repartition");
    assertThat(repartition.get("outcome").asText()).isEqualTo("completed");
    assertThat(repartition.get("fromPartitions").asInt()).isEqualTo(4);
    assertThat(repartition.get("toPartitions").asInt()).isEqualTo(7);
    assertThat(repartition.get("rowsMoved").asLong())
        .isEqualTo(done.get("result").get("rowsMoved").asLong());
    assertThat(repartition.get("bytesMoved").asLong())
        .isEqualTo(done.get("result").get("bytesMoved").asLong());
    assertThat(repartition.get("durationMs").asLong()).isNotNegative();
    assertThat(repartition.get("path").asText()).isNotEmpty();
    assertThat(repartition.get("application").asText())
        .contains(spark.sparkContext().applicationId());
    assertThat(repartition.get("user").asText()).isEqualTo(spark.sparkContext().sparkUser());
    assertThat(repartition.get("rolledBack").asBoolean()).isTrue();
    assertThat(java.time.Instant.parse(repartition.get("startedAt").asText()))
        .isBefore(java.time.Instant.now());
    JsonNode undone = entries.get(1);
    assertThat(undone.get("kind").asText()).isEqualTo("rollback");
    assertThat(undone.get("outcome").asText()).isEqualTo("completed");
    assertThat(undone.get("fromPartitions").asInt()).isEqualTo(7);
    assertThat(undone.get("toPartitions").asInt()).isEqualTo(4);
    assertThat(undone.get("batch").asLong()).isEqualTo(repartition.get("batch").asLong());

    Run text = cli("history", "--checkpoint", cp);
    assertThat(text.out())
        .contains("repartition 4 -> 7  completed (rolled back later)")
        .contains("rollback 7 -> 4  completed");
  }

  @Test
  void theDemoRefusesTooFewEventsToCloseAWindowAndNamesTheLeastThatWorks() {
    Run run = cli("demo", "--events", "2000");
    assertThat(run.exit()).isEqualTo(StateShiftCli.BAD_INPUT);
    assertThat(run.err()).contains("--events 2,000 is too few").contains("at least 20,000");
    assertThat(run.out()).doesNotContain("device events written");
  }

  @Test
  void eachDemoRunGetsAFolderOfItsOwnAndDeletesNothing() throws Exception {
    Path first = DeviceCountsDemo.workingFolder(null);
    Path second = DeviceCountsDemo.workingFolder(null);
    try {
      assertThat(first).isDirectory().isEmptyDirectory();
      assertThat(second).isDirectory().isEmptyDirectory().isNotEqualTo(first);
    } finally {
      Files.deleteIfExists(first);
      Files.deleteIfExists(second);
    }
    // Another run's folder (or anything else) is refused, not cleared.
    Path used = Files.createDirectories(tmp.resolve("used"));
    Files.writeString(used.resolve("keep.txt"), "another run's data");
    Run refused = cli("demo", "--dir", used.toString(), "--events", "20000");
    assertThat(refused.exit()).isEqualTo(StateShiftCli.BAD_INPUT);
    assertThat(refused.err()).contains("is not empty").contains("deletes nothing");
    assertThat(used.resolve("keep.txt")).hasContent("another run's data");
    // a given folder that does not exist yet is created
    assertThat(DeviceCountsDemo.workingFolder(tmp.resolve("fresh/demo").toString()))
        .isEmptyDirectory();
  }

  /**
   * Bad input is refused with exit 2 and one line, before Spark starts, without a stack trace: an
   * existing folder as the report's page, a master Spark does not know, prepare without a count, a
   * misspelt or unknown option of classpath.
   */
  @Test
  void badInputIsOneLineWithExitTwoBeforeSparkStarts() throws Exception {
    Path folder = Files.createDirectories(tmp.resolve("reports"));
    Path nowhere = tmp.resolve("nowhere");
    Object[][] cases = {
      {
        new String[] {"report", "--checkpoint", nowhere.toString(), "--out", folder.toString()},
        "is a folder; name the page to write"
      },
      {
        new String[] {"inspect", "--checkpoint", nowhere.toString(), "--master", "foo"},
        "--master takes a Spark master URL"
      },
      {
        new String[] {"prepare", "--checkpoint", nowhere.toString()},
        "prepare needs --partitions <n>"
      },
      {new String[] {"classpath", "--ful"}, "did you mean --full?"},
      {new String[] {"classpath", "--bogus"}, "unknown option --bogus for classpath"},
    };
    for (Object[] c : cases) {
      String[] args = (String[]) c[0];
      Run run = cli(args);
      String line = String.join(" ", args);
      assertThat(run.exit()).as(line).isEqualTo(StateShiftCli.BAD_INPUT);
      assertThat(run.err())
          .as(line)
          .startsWith("error: ")
          .contains((String) c[1])
          .doesNotContain("Exception")
          .doesNotContain("\tat ");
      // the message, then where the options are: nothing else
      assertThat(run.err().lines().toList()).as(line).hasSize(2);
      assertThat(run.err().lines().toList().get(1)).startsWith("see: stateshift help");
    }
    // classpath --json is honoured: the jar and the class path as JSON
    Run classpath = cli("classpath", "--json");
    assertThat(classpath.exit()).isZero();
    assertThat(classpath.json().get("command").asText()).isEqualTo("classpath");
    assertThat(classpath.json().get("jar").asText()).isNotBlank();
    assertThat(classpath.json().get("classpath").size()).isPositive();
    // help prepare names both stores it works on
    assertThat(cli("help", "prepare").out())
        .contains("HDFS-backed state store")
        .contains("RocksDB with changelog")
        .contains("changelogCheckpointing.enabled=true");

    // In a fresh JVM, as a user runs it: refused before any Spark starts.
    Path log = tmp.resolve("master.log");
    long started = System.nanoTime();
    int exit =
        io.stateshift.testing.ChildJvm.runCli(
            log,
            java.util.List.of(),
            "report",
            "--checkpoint",
            nowhere.toString(),
            "--out",
            folder.toString(),
            "--master",
            "foo");
    String output = Files.readString(log);
    assertThat(exit).as(output).isEqualTo(StateShiftCli.BAD_INPUT);
    assertThat(output)
        .doesNotContain("SparkContext")
        .doesNotContain("Exception")
        .doesNotContain("Running Spark version");
    assertThat((System.nanoTime() - started) / 1_000_000).as("ms").isLessThan(30_000);
  }

  /**
   * Every change the command was not told the file sink of says what a file sink needs and the
   * command that repairs it: in text, in --json, and in a dry run.
   */
  @Test
  void everyChangeWithoutAFileSinkSaysWhatAFileSinkNeeds() throws Exception {
    Path checkpoint = checkpoint(4);
    String cp = checkpoint.toString();
    Run dryRun = cli("repartition", "--checkpoint", cp, "--partitions", "6", "--dry-run");
    assertThat(dryRun.exit()).as(dryRun.err()).isZero();
    assertThat(dryRun.out())
        .contains("_spark_metadata")
        .contains("add --file-sink <output>")
        .contains("stateshift repair-sink-log --checkpoint file:" + cp + " --file-sink <output>");
    JsonNode dryJson =
        cli("repartition", "--checkpoint", cp, "--partitions", "6", "--dry-run", "--json").json();
    assertThat(dryJson.get("fileSinkNote").asText()).contains("repair-sink-log");
    Run done =
        cli("repartition", "--checkpoint", cp, "--partitions", "6", "--assume-stopped", "--json");
    assertThat(done.exit()).as(done.err()).isZero();
    assertThat(done.json().get("fileSinkNote").asText())
        .contains("BATCH_METADATA_NOT_FOUND")
        .contains("repair-sink-log");
    Run text = cli("repartition", "--checkpoint", cp, "--partitions", "5", "--assume-stopped");
    assertThat(text.exit()).as(text.err()).isZero();
    assertThat(text.out()).contains("File sink: none given").contains("repair-sink-log");
  }

  /** inspect on a stateless query's checkpoint says it has no state, not what to repartition. */
  @Test
  void aStatelessCheckpointHasNoStateForStateshiftToChange() throws Exception {
    StreamRun run = new StreamRun(spark, tmp.resolve("input"));
    run.writeEvents(0, 50, 5);
    Path checkpoint = tmp.resolve("stateless");
    spark
        .readStream()
        .schema(StreamRun.EVENT_SCHEMA)
        .json(tmp.resolve("input").toString())
        .select("device")
        .writeStream()
        .format("parquet")
        .option("checkpointLocation", checkpoint.toString())
        .trigger(org.apache.spark.sql.streaming.Trigger.AvailableNow())
        .start(tmp.resolve("out").toString())
        .awaitTermination();
    Run inspect = cli("inspect", "--checkpoint", checkpoint.toString());
    assertThat(inspect.err())
        .contains("has no state")
        .contains("nothing for stateshift to change")
        .doesNotContain("no state to repartition");
  }

  /**
   * doctor says how many cores it assumed and where the figure came from, and never calls the count
   * suitable while recommending another one.
   */
  @Test
  void doctorSaysTheCoresItAssumedAndWhereTheyCameFrom() throws Exception {
    Path checkpoint = checkpoint(4);
    String cp = checkpoint.toString();
    assertThat(cli("doctor", "--checkpoint", cp, "--master", "local[3]").out())
        .contains("cores:        3, from --master local[3]");
    // the cluster's settings (parsed only: this JVM's session keeps its own)
    int[] cores = new int[1];
    assertThat(
            StateShiftCli.assumedCores(
                (CommandLine.Invocation)
                    CommandLine.parse(
                        new String[] {
                          "doctor", "--checkpoint", cp, "--conf", "spark.cores.max=12"
                        }),
                cores))
        .isEqualTo("spark.cores.max in --conf");
    assertThat(cores[0]).isEqualTo(12);
    assertThat(
            StateShiftCli.assumedCores(
                (CommandLine.Invocation)
                    CommandLine.parse(
                        new String[] {
                          "doctor",
                          "--checkpoint",
                          cp,
                          "--master",
                          "local[2]",
                          "--conf",
                          "spark.executor.instances=3",
                          "--conf",
                          "spark.executor.cores=4"
                        }),
                cores))
        .isEqualTo("spark.executor.instances 3 x spark.executor.cores 4 in --conf");
    assertThat(cores[0]).isEqualTo(12);
    assertThat(cli("doctor", "--checkpoint", cp, "--cores", "5").out())
        .contains("cores:        5, from --cores");
    Run plain = cli("doctor", "--checkpoint", cp, "--json");
    assertThat(plain.json().get("cores").asInt())
        .isEqualTo(Runtime.getRuntime().availableProcessors());
    assertThat(plain.json().get("coresSource").asText()).startsWith("this machine's cores");
    for (int given : new int[] {1, 2, 4, 8}) {
      JsonNode report =
          cli("doctor", "--checkpoint", cp, "--cores", Integer.toString(given), "--json").json();
      for (JsonNode f : report.get("findings")) {
        if (f.get("title").asText().contains("suits")) {
          assertThat(report.get("recommendedPartitions").asInt()).isEqualTo(4);
          assertThat(f.get("fix").asText()).as("cores " + given).isEmpty();
        }
      }
    }
  }
}
