package io.stateshift.cli;

import io.stateshift.demo.DeviceCountsDemo;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;

/**
 * The commands, their options, and a strict parser: an option a command does not declare, a flag
 * given a value, a missing or malformed value are each refused with a message naming the fix,
 * before any Spark starts.
 */
final class CommandLine {
  private CommandLine() {}

  /** A command line that cannot run; {@code command} is the command it was for, if known. */
  static final class UsageError extends RuntimeException {
    private final String command;

    UsageError(String command, String message) {
      super(message);
      this.command = command;
    }

    String command() {
      return command;
    }

    /** Where the user finds the options that do exist. */
    String hint() {
      return command != null ? "see: stateshift help " + command : "see: stateshift --help";
    }
  }

  /** What the command line asks for. */
  sealed interface Request permits GlobalHelp, Version, CommandHelp, Invocation {}

  record GlobalHelp() implements Request {}

  record Version(boolean json) implements Request {}

  record CommandHelp(CliCommand command) implements Request {}

  /** A command with checked options: each declared option's values, in order. */
  record Invocation(CliCommand command, Map<String, List<String>> values) implements Request {
    String name() {
      return command.name();
    }

    boolean flag(String option) {
      return values.containsKey(option);
    }

    boolean has(String option) {
      return values.containsKey(option);
    }

    String value(String option) {
      List<String> v = values.get(option);
      return v == null ? null : v.get(v.size() - 1);
    }

    List<String> all(String option) {
      return values.getOrDefault(option, List.of());
    }

    /** The arguments that are not options, for a command that takes them. */
    List<String> operands() {
      return all(OPERANDS);
    }

    int intValue(String option, int fallback) {
      String v = value(option);
      return v == null ? fallback : Integer.parseInt(v.trim());
    }
  }

  /** Where an {@link Invocation} keeps the arguments that are not options. */
  private static final String OPERANDS = "";

  // ---- the commands ----

  private static final CliOption CHECKPOINT =
      CliOption.value(
              "checkpoint",
              "<path>",
              null,
              "the query's checkpointLocation (a Hadoop path: file:, hdfs:, s3a:, ...)")
          .mandatory()
          .checkedBy(CliOption::notBlank);
  private static final CliOption JSON =
      CliOption.flag(
          "json", "print the result as JSON (schema " + CliJson.SCHEMA + "), errors included");
  private static final CliOption ASSUME_STOPPED =
      CliOption.flag(
          "assume-stopped",
          "the query is known to be stopped: skip the refusal of logs written in the last 2 minutes "
              + "(a running query holding StateShiftExtensions' lease still refuses)");
  private static final CliOption CORES =
      CliOption.value(
              "cores",
              "<n>",
              "the Spark master's cores",
              "cores the query runs on, for the partition advice")
          .checkedBy(CliOption.atLeast(1));
  private static final CliOption PROGRESS_HISTORY =
      CliOption.value(
              "history",
              "<path>",
              "none",
              "a folder of StreamMonitor progress history (JSON lines)")
          .checkedBy(CliOption::notBlank);
  private static final CliOption DRY_RUN =
      CliOption.flag("dry-run", "print the plan and write nothing");

  private static final CliOption BACKUP_TO =
      CliOption.value(
              "backup-to",
              "<path>",
              "_stateshift/ in the checkpoint",
              "where a decrease keeps the partition folders it drops")
          .checkedBy(CliOption::notBlank);

  private static final CliOption FILE_SINK =
      CliOption.value(
              "file-sink",
              "<path>",
              "the sink on record in _stateshift/file-sink, if any",
              "the output folder of the query's file sink (parquet, json, csv, orc, text)")
          .checkedBy(CliOption::notBlank);
  private static final CliOption MASTER =
      CliOption.value(
              "master", "<url>", "local[2], or the spark.master system property", "Spark master")
          .checkedBy(CommandLine::checkMaster);
  private static final CliOption VERBOSE =
      CliOption.flag("verbose", "print the stack trace of a failure, not only its message");
  private static final CliOption CONF =
      CliOption.value("conf", "<key=value>", null, "a Spark setting, for example S3 credentials")
          .many()
          .checkedBy(v -> v.indexOf('=') > 0 ? null : "takes key=value, got '" + v + "'");

  private static final CliOption JARS =
      CliOption.value(
              "jars",
              "<a.jar,...>",
              null,
              "extra jars (a file system connector such as hadoop-aws), on the driver and shipped to "
                  + "executors")
          .many();
  private static final CliOption PACKAGES =
      CliOption.value(
              "packages",
              "<g:a:v,...>",
              null,
              "Maven artifacts with their dependencies, resolved by the ./stateshift launcher into "
                  + "--jars (also: STATESHIFT_CLASSPATH)")
          .many();

  private static final CliOption OPERATOR =
      CliOption.value("operator", "<id>", "the only stateful operator", "the operator's id")
          .checkedBy(CliOption.atLeast(0));
  private static final CliOption STORE =
      CliOption.value("store", "<name>", "the operator's only store", "the store's name")
          .checkedBy(CliOption::notBlank);
  private static final CliOption WHERE =
      CliOption.value(
              "where", "<predicate>", null, "only the entries this SQL predicate is true for")
          .checkedBy(CliOption::notBlank);
  private static final CliOption COLUMN_FAMILY =
      CliOption.value(
              "column-family",
              "<name>",
              "all, key and value as JSON",
              "one column family (transformWithState variable, timers, TTL index), typed")
          .checkedBy(CliOption::notBlank);
  private static final CliOption LIMIT =
      CliOption.value("limit", "<n>", "20", "at most this many entries")
          .checkedBy(CliOption.atLeast(1));

  private static List<CliOption> withSpark(CliOption... own) {
    List<CliOption> out = new ArrayList<>(List.of(own));
    out.add(MASTER);
    out.add(CONF);
    out.add(JARS);
    out.add(PACKAGES);
    out.add(VERBOSE);
    return List.copyOf(out);
  }

  static final List<CliCommand> COMMANDS =
      List.of(
          new CliCommand(
              "repartition",
              "Redistribute the state of a stopped query into n partitions.",
              """
          Redistributes the state of the stopped query at --checkpoint into n partitions,
          crash-safely: running it again after a crash finishes or undoes the interrupted attempt.
          Progress goes to stderr. A checkpoint that already has n partitions is left as it is
          (exit 0, "Nothing to do"), so scripts can run it unconditionally.
          """,
              withSpark(
                  CHECKPOINT,
                  CliOption.value("partitions", "<n>", null, "the partition count to end with")
                      .mandatory()
                      .checkedBy(CliOption.atLeast(1)),
                  DRY_RUN,
                  BACKUP_TO,
                  FILE_SINK,
                  ASSUME_STOPPED,
                  JSON),
              "stateshift repartition --checkpoint s3a://bucket/checkpoints/orders --partitions 16"),
          new CliCommand(
              "prepare",
              "Prepare a repartition while the query runs.",
              """
          Writes the state of the last committed batch in n partitions under
          _stateshift/prepared/ while the query keeps running: it takes no lock and writes nothing
          else. A later repartition to n (stateshift repartition, or the restart with
          StateShiftExtensions) starts from it and only replays the batches committed since, or
          says why it moved all state instead. Running it again moves the prepared batch forward;
          --cancel removes it. Works on the HDFS-backed state store, and on RocksDB with changelog
          checkpointing (spark.sql.streaming.stateStore.rocksdb.changelogCheckpointing.enabled=true),
          whose changelog files carry the batches committed after the prepared one.
          """,
              withSpark(
                  CHECKPOINT,
                  CliOption.value(
                          "partitions", "<n>", null, "the partition count the restart will ask for")
                      .checkedBy(CliOption.atLeast(1)),
                  CliOption.flag("cancel", "remove the prepared layout instead"),
                  JSON),
              "stateshift prepare --checkpoint /data/checkpoints/orders --partitions 16"),
          new CliCommand(
              "migrate",
              "Move the state of a stopped query to another state store provider or format.",
              """
          Moves the state of the stopped query at --checkpoint to another state store provider
          (HDFS-backed to RocksDB or back), another state checkpoint format (RocksDB's
          spark.sql.streaming.stateStore.checkpointFormatVersion, 1 or 2, both ways), or both,
          optionally with a new partition count, in one crash-safe pass under the same protocol as
          repartition: rollback, verify and history work the same way. The new batch's offset log
          entry names the new provider, which the restarted query takes from it; the format is the
          session's at every start (Spark does not record it), so what to set in the query's
          session is printed. Refused (exit 2, nothing written) when nothing would change (use
          repartition), when an operator needs RocksDB (transformWithState, join state format 3)
          or for format 2 on the HDFS-backed store.
          """,
              withSpark(
                  CHECKPOINT,
                  CliOption.value(
                          "provider",
                          "<rocksdb|hdfs>",
                          "the checkpoint's",
                          "the state store to end with")
                      .checkedBy(
                          v ->
                              v.equalsIgnoreCase("rocksdb") || v.equalsIgnoreCase("hdfs")
                                  ? null
                                  : "takes rocksdb or hdfs, got '" + v + "'"),
                  CliOption.value(
                          "format-version",
                          "<1|2>",
                          "the checkpoint's",
                          "the state checkpoint format to end with (RocksDB)")
                      .checkedBy(
                          v ->
                              v.equals("1") || v.equals("2")
                                  ? null
                                  : "takes 1 or 2, got '" + v + "'"),
                  CliOption.value(
                          "partitions",
                          "<n>",
                          "the checkpoint's count",
                          "the partition count to end with")
                      .checkedBy(CliOption.atLeast(1)),
                  DRY_RUN,
                  BACKUP_TO,
                  FILE_SINK,
                  ASSUME_STOPPED,
                  JSON),
              "stateshift migrate --checkpoint /data/checkpoints/orders --provider rocksdb"),
          new CliCommand(
              "rollback",
              "Restore the layout before the last repartition.",
              """
          Restores the layout before the checkpoint's last repartition, byte for byte, as long as
          no batch has run on the new layout (it says what to run instead when one has).
          """,
              withSpark(CHECKPOINT, ASSUME_STOPPED, JSON),
              "stateshift rollback --checkpoint /data/checkpoints/orders"),
          new CliCommand(
              "verify",
              "Check key placement, row counts and state files.",
              """
          Checks that every key is in the partition Spark assigns it, that each store holds as
          many rows as before the last repartition, and that the state files the logs need exist.
          Exit code 1 on any problem. Read-only.
          """,
              withSpark(CHECKPOINT, FILE_SINK, JSON),
              "stateshift verify --checkpoint /data/checkpoints/orders"),
          new CliCommand(
              "repair-sink-log",
              "Give a file sink's log the repartition batches it lacks.",
              """
          Writes an empty entry into the file sink's log (<output>/_spark_metadata) for each
          repartition batch of the checkpoint that the log lacks: a repartition that did not know
          the sink, or Spark's built-in runner, leaves such a gap, and the sink's next compaction
          and every read of its output fail on it. Gaps at batches that wrote output are reported,
          not filled (exit code 1). Changes nothing in the checkpoint.
          """,
              withSpark(CHECKPOINT, FILE_SINK.mandatory(), JSON),
              "stateshift repair-sink-log --checkpoint /data/checkpoints/orders --file-sink /data/out"),
          new CliCommand(
              "inspect",
              "Show batches, operators, stores, rows and bytes per partition.",
              """
          Shows the query id, last planned and committed batch, state store provider, each
          stateful operator and store with rows and bytes per partition, skew, and keys outside
          their partition. Read-only.
          """,
              withSpark(CHECKPOINT, JSON),
              "stateshift inspect --checkpoint /data/checkpoints/orders --json"),
          new CliCommand(
              "state",
              "Print the entries of a store: partition, key and value columns.",
              """
          Prints the entries of one state store of the stopped query at --checkpoint, at its last
          committed batch: partition_id, then the key and value columns (key.<field>,
          value.<field>), the names Spark's state data source uses. --where filters with a SQL
          predicate over them. Read-only; every Spark line, both state stores. transformWithState
          (and a join in state format 3) shows each entry's variable, column family and kind
          (value, list, map, timer, ttl), its grouping key, and the family's own key and value.
          """,
              withSpark(CHECKPOINT, OPERATOR, STORE, COLUMN_FAMILY, WHERE, LIMIT, JSON),
              "stateshift state --checkpoint /data/checkpoints/orders --where \"key.user = 'u42'\""),
          new CliCommand(
              "export",
              "Write the entries of a store as a table (parquet, json or delta).",
              """
          Writes the entries of one state store, as the state command shows them (partition_id,
          key and value structs), to --out as a table. The output must not exist yet. Read-only
          on the checkpoint.
          """,
              withSpark(
                  CHECKPOINT,
                  OPERATOR,
                  STORE,
                  COLUMN_FAMILY,
                  WHERE,
                  CliOption.value("out", "<path>", null, "where to write the table")
                      .mandatory()
                      .checkedBy(CliOption::notBlank),
                  CliOption.value("format", "<parquet|json|delta>", "parquet", "the table format")
                      .checkedBy(
                          v ->
                              List.of("parquet", "json", "delta")
                                      .contains(v.toLowerCase(Locale.ROOT))
                                  ? null
                                  : "takes parquet, json or delta, got '" + v + "'"),
                  JSON),
              "stateshift export --checkpoint /data/checkpoints/orders --out /data/orders-state"),
          new CliCommand(
              "edit",
              "Delete or write entries in the state of a stopped query (erase, purge, seed).",
              """
          Deletes the entries of one stateful operator for which --delete-where, a SQL predicate
          over partition_id, key and value, is true: an erasure of keys, or a purge of state that
          no watermark evicts. A join's predicate names key fields only, and all four of its
          stores lose the same keys. Crash-safe, under the same protocol as repartition: running
          it again after a crash finishes or undoes the interrupted edit; rollback undoes it; the
          history records the predicate and the counts, never a deleted value. --upsert-from
          writes entries (a key and a value struct as the state command shows them, from a
          table, a Delta table, parquet or JSON files), each replacing the entry with the same
          key, checked against the recorded schema first: how a new query is seeded (start it
          once, stop it, upsert, restart). --set "<value field> = <expression>" rewrites value
          fields in place, in the entries --where selects (all without it): the expression is
          SQL over partition_id, key and the old value, of a type that widens safely to the
          field's recorded one (anything else is refused before the lock); an edit of its own,
          not combined with --delete-where or --upsert-from. --dry-run counts what would change
          and shows a few keys.
          """,
              withSpark(
                  CHECKPOINT,
                  OPERATOR,
                  CliOption.value(
                          "delete-where",
                          "<predicate>",
                          null,
                          "the entries to delete, for example \"key.user = 'u42'\"")
                      .checkedBy(CliOption::notBlank),
                  CliOption.value(
                          "upsert-from",
                          "<table or path>",
                          null,
                          "entries to write (key and value structs, as the state command shows"
                              + " them), each replacing the entry with the same key")
                      .checkedBy(CliOption::notBlank),
                  CliOption.value(
                          "set",
                          "<field = expression>",
                          null,
                          "rewrite a value field in place, for example \"count = value.count * 2\"")
                      .many()
                      .checkedBy(
                          v ->
                              v.indexOf('=') > 0 && !v.substring(v.indexOf('=') + 1).isBlank()
                                  ? null
                                  : "takes \"<value field> = <expression>\", got '" + v + "'"),
                  CliOption.value(
                          "where",
                          "<predicate>",
                          "every entry",
                          "the entries --set rewrites, a SQL predicate over partition_id, key and"
                              + " value")
                      .checkedBy(CliOption::notBlank),
                  CliOption.value(
                          "partitions",
                          "<n>",
                          "the checkpoint's count",
                          "also change the partition count, in the same pass")
                      .checkedBy(CliOption.atLeast(1)),
                  DRY_RUN,
                  BACKUP_TO,
                  FILE_SINK,
                  ASSUME_STOPPED,
                  JSON),
              "stateshift edit --checkpoint /data/checkpoints/orders --delete-where \"key.user = 'u42'\""),
          new CliCommand(
              "evolve",
              "Rewrite the state's values for a changed query (an aggregate added or dropped).",
              """
          Rewrites every value of one stateful operator's state into --value-schema, the value
          the changed query keeps (as the state command shows values): old fields are carried by
          name (types widen where safe), new ones are filled by --fill expressions over key and
          the old value (by default null, or zero for a number that cannot be null), dropped
          ones go. Spark's state schema file is rewritten, so the changed query starts on the same
          checkpoint. Crash-safe, under the same protocol as repartition; rollback undoes it.
          """,
              withSpark(
                  CHECKPOINT,
                  OPERATOR,
                  CliOption.value(
                          "value-schema",
                          "<ddl>",
                          null,
                          "the new value's fields, for example \"count BIGINT, sum BIGINT\"")
                      .mandatory()
                      .checkedBy(CliOption::notBlank),
                  CliOption.value(
                          "fill",
                          "<field=expression>",
                          "null, or 0 for a number that cannot be null",
                          "how a new field is computed, for example \"sum=0\"")
                      .many()
                      .checkedBy(
                          v ->
                              v.indexOf('=') > 0
                                  ? null
                                  : "takes field=expression, got '" + v + "'"),
                  DRY_RUN,
                  BACKUP_TO,
                  FILE_SINK,
                  ASSUME_STOPPED,
                  JSON),
              "stateshift evolve --checkpoint /data/checkpoints/orders --value-schema \"count BIGINT, sum BIGINT\" --fill sum=0"),
          new CliCommand(
              "history",
              "List the repartitions and rollbacks done on a checkpoint.",
              """
          Lists every repartition and rollback stateshift recorded for the checkpoint (under
          _stateshift/history), oldest first: time, partitions from -> to, rows and bytes moved,
          duration, write path, application and user, outcome. Failures that left an attempt for
          the next run are listed too; refusals and failures undone before the switch are not
          (they leave the checkpoint as it was). Read-only.
          """,
              withSpark(CHECKPOINT, JSON),
              "stateshift history --checkpoint /data/checkpoints/orders"),
          new CliCommand(
              "doctor",
              "Check a checkpoint against the production checklist.",
              """
          Checks state store, state growth, partitions, source rate and checkpoint hygiene.
          Read-only; exit code 1 when a finding is an ERROR.
          """,
              withSpark(CHECKPOINT, CORES, PROGRESS_HISTORY, FILE_SINK, JSON),
              "stateshift doctor --checkpoint /data/checkpoints/orders --cores 16"),
          new CliCommand(
              "report",
              "Write an HTML page with charts and the doctor's findings.",
              """
          Writes a self-contained HTML page with charts of the state per partition, its growth,
          the source rate, and the doctor's findings.
          """,
              withSpark(
                  CHECKPOINT,
                  PROGRESS_HISTORY,
                  CORES,
                  CliOption.value("out", "<file.html>", null, "the page to write")
                      .mandatory()
                      .checkedBy(CliOption::notBlank),
                  JSON),
              "stateshift report --checkpoint /data/checkpoints/orders --out orders.html"),
          new CliCommand(
              "inventory",
              "One row per stream under folders of checkpoints, with cost recommendations.",
              """
          Finds every checkpoint at or below the folders given (a folder with offsets/ and
          commits/ or metadata; or name checkpoints themselves) and prints one row per stream:
          state store, partitions, state rows and bytes, batches per hour and idle share (from
          the commit log's file times), trigger and batch duration (from a StreamMonitor
          history), the doctor's worst finding. Then the cost practice's recommendations with
          the numbers behind them: scheduled availableNow jobs for mostly idle streams, light
          streams packed into one application, heavy ones in their own, partition counts,
          RocksDB for large state on the HDFS-backed store. Read-only.
          """,
              withSpark(
                  PROGRESS_HISTORY.many(),
                  CORES,
                  CliOption.value(
                          "out", "<fleet.html>", "none", "also write a self-contained HTML page")
                      .checkedBy(CommandLine::checkPageFile),
                  JSON),
              "stateshift inventory s3a://bucket/checkpoints --history s3a://bucket/stream-history",
              "<folder or checkpoint>..."),
          new CliCommand(
              "demo",
              "Run the device-count demo end to end on an embedded Spark.",
              """
          Counts device events per 5-minute window on RocksDB with 4 state partitions, stops,
          restarts on 8 with StateShiftExtensions, and checks the output against a batch
          computation; StreamMonitor writes the progress history of both runs. Each phase and
          batch is printed with the time since the start, at least every 5 seconds; the end
          prints the wall time, the longest silence and the next commands to try. --quick: 20,000
          events on 2 then 4 partitions. Works in a folder of its own and leaves it (checkpoint
          and history included) for inspect, history, doctor and report; it deletes nothing.
          """,
              withSpark(
                  CliOption.value(
                          "events",
                          "<n>",
                          Integer.toString(DeviceCountsDemo.DEFAULT_EVENTS),
                          "device events to write (--quick: "
                              + String.format("%,d", DeviceCountsDemo.QUICK_EVENTS)
                              + ")")
                      .checkedBy(CommandLine::checkEvents),
                  CliOption.flag(
                      "quick",
                      "a smaller run, under a minute on 2 cores: fewer events and partitions"),
                  CliOption.value(
                          "dir",
                          "<path>",
                          "a new temporary folder per run",
                          "the working folder, new or empty")
                      .checkedBy(CommandLine::checkDemoDir),
                  JSON),
              "stateshift demo --quick --dir /tmp/my-demo"),
          new CliCommand(
              "classpath",
              "Print the library jar (--full: with Spark, for embedding).",
              """
          Prints the library jar, for spark-submit --jars; with --full, the jar and everything it
          runs with (Spark and Delta included), for programs that embed stateshift.
          """,
              List.of(
                  CliOption.flag("full", "the whole runtime classpath, Spark included"),
                  CliOption.flag(
                      "json",
                      "print the jar and the class path as JSON (schema " + CliJson.SCHEMA + ")")),
              "stateshift classpath --full"));

  static Optional<CliCommand> command(String name) {
    return COMMANDS.stream().filter(c -> c.name().equals(name)).findFirst();
  }

  static String globalUsage() {
    StringBuilder out =
        new StringBuilder(
            """
        usage: stateshift <command> [options]
               stateshift help <command>    a command's options, defaults and an example
               stateshift --version         the version and the Spark it is built for

        commands:
        """);
    int width = COMMANDS.stream().mapToInt(c -> c.name().length()).max().orElse(0);
    for (CliCommand c : COMMANDS) {
      out.append(String.format("  %-" + width + "s  %s%n", c.name(), c.summary()));
    }
    out.append(
        """

        Commands that start Spark also take --master <url> and repeatable --conf key=value; every
        command that prints a result takes --json.
        Exit codes: 0 success (also "nothing to do"), 2 bad input or refusal (the checkpoint was
        not changed), 1 failure.
        """);
    return out.toString();
  }

  // ---- parsing ----

  static Request parse(String[] argv) {
    if (argv.length == 0) {
      throw new UsageError(null, "no command given");
    }
    String first = argv[0];
    if (isHelp(first) || first.equals("help") && argv.length == 1) {
      if (argv.length > 1) {
        throw new UsageError(
            null,
            "unexpected argument '"
                + argv[1]
                + "' after "
                + first
                + "; for a command's help: stateshift help <command>");
      }
      return new GlobalHelp();
    }
    if (first.equals("--version")) {
      boolean json = argv.length == 2 && argv[1].equals("--json");
      if (argv.length > 1 && !json) {
        throw new UsageError(null, "--version takes no arguments but --json");
      }
      return new Version(json);
    }
    if (first.equals("help")) {
      if (argv.length > 2) {
        throw new UsageError(
            null, "help takes one command, for example: stateshift help " + "repartition");
      }
      return new CommandHelp(knownCommand(argv[1]));
    }
    if (first.startsWith("-")) {
      throw new UsageError(
          null, "a command comes first, got '" + first + "'; commands are " + commandNames());
    }
    CliCommand command = knownCommand(first);
    for (int i = 1; i < argv.length; i++) {
      if (isHelp(argv[i])) {
        return new CommandHelp(command); // help wins over whatever else is on the line
      }
    }
    Map<String, List<String>> values = new LinkedHashMap<>();
    for (int i = 1; i < argv.length; i++) {
      String arg = argv[i];
      if (command.operands() != null && !arg.startsWith("-")) {
        values.computeIfAbsent(OPERANDS, k -> new ArrayList<>()).add(arg);
        continue;
      }
      if (!arg.startsWith("--")) {
        throw new UsageError(
            command.name(),
            "unexpected argument '"
                + arg
                + "'"
                + (arg.startsWith("-") ? " (options start with --)" : "; options start with --"));
      }
      String key = arg.substring(2);
      String inline = null;
      int eq = key.indexOf('=');
      if (eq >= 0) {
        inline = key.substring(eq + 1);
        key = key.substring(0, eq);
      }
      CliOption option = knownOption(command, key);
      String value;
      if (option.isFlag()) {
        if (inline != null) {
          throw new UsageError(
              command.name(),
              "--"
                  + key
                  + " is a flag and takes no value (got '"
                  + arg
                  + "'): give --"
                  + key
                  + " to turn it on, leave it out to keep it off");
        }
        value = "true";
      } else if (inline != null) {
        value = inline;
      } else if (i + 1 < argv.length && !argv[i + 1].startsWith("--")) {
        value = argv[++i];
      } else {
        throw new UsageError(command.name(), "--" + key + " needs a value: " + option.synopsis());
      }
      if (values.containsKey(key) && !option.repeatable()) {
        throw new UsageError(command.name(), "--" + key + " is given twice; give it once");
      }
      String wrong = option.check().apply(value);
      if (wrong != null) {
        throw new UsageError(command.name(), "--" + key + " " + wrong);
      }
      values.computeIfAbsent(key, k -> new ArrayList<>()).add(value);
    }
    for (CliOption option : command.options()) {
      if (option.required() && !values.containsKey(option.name())) {
        throw new UsageError(command.name(), option.synopsis() + " is required");
      }
    }
    if (command.operands() != null && !values.containsKey(OPERANDS)) {
      throw new UsageError(command.name(), command.name() + " needs " + command.operands());
    }
    checkTogether(command.name(), values);
    return new Invocation(command, values);
  }

  /** The checks that take more than one option, or the file system: still before Spark starts. */
  private static void checkTogether(String command, Map<String, List<String>> values) {
    switch (command) {
      case "prepare" -> {
        if (!values.containsKey("partitions") && !values.containsKey("cancel")) {
          throw new UsageError(
              command,
              "prepare needs --partitions <n> (or --cancel to remove the prepared layout)");
        }
        if (values.containsKey("partitions") && values.containsKey("cancel")) {
          throw new UsageError(command, "give --partitions <n> or --cancel, not both");
        }
      }
      case "migrate" -> {
        if (!values.containsKey("provider") && !values.containsKey("format-version")) {
          throw new UsageError(
              command, "migrate needs --provider <rocksdb|hdfs>, --format-version <1|2>, or both");
        }
      }
      case "report" -> {
        String out = values.get("out").get(0);
        Path file = Path.of(out).toAbsolutePath();
        if (Files.isDirectory(file)) {
          throw new UsageError(
              command,
              "--out "
                  + out
                  + " is a folder; name the page to write, for example --out "
                  + file.resolve("report.html"));
        }
        Path parent = file.getParent();
        while (parent != null && !Files.exists(parent)) {
          parent = parent.getParent();
        }
        if (parent != null && !Files.isDirectory(parent)) {
          throw new UsageError(
              command, "--out " + out + ": " + parent + " is a file, not a folder");
        }
      }
      default -> {}
    }
  }

  /**
   * A master URL Spark accepts: local, local[n], local[*], local[n,m], local-cluster[...],
   * spark://, yarn, k8s://, mesos://.
   */
  static String checkMaster(String master) {
    if (master.matches(
        "local(\\[(\\d+|\\*)(,\\d+)?\\])?|local-cluster\\[.+\\]|(spark|k8s|mesos)://.+|yarn")) {
      return null;
    }
    return "takes a Spark master URL (local[2], local[*], spark://host:7077, yarn, "
        + "k8s://...), got '"
        + master
        + "'";
  }

  private static boolean isHelp(String arg) {
    return arg.equals("--help") || arg.equals("-h");
  }

  private static CliCommand knownCommand(String name) {
    return command(name)
        .orElseThrow(
            () ->
                new UsageError(
                    null,
                    "unknown command '"
                        + name
                        + "'"
                        + closest(name, COMMANDS.stream().map(CliCommand::name).toList())
                            .map(c -> "; did you mean " + c + "?")
                            .orElse("")
                        + " Commands: "
                        + commandNames()));
  }

  private static CliOption knownOption(CliCommand command, String key) {
    return command
        .option(key)
        .orElseThrow(
            () ->
                new UsageError(
                    command.name(),
                    "unknown option --"
                        + key
                        + " for "
                        + command.name()
                        + closest(key, command.options().stream().map(CliOption::name).toList())
                            .map(o -> "; did you mean --" + o + "?")
                            .orElse("")));
  }

  private static String commandNames() {
    return String.join(", ", COMMANDS.stream().map(CliCommand::name).toList());
  }

  /**
   * The name closest to {@code given}, when it is close: an edit distance of at most a third of the
   * name (at least 2) ignoring case and dashes, so {@code --backupTo} and {@code --backup_to} find
   * {@code backup-to}; or a name {@code given} begins ({@code --part}).
   */
  static Optional<String> closest(String given, List<String> names) {
    String g = normalize(given);
    Optional<String> best =
        names.stream().min(Comparator.comparingInt((String n) -> distance(g, normalize(n))));
    return best.filter(
        b ->
            distance(g, normalize(b)) <= Math.max(2, b.length() / 3)
                || normalize(b).startsWith(g) && g.length() >= 3);
  }

  private static String normalize(String s) {
    return s.toLowerCase(Locale.ROOT).replace("-", "").replace("_", "");
  }

  /** Levenshtein distance. */
  static int distance(String a, String b) {
    int[] prev = new int[b.length() + 1];
    int[] cur = new int[b.length() + 1];
    for (int j = 0; j <= b.length(); j++) {
      prev[j] = j;
    }
    for (int i = 1; i <= a.length(); i++) {
      cur[0] = i;
      for (int j = 1; j <= b.length(); j++) {
        int cost = a.charAt(i - 1) == b.charAt(j - 1) ? 0 : 1;
        cur[j] = Math.min(Math.min(cur[j - 1] + 1, prev[j] + 1), prev[j - 1] + cost);
      }
      int[] t = prev;
      prev = cur;
      cur = t;
    }
    return prev[b.length()];
  }

  private static String checkEvents(String value) {
    String wrong = CliOption.atLeast(1).apply(value);
    if (wrong != null) {
      return wrong;
    }
    int events = Integer.parseInt(value.trim());
    return events < DeviceCountsDemo.MIN_EVENTS ? DeviceCountsDemo.tooFewEvents(events) : null;
  }

  /** A page to write: not a folder, and not in a folder that is a file. */
  private static String checkPageFile(String file) {
    if (file.isBlank()) {
      return "must not be empty";
    }
    Path path = Path.of(file).toAbsolutePath();
    if (Files.isDirectory(path)) {
      return file + " is a folder; name the .html file to write";
    }
    for (Path parent = path.getParent(); parent != null; parent = parent.getParent()) {
      if (Files.exists(parent)) {
        return Files.isDirectory(parent) ? null : parent + " is a file, not a folder";
      }
    }
    return null;
  }

  /** The demo writes only into a folder of its own: a new one, or one that is empty. */
  private static String checkDemoDir(String dir) {
    if (dir.isBlank()) {
      return "must not be empty";
    }
    Path path = Path.of(dir);
    if (Files.isRegularFile(path)) {
      return dir + " is a file; pass a new or empty folder";
    }
    if (Files.isDirectory(path)) {
      try (var entries = Files.list(path)) {
        if (entries.findAny().isPresent()) {
          return dir + " is not empty; the demo deletes nothing, so pass a new or empty folder";
        }
      } catch (java.io.IOException e) {
        return dir + " cannot be read (" + e.getMessage() + ")";
      }
    }
    return null;
  }
}
