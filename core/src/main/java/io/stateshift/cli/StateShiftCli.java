package io.stateshift.cli;

import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.stateshift.CheckpointReport;
import io.stateshift.HistoryEntry;
import io.stateshift.MigrateState;
import io.stateshift.RepartitionPlan;
import io.stateshift.RepartitionResult;
import io.stateshift.StateShift;
import io.stateshift.StateShiftException;
import io.stateshift.StateShiftException.Reason;
import io.stateshift.VerificationReport;
import io.stateshift.checkpoint.spi.SparkLines;
import io.stateshift.cli.CommandLine.Invocation;
import io.stateshift.config.StateShiftConf;
import io.stateshift.demo.DeviceCountsDemo;
import io.stateshift.estimate.CostEstimate;
import io.stateshift.estimate.CostModel;
import java.io.PrintStream;
import java.util.List;
import java.util.Locale;
import java.util.function.Function;
import org.apache.spark.SparkConf;
import org.apache.spark.sql.SparkSession;

/**
 * The {@code ./stateshift} command line. Each command declares its options ({@link CommandLine});
 * the whole command line is checked before Spark starts. Exit codes: 0 success (a repartition to
 * the count the checkpoint has included), 2 bad input or refusal (the checkpoint was not changed),
 * 1 failure. With {@code --json}, stdout holds one JSON document ({@link CliJson}), errors too.
 */
public final class StateShiftCli {
  static final int OK = 0;
  static final int FAILURE = 1;
  static final int BAD_INPUT = 2;

  private final PrintStream out;
  private final PrintStream err;

  public StateShiftCli(PrintStream out, PrintStream err) {
    this.out = out;
    this.err = err;
  }

  /** The commands that start their own Spark, where {@link StartupOverlap} helps. */
  private static final java.util.Set<String> SPARK_COMMANDS =
      java.util.Set.of(
          "repartition",
          "prepare",
          "migrate",
          "inspect",
          "verify",
          "rollback",
          "doctor",
          "report",
          "history",
          "inventory",
          "repair-sink-log");

  public static void main(String[] args) {
    // First thing for a command that starts Spark: until the context starts its threads, the
    // JVM's start and the CLI's classes keep one core busy and leave the other idle.
    if (args.length > 0 && SPARK_COMMANDS.contains(args[0])) {
      StartupOverlap.begin();
    }
    int code = new StateShiftCli(System.out, System.err).run(args);
    System.exit(code);
  }

  /** What a command printed: its exit code, its text, and the same as JSON for --json. */
  record Outcome(int code, String text, ObjectNode json) {}

  public int run(String[] argv) {
    // Known before parsing, so that even a malformed command line answers in JSON.
    boolean json = java.util.Arrays.asList(argv).contains("--json");
    CommandLine.Request request;
    try {
      request = CommandLine.parse(argv);
    } catch (CommandLine.UsageError e) {
      err.println("error: " + e.getMessage());
      err.println(e.hint());
      if (argv.length == 0) {
        err.println();
        err.print(CommandLine.globalUsage());
      }
      if (json) {
        out.println(CliJson.text(CliJson.error(e.command(), BAD_INPUT, "USAGE", e.getMessage())));
      }
      return BAD_INPUT;
    }
    if (request instanceof CommandLine.GlobalHelp) {
      out.print(CommandLine.globalUsage());
      return OK;
    }
    if (request instanceof CommandLine.CommandHelp help) {
      out.print(help.command().usage());
      return OK;
    }
    if (request instanceof CommandLine.Version version) {
      BuildInfo info = BuildInfo.read();
      if (version.json()) {
        ObjectNode root = CliJson.envelope("version", OK);
        root.put("version", info.version());
        root.put("sparkLine", info.sparkLine());
        root.put("sparkVersion", info.sparkVersion());
        root.put("scalaVersion", info.scalaVersion());
        root.put("sparkOnClassPath", info.sparkOnClassPath());
        out.println(CliJson.text(root));
      } else {
        out.print(info.text());
      }
      return OK;
    }
    Invocation args = (Invocation) request;
    Outcome outcome;
    try {
      outcome =
          switch (args.name()) {
            case "repartition" -> withSpark(args, spark -> repartition(spark, args));
            case "prepare" -> withSpark(args, spark -> prepare(spark, args));
            case "migrate" -> withSpark(args, spark -> migrate(spark, args));
            case "rollback" -> withSpark(args, spark -> rollback(spark, args));
            case "verify" -> withSpark(args, spark -> verify(spark, args));
            case "repair-sink-log" -> withSpark(args, spark -> repairSinkLog(spark, args));
            case "inspect" -> withSpark(args, spark -> inspect(spark, args));
            case "state" -> withSpark(args, spark -> StateCommands.state(spark, args));
            case "export" -> withSpark(args, spark -> StateCommands.export(spark, args));
            case "edit" -> withSpark(args, spark -> StateCommands.edit(spark, args, err));
            case "evolve" -> withSpark(args, spark -> StateCommands.evolve(spark, args, err));
            case "history" -> withSpark(args, spark -> history(spark, args));
            case "doctor" -> withSpark(args, spark -> doctor(spark, args));
            case "report" -> withSpark(args, spark -> report(spark, args));
            case "inventory" -> inventory(args);
            case "demo" -> demo(args);
            case "classpath" -> classpath(args);
            default -> throw new IllegalStateException("no handler for " + args.name());
          };
    } catch (IllegalArgumentException e) {
      return refused(args, json, BAD_INPUT, Reason.INVALID_ARGUMENT.name(), e.getMessage(), null);
    } catch (StateShiftException e) {
      int code = e.reason().isBadInput() ? BAD_INPUT : FAILURE;
      return refused(args, json, code, e.reason().name(), e.getMessage(), null);
    } catch (Exception e) { // Spark's checked exceptions (SparkException) arrive here too
      return refused(args, json, FAILURE, Reason.FAILED.name(), String.valueOf(e), e);
    }
    if (args.flag("json")) {
      out.println(CliJson.text(outcome.json()));
    } else {
      out.print(outcome.text());
    }
    return outcome.code();
  }

  private int refused(
      Invocation args, boolean json, int code, String reason, String message, Exception failure) {
    if (failure != null) {
      err.println("failed: " + message);
      if (args.flag("verbose")) {
        failure.printStackTrace(err);
      } else {
        err.println("(--verbose prints the stack trace)");
      }
    } else {
      err.println("error: " + message);
    }
    if (json) {
      out.println(CliJson.text(CliJson.error(args.name(), code, reason, message)));
    }
    return code;
  }

  private Outcome repartition(SparkSession spark, Invocation args) {
    int partitions = args.intValue("partitions", -1);
    var action =
        StateShift.get(spark)
            .repartitionState(args.value("checkpoint"))
            .toPartitions(partitions)
            .onProgress(message -> err.println("  " + message))
            .backupTo(args.value("backup-to"))
            .fileSink(args.value("file-sink"));
    if (args.flag("assume-stopped")) {
      action.assumeStopped();
    }
    boolean dryRun = args.flag("dry-run");
    ObjectNode json = CliJson.envelope(args.name(), OK);
    json.put("dryRun", dryRun);
    try {
      if (dryRun) {
        RepartitionPlan plan = action.plan();
        json.put("changed", false);
        putPlan(json.putObject("plan"), plan);
        String note = fileSinkNote(spark, args, plan, json);
        return new Outcome(
            OK, plan + estimateLine(plan) + note + "dry run: nothing was written.\n", json);
      }
      RepartitionResult result = action.execute();
      json.put("changed", result.fromPartitions() != result.toPartitions());
      putPlan(json.putObject("plan"), result.plan());
      putResult(json.putObject("result"), result);
      return new Outcome(OK, result + fileSinkNote(spark, args, result.plan(), json), json);
    } catch (StateShiftException e) {
      if (e.reason() != Reason.SAME_PARTITION_COUNT) {
        throw e;
      }
      // Already there: success, so a script can repartition unconditionally. Nothing was written.
      json.put("changed", false);
      json.put("nothingToDo", true);
      json.put("toPartitions", partitions);
      json.put("message", e.getMessage());
      return new Outcome(OK, e.getMessage() + "\n", json);
    }
  }

  private Outcome migrate(SparkSession spark, Invocation args) {
    if (!args.has("provider") && !args.has("format-version")) {
      throw new IllegalArgumentException(
          "migrate needs --provider <rocksdb|hdfs>, --format-version <1|2>, or both");
    }
    var action =
        StateShift.get(spark)
            .migrateState(args.value("checkpoint"))
            .onProgress(message -> err.println("  " + message))
            .backupTo(args.value("backup-to"))
            .fileSink(args.value("file-sink"));
    if (args.has("provider")) {
      action.toProvider(args.value("provider"));
    }
    if (args.has("format-version")) {
      action.toFormatVersion(args.intValue("format-version", -1));
    }
    if (args.has("partitions")) {
      action.toPartitions(args.intValue("partitions", -1));
    }
    if (args.flag("assume-stopped")) {
      action.assumeStopped();
    }
    boolean dryRun = args.flag("dry-run");
    ObjectNode json = CliJson.envelope(args.name(), OK);
    json.put("dryRun", dryRun);
    StringBuilder text = new StringBuilder();
    RepartitionPlan plan;
    if (dryRun) {
      plan = action.plan();
      json.put("changed", false);
      putPlan(json.putObject("plan"), plan);
      text.append(plan).append(estimateLine(plan)).append("dry run: nothing was written.\n");
    } else {
      RepartitionResult result = action.execute();
      plan = result.plan();
      json.put("changed", true);
      putPlan(json.putObject("plan"), plan);
      putResult(json.putObject("result"), result);
      text.append(result);
    }
    text.append(fileSinkNote(spark, args, plan, json));
    List<String> notes = MigrateState.sessionNotes(plan);
    if (notes.isEmpty() && args.has("provider")) {
      notes = MigrateState.sessionNotes(args.value("provider"));
    }
    ArrayNode notesJson = json.putArray("sessionNotes");
    notes.forEach(notesJson::add);
    text.append("In the query's session:\n");
    notes.forEach(n -> text.append("  ").append(n).append('\n'));
    return new Outcome(OK, text.toString(), json);
  }

  private Outcome prepare(SparkSession spark, Invocation args) {
    var action =
        StateShift.get(spark)
            .prepareState(args.value("checkpoint"))
            .onProgress(message -> err.println("  " + message));
    io.stateshift.PrepareResult result;
    if (args.flag("cancel")) {
      result = action.cancel();
    } else {
      if (!args.has("partitions")) {
        throw new IllegalArgumentException(
            "prepare needs --partitions <n> (or --cancel to remove the prepared layout)");
      }
      result = action.toPartitions(args.intValue("partitions", -1)).execute();
    }
    ObjectNode json = CliJson.envelope(args.name(), OK);
    json.put("checkpoint", result.checkpoint());
    json.put("removed", result.removed());
    json.put("totalMillis", result.totalMillis());
    if (result.prepared().isPresent()) {
      io.stateshift.PrepareResult.Prepared p = result.prepared().get();
      ObjectNode prepared = json.putObject("prepared");
      prepared.put("id", p.id());
      prepared.put("queryId", p.queryId());
      prepared.put("preparedBatch", p.preparedBatch());
      prepared.put("fromPartitions", p.fromPartitions());
      prepared.put("toPartitions", p.toPartitions());
      prepared.put("rows", p.rows());
      prepared.put("bytes", p.bytes());
    } else {
      json.putNull("prepared");
    }
    return new Outcome(OK, result.toString(), json);
  }

  /**
   * What a change means for a file sink the command does not know: the checkpoint does not say
   * where its query writes, and Spark's file sink needs an entry in its log for the change's batch.
   * Empty (and {@code fileSinkNote} null in the JSON) when --file-sink is given or a sink is on
   * record, which the change gives that entry itself.
   */
  private static String fileSinkNote(
      SparkSession spark, Invocation args, RepartitionPlan plan, ObjectNode json) {
    boolean known =
        args.has("file-sink")
            || io.stateshift.protocol.FileSinkRecord.read(
                    io.stateshift.checkpoint.CheckpointFiles.at(
                        plan.checkpoint(),
                        io.stateshift.checkpoint.SessionSettings.hadoopConf(spark)))
                .isPresent();
    if (known) {
      json.putNull("fileSinkNote");
      return "";
    }
    String note =
        "File sink: none given (--file-sink) or on record. If this query writes Spark's file sink"
            + " (parquet, json, csv, orc or text to a path), that sink's log"
            + " (<output>/_spark_metadata) needs an entry for batch "
            + plan.repartitionBatch()
            + (args.flag("dry-run")
                ? ": add --file-sink <output> to this command, or afterwards run"
                : ", or the restarted query fails with BATCH_METADATA_NOT_FOUND: run")
            + " `stateshift repair-sink-log --checkpoint "
            + plan.checkpoint()
            + " --file-sink <output>`.";
    json.put("fileSinkNote", note);
    return note + "\n";
  }

  private static void putResult(ObjectNode r, RepartitionResult result) {
    r.put("batchId", result.batchId());
    r.put("totalMillis", result.totalMillis());
    r.put("rowsMoved", result.rowsMoved());
    r.put("bytesMoved", result.bytesMoved());
    ObjectNode phases = r.putObject("phaseMillis");
    result.phaseMillis().forEach(phases::put);
    if (result.storeRequests() >= 0) {
      r.put("storeRequests", result.storeRequests());
    }
    ObjectNode path = r.putObject("path");
    path.put("name", result.path().name());
    CliJson.count(path, "preparedBatch", result.path().preparedBatch());
    CliJson.count(path, "lastCommittedBatch", result.path().lastCommittedBatch());
    path.put("rowsReplayed", result.path().rowsReplayed());
    path.put("reason", result.path().reason());
    ArrayNode stores = r.putArray("stores");
    for (RepartitionResult.StoreMove m : result.stores()) {
      ObjectNode s = stores.addObject();
      s.put("operatorId", m.operatorId());
      s.put("operatorName", m.operatorName());
      s.put("storeName", m.storeName());
      s.put("rowsRead", m.rowsRead());
      s.put("rowsWritten", m.rowsWritten());
      s.put("bytesWritten", m.bytesWritten());
    }
  }

  private static void putPlan(ObjectNode node, RepartitionPlan plan) {
    node.put("checkpoint", plan.checkpoint());
    node.put("queryId", plan.queryId());
    node.put("stateStoreProvider", plan.stateStoreProvider());
    node.put("targetStateStoreProvider", plan.targetStateStoreProvider());
    if (plan.checkpointFormatVersion() > 0) {
      node.put("checkpointFormatVersion", plan.checkpointFormatVersion());
      node.put("targetCheckpointFormatVersion", plan.targetCheckpointFormatVersion());
    }
    node.put("fromPartitions", plan.fromPartitions());
    node.put("toPartitions", plan.toPartitions());
    CliJson.count(node, "lastCommittedBatch", plan.lastCommittedBatch());
    node.put("repartitionBatch", plan.repartitionBatch());
    ArrayNode ops = node.putArray("operators");
    for (RepartitionPlan.OperatorInfo op : plan.operators()) {
      ObjectNode o = ops.addObject();
      o.put("id", op.id());
      o.put("name", op.name());
      ArrayNode stores = o.putArray("stores");
      op.stores().forEach(stores::add);
    }
    node.put("interruptedAttempt", plan.interruptedAttempt().orElse(null));
    if (plan.stateFiles() > 0) {
      node.put("stateBytes", plan.stateBytes());
      node.put("stateFiles", plan.stateFiles());
    }
    plan.estimate().ifPresent(e -> putEstimate(node.putObject("estimate"), e));
  }

  private static String estimateLine(RepartitionPlan plan) {
    return plan.estimate().map(e -> e + "\n").orElse("");
  }

  private static void putEstimate(ObjectNode node, CostEstimate estimate) {
    node.put("seconds", estimate.seconds());
    node.put("taskSlots", estimate.slots().count());
    node.put("taskSlotsSource", estimate.slots().source());
    node.put("fittedOn", estimate.fittedOn());
    ObjectNode terms = node.putObject("termSeconds");
    estimate.termSeconds().forEach((term, seconds) -> terms.put(term.key, seconds));
    CostModel.Job job = estimate.job();
    ObjectNode work = node.putObject("work");
    work.put("oldStores", job.oldStores());
    work.put("newStores", job.newStores());
    work.put("stateBytes", job.stateBytes());
    work.put("filesRead", job.stateFiles());
    work.put("filesWritten", job.filesWritten());
    work.put("replayBytes", job.replayBytes());
    work.put("objectStore", job.objectStore());
    work.put("storage", job.storage().name().toLowerCase(Locale.ROOT));
  }

  private Outcome rollback(SparkSession spark, Invocation args) {
    RepartitionPlan undone =
        StateShift.get(spark)
            .rollbackRepartition(args.value("checkpoint"), args.flag("assume-stopped"));
    ObjectNode json = CliJson.envelope(args.name(), OK);
    json.put("checkpoint", undone.checkpoint());
    json.put("rolledBackBatch", undone.repartitionBatch());
    json.put("fromPartitions", undone.fromPartitions());
    json.put("toPartitions", undone.toPartitions());
    return new Outcome(
        OK,
        String.format(
            "Rolled back the repartition of batch %d: %s is back to %d partitions.%n",
            undone.repartitionBatch(), undone.checkpoint(), undone.toPartitions()),
        json);
  }

  private Outcome verify(SparkSession spark, Invocation args) {
    VerificationReport report =
        StateShift.get(spark)
            .verify(
                args.value("checkpoint"),
                args.has("file-sink") ? List.of(args.value("file-sink")) : List.of());
    int code = report.ok() ? OK : FAILURE;
    ObjectNode json = CliJson.envelope(args.name(), code);
    json.put("checkpoint", report.checkpoint());
    json.put("partitions", report.partitions());
    json.put("rowsChecked", report.rowsChecked());
    ArrayNode problems = json.putArray("problems");
    report.problems().forEach(problems::add);
    if (!report.ok()) {
      CliJson.withError(json, "PROBLEMS_FOUND", report.problems().size() + " problem(s)");
    }
    return new Outcome(code, report.toString(), json);
  }

  private Outcome repairSinkLog(SparkSession spark, Invocation args) {
    io.stateshift.SinkLogRepair repair =
        StateShift.get(spark).repairSinkLog(args.value("checkpoint"), args.value("file-sink"));
    int code = repair.unfillable().isEmpty() ? OK : FAILURE;
    ObjectNode json = CliJson.envelope(args.name(), code);
    json.put("sinkLog", repair.sinkLog());
    ArrayNode filled = json.putArray("filled");
    repair.filled().forEach(filled::add);
    ArrayNode unfillable = json.putArray("unfillable");
    repair.unfillable().forEach(unfillable::add);
    if (code != OK) {
      CliJson.withError(json, "UNFILLABLE_GAPS", repair.unfillable().size() + " gap(s) left");
    }
    StringBuilder text =
        new StringBuilder(
            repair.filled().isEmpty()
                ? "The file sink log " + repair.sinkLog() + " lacks no repartition batch.\n"
                : "Wrote empty entries for batches "
                    + repair.filled()
                    + " into "
                    + repair.sinkLog()
                    + ".\n");
    repair.unfillable().forEach(u -> text.append("not filled: ").append(u).append('\n'));
    return new Outcome(code, text.toString(), json);
  }

  private Outcome inspect(SparkSession spark, Invocation args) {
    CheckpointReport report = StateShift.get(spark).inspect(args.value("checkpoint"));
    return new Outcome(
        OK, report.toString(), CliJson.merge(CliJson.envelope(args.name(), OK), report.toJson()));
  }

  private Outcome history(SparkSession spark, Invocation args) {
    List<HistoryEntry> entries = StateShift.get(spark).history(args.value("checkpoint"));
    // qualified, as every other command prints it
    String checkpoint =
        io.stateshift.checkpoint.CheckpointFiles.at(
                args.value("checkpoint"),
                io.stateshift.checkpoint.SessionSettings.hadoopConf(spark))
            .root()
            .toString();
    ObjectNode json = CliJson.envelope(args.name(), OK);
    json.put("checkpoint", checkpoint);
    ArrayNode list = json.putArray("entries");
    StringBuilder text = new StringBuilder();
    text.append(
        entries.isEmpty()
            ? "No repartition or rollback recorded for " + checkpoint + ".\n"
            : entries.size() + " recorded for " + checkpoint + ", oldest first:\n");
    for (HistoryEntry h : entries) {
      text.append(h).append('\n');
      ObjectNode e = list.addObject();
      e.put("kind", h.kind().name().toLowerCase(java.util.Locale.ROOT));
      e.put("outcome", h.outcome().name().toLowerCase(java.util.Locale.ROOT));
      e.put("attemptId", h.attemptId());
      CliJson.count(e, "batch", h.batch());
      e.put("startedAt", h.startedAt().map(Object::toString).orElse(null));
      CliJson.count(e, "durationMs", h.durationMs());
      e.put("fromPartitions", h.fromPartitions());
      e.put("toPartitions", h.toPartitions());
      CliJson.count(e, "rowsMoved", h.rowsMoved());
      CliJson.count(e, "bytesMoved", h.bytesMoved());
      CliJson.text(e, "path", h.path());
      CliJson.text(e, "application", h.application());
      CliJson.text(e, "user", h.user());
      e.put("rolledBack", h.rolledBack());
      e.put("message", h.message().orElse(null));
      e.put("change", h.change().orElse(null));
    }
    return new Outcome(OK, text.toString(), json);
  }

  private io.stateshift.doctor.DoctorReport diagnose(SparkSession spark, Invocation args) {
    io.stateshift.doctor.Doctor doctor =
        StateShift.get(spark)
            .doctor(args.value("checkpoint"))
            .history(args.value("history"))
            .fileSink(args.value("file-sink"));
    int[] cores = new int[1];
    String source = assumedCores(args, cores);
    doctor.cores(cores[0], source);
    return doctor.run();
  }

  /**
   * The cores the query runs on, for the doctor: --cores; else from the settings given, {@code
   * spark.cores.max} or {@code spark.executor.instances} x {@code spark.executor.cores}; else
   * {@code --master local[N]}; else this machine's (the command's own Spark is not the query's).
   * Returns where the count came from and puts it in {@code cores[0]}.
   */
  static String assumedCores(Invocation args, int[] cores) {
    if (args.has("cores")) {
      cores[0] = args.intValue("cores", 1);
      return "--cores";
    }
    java.util.Map<String, String> conf = new java.util.HashMap<>();
    for (String setting : args.all("conf")) {
      int eq = setting.indexOf('=');
      conf.put(setting.substring(0, eq).trim(), setting.substring(eq + 1).trim());
    }
    try {
      if (conf.containsKey("spark.cores.max")) {
        cores[0] = Math.max(1, Integer.parseInt(conf.get("spark.cores.max")));
        return "spark.cores.max in --conf";
      }
      if (conf.containsKey("spark.executor.instances")
          && conf.containsKey("spark.executor.cores")) {
        int executors = Integer.parseInt(conf.get("spark.executor.instances"));
        int each = Integer.parseInt(conf.get("spark.executor.cores"));
        cores[0] = Math.max(1, executors * each);
        return "spark.executor.instances "
            + executors
            + " x spark.executor.cores "
            + each
            + " in --conf";
      }
    } catch (NumberFormatException e) {
      throw new IllegalArgumentException("--conf: " + e.getMessage(), e);
    }
    java.util.regex.Matcher local =
        java.util.regex.Pattern.compile("local\\[(\\d+)(,\\d+)?]")
            .matcher(args.has("master") ? args.value("master") : "");
    if (local.matches()) {
      cores[0] = Math.max(1, Integer.parseInt(local.group(1)));
      return "--master " + args.value("master");
    }
    cores[0] = Runtime.getRuntime().availableProcessors();
    return "this machine's cores (give --cores, or --conf spark.cores.max, for the query's)";
  }

  private Outcome doctor(SparkSession spark, Invocation args) {
    io.stateshift.doctor.DoctorReport report = diagnose(spark, args);
    int code = report.exitCode() == 0 ? OK : FAILURE;
    ObjectNode json = CliJson.merge(CliJson.envelope(args.name(), code), report.toJson());
    if (code != OK) {
      CliJson.withError(json, "ERROR_FINDINGS", "a finding is an ERROR");
    }
    return new Outcome(code, report.toString(), json);
  }

  private Outcome report(SparkSession spark, Invocation args) {
    io.stateshift.doctor.DoctorReport report = diagnose(spark, args);
    io.stateshift.monitor.ProgressHistory history =
        args.has("history")
            ? io.stateshift.monitor.ProgressHistory.read(
                    args.value("history"),
                    io.stateshift.checkpoint.SessionSettings.hadoopConf(spark))
                .ofQuery(report.queryId())
            : null;
    java.nio.file.Path file = java.nio.file.Path.of(args.value("out")).toAbsolutePath();
    io.stateshift.report.HtmlReport.write(
        report, history, StateShift.get(spark).history(args.value("checkpoint")), file);
    int batches = history == null ? 0 : history.batches().size();
    ObjectNode json = CliJson.envelope(args.name(), OK);
    json.put("out", file.toString());
    json.put("historyBatches", batches);
    json.put("findings", report.findings().size());
    json.put("worst", report.worst().name());
    return new Outcome(
        OK,
        String.format(
            "Wrote %s: %d batches of history, %d finding(s), worst " + "%s.%n",
            file, batches, report.findings().size(), report.worst()),
        json);
  }

  /**
   * The fleet view. Local locations and histories are checked before Spark starts (a wrong path, or
   * no checkpoint below it, is bad input); others once Spark gives their file system its settings.
   */
  private Outcome inventory(Invocation args) {
    List<String> local = new java.util.ArrayList<>(args.operands());
    local.addAll(args.all("history"));
    if (local.stream().allMatch(StateShiftCli::isLocal)) {
      io.stateshift.inventory.CheckpointSearch.findLocal(args.operands());
      for (String history : args.all("history")) {
        if (!java.nio.file.Files.exists(io.stateshift.inventory.CheckpointSearch.local(history))) {
          throw new IllegalArgumentException(
              "--history "
                  + history
                  + " does not exist. Pass the folder set as "
                  + "spark.stateshift.monitor.history.");
        }
      }
    }
    return withSpark(
        args,
        spark -> {
          io.stateshift.inventory.Inventory inventory =
              StateShift.get(spark).inventory(args.operands());
          args.all("history").forEach(inventory::history);
          if (args.has("cores")) {
            inventory.cores(args.intValue("cores", -1));
          }
          io.stateshift.inventory.FleetReport fleet = inventory.run();
          ObjectNode json = CliJson.merge(CliJson.envelope(args.name(), OK), fleet.toJson());
          String text = fleet.toString();
          if (args.has("out")) {
            java.nio.file.Path file = java.nio.file.Path.of(args.value("out")).toAbsolutePath();
            io.stateshift.report.FleetPage.write(fleet, file);
            json.put("out", file.toString());
            text += "Wrote " + file + ".\n";
          } else {
            json.putNull("out");
          }
          return new Outcome(OK, text, json);
        });
  }

  /** A path on the local file system: no scheme, or {@code file:}. */
  private static boolean isLocal(String location) {
    try {
      String scheme = new java.net.URI(location).getScheme();
      return scheme == null || scheme.equals("file");
    } catch (java.net.URISyntaxException e) {
      return !location.contains("://");
    }
  }

  private Outcome demo(Invocation args) {
    // The folder is chosen (and a non-empty --dir refused) before Spark starts.
    java.nio.file.Path folder = DeviceCountsDemo.workingFolder(args.value("dir"));
    DeviceCountsDemo.Size size =
        DeviceCountsDemo.Size.of(
            args.has("events") ? args.intValue("events", 0) : null, args.flag("quick"));
    // With --json the running commentary goes to stderr and stdout holds the document alone.
    PrintStream commentary = args.flag("json") ? err : out;
    DeviceCountsDemo.Result result =
        withSpark(args, spark -> DeviceCountsDemo.run(spark, size, folder, commentary));
    int code = result.passed() ? OK : FAILURE;
    ObjectNode json = CliJson.envelope(args.name(), code);
    json.put("folder", result.folder().toString());
    json.put("checkpoint", result.checkpoint().toString());
    json.put("passed", result.passed());
    CliJson.count(json, "repartitionMs", result.repartitionMs());
    json.put("history", result.history().toString());
    json.put("wallMs", result.wallMs());
    json.put("longestSilenceMs", result.longestSilenceMs());
    if (!result.passed()) {
      CliJson.withError(
          json,
          "VERIFICATION_FAILED",
          "the repartitioned query's output differs " + "from the batch computation");
    }
    return new Outcome(code, "", json);
  }

  private Outcome classpath(Invocation args) {
    String own;
    try {
      own =
          java.nio.file.Path.of(
                  StateShiftCli.class.getProtectionDomain().getCodeSource().getLocation().toURI())
              .toString();
    } catch (java.net.URISyntaxException e) {
      throw new IllegalStateException(e);
    }
    String text = args.flag("full") ? System.getProperty("java.class.path") : own;
    ObjectNode json = CliJson.envelope(args.name(), OK);
    json.put("jar", own);
    json.put("full", args.flag("full"));
    ArrayNode entries = json.putArray("classpath");
    for (String entry : text.split(java.io.File.pathSeparator)) {
      if (!entry.isEmpty()) {
        entries.add(entry);
      }
    }
    return new Outcome(OK, text + "\n", json);
  }

  private <T> T withSpark(Invocation args, Function<SparkSession, T> body) {
    SparkConf conf =
        new SparkConf()
            .setAppName("stateshift " + args.name())
            .set("spark.ui.enabled", "false")
            .set("spark.sql.session.timeZone", "UTC");
    if (args.name().equals("demo")) {
      conf.set(
              "spark.sql.extensions",
              "io.stateshift.StateShiftExtensions,io.delta.sql.DeltaSparkSessionExtension")
          .set("spark.sql.catalog.spark_catalog", "org.apache.spark.sql.delta.catalog.DeltaCatalog")
          // the demo's tables are short-lived: skip Delta's log checkpoints (slow to start up)
          .set("spark.databricks.delta.properties.defaults.checkpointInterval", "1000")
          // nor file statistics for data skipping, which the demo's small reads never use
          .set("spark.databricks.delta.stats.collect", "false")
          .set("spark.sql.shuffle.partitions", "4");
    }
    if (System.getProperty("spark.master") == null) {
      conf.setMaster(args.has("master") ? args.value("master") : "local[2]");
    }
    for (String setting : args.all("conf")) {
      int eq = setting.indexOf('=');
      if (eq <= 0) {
        throw new IllegalArgumentException("--conf takes key=value, got '" + setting + "'");
      }
      conf.set(setting.substring(0, eq), setting.substring(eq + 1));
    }
    if (args.has("packages")) {
      throw new IllegalArgumentException(
          "--packages is resolved by the ./stateshift launcher; "
              + "run through it, or pass the jars themselves with --jars");
    }
    List<java.nio.file.Path> jars = extraJars(args);
    boolean ownSession =
        SparkSession.getActiveSession().isEmpty() && SparkSession.getDefaultSession().isEmpty();
    shipJars(conf, jars);
    ClassLoader previous = Thread.currentThread().getContextClassLoader();
    if (!jars.isEmpty()) {
      // The driver loads the jars' classes (a Hadoop FileSystem named in fs.<scheme>.impl) the
      // way spark-submit's client mode does: through the context class loader, which Hadoop's
      // Configuration and Spark's local executors take as theirs.
      Thread.currentThread()
          .setContextClassLoader(
              new java.net.URLClassLoader(
                  jars.stream().map(StateShiftCli::url).toArray(java.net.URL[]::new), previous));
    }
    if (ownSession) {
      StartupOverlap.begin();
    }
    // The line's own session class (SparkLine.getOrCreateSession): SparkSession.builder() first
    // picks an implementation (classic or Connect) with Scala's runtime reflection, 0.2-0.45 s of
    // CPU in a fresh JVM, which no command needs otherwise.
    SparkSession spark;
    try {
      spark = SparkLines.get().getOrCreateSession(conf);
    } catch (RuntimeException e) {
      Thread.currentThread().setContextClassLoader(previous);
      throw e;
    }
    if (ownSession) {
      spark.sparkContext().setLogLevel(StateShiftConf.LOG_LEVEL.from(spark));
      SparkLines.get().claimCommandFolders(spark);
    }
    try {
      return body.apply(spark);
    } finally {
      if (ownSession) {
        spark.stop(); // a session an embedding program started stays its own
      }
      Thread.currentThread().setContextClassLoader(previous);
    }
  }

  /** The files of --jars (comma-separated, repeatable); a missing one is bad input. */
  private static List<java.nio.file.Path> extraJars(Invocation args) {
    List<java.nio.file.Path> jars = new java.util.ArrayList<>();
    for (String list : args.all("jars")) {
      for (String name : list.split(",")) {
        if (name.isBlank()) {
          continue;
        }
        java.nio.file.Path jar = java.nio.file.Path.of(name.trim()).toAbsolutePath();
        if (!java.nio.file.Files.isRegularFile(jar)) {
          throw new IllegalArgumentException(
              "--jars: no such file "
                  + jar
                  + "; name the jar "
                  + "files themselves, separated by commas");
        }
        jars.add(jar);
      }
    }
    return jars;
  }

  /**
   * Adds the extra jars to spark.jars, so that executors load them too, and with a master that is
   * not local stateshift's own jar: its tasks' classes must reach the executors.
   */
  private void shipJars(SparkConf conf, List<java.nio.file.Path> jars) {
    java.util.LinkedHashSet<String> ship = new java.util.LinkedHashSet<>();
    for (String jar : conf.get("spark.jars", "").split(",")) {
      if (!jar.isBlank()) {
        ship.add(jar.trim());
      }
    }
    jars.forEach(jar -> ship.add(jar.toUri().toString()));
    String master = conf.get("spark.master", System.getProperty("spark.master", "local"));
    if (!master.startsWith("local")) {
      java.nio.file.Path own = ownJar();
      if (own != null) {
        ship.add(own.toUri().toString());
      } else {
        err.println(
            "warning: stateshift's classes are not in a jar here, so they cannot be "
                + "shipped to the executors of "
                + master
                + "; run through ./stateshift (which "
                + "builds spark-4.2/target/stateshift.jar) or pass --jars with it.");
      }
    }
    if (!ship.isEmpty()) {
      conf.set("spark.jars", String.join(",", ship));
    }
  }

  /** The jar this class was loaded from, or null (a classes folder, as in a development run). */
  static java.nio.file.Path ownJar() {
    try {
      java.security.CodeSource source = StateShiftCli.class.getProtectionDomain().getCodeSource();
      if (source == null) {
        return null;
      }
      java.nio.file.Path path = java.nio.file.Path.of(source.getLocation().toURI());
      return java.nio.file.Files.isRegularFile(path) && path.toString().endsWith(".jar")
          ? path
          : null;
    } catch (Exception e) {
      return null;
    }
  }

  private static java.net.URL url(java.nio.file.Path jar) {
    try {
      return jar.toUri().toURL();
    } catch (java.net.MalformedURLException e) {
      throw new IllegalArgumentException("--jars: " + jar + " is not a valid file name", e);
    }
  }
}
