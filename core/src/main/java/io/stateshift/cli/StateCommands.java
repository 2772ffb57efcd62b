package io.stateshift.cli;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.stateshift.EditPreview;
import io.stateshift.EditState;
import io.stateshift.EvolveState;
import io.stateshift.ReadState;
import io.stateshift.RepartitionPlan;
import io.stateshift.RepartitionResult;
import io.stateshift.StateShift;
import io.stateshift.checkpoint.SessionSettings;
import io.stateshift.cli.CommandLine.Invocation;
import java.io.IOException;
import java.io.PrintStream;
import java.io.UncheckedIOException;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import org.apache.hadoop.fs.Path;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;

/** The commands on state as data: {@code state}, {@code export} and {@code edit}. */
final class StateCommands {
  private StateCommands() {}

  private static ReadState read(SparkSession spark, Invocation args) {
    ReadState read = StateShift.get(spark).readState(args.value("checkpoint"));
    if (args.has("operator")) {
      read.operator(args.intValue("operator", -1));
    }
    if (args.has("store")) {
      read.store(args.value("store"));
    }
    if (args.has("column-family")) {
      read.columnFamily(args.value("column-family"));
    }
    if (args.has("where")) {
      read.where(args.value("where"));
    }
    return read;
  }

  static StateShiftCli.Outcome state(SparkSession spark, Invocation args) {
    int limit = args.intValue("limit", 20);
    Dataset<Row> rows = read(spark, args).load();
    List<Row> taken = rows.limit(limit + 1).collectAsList();
    boolean more = taken.size() > limit;
    if (more) {
      taken = taken.subList(0, limit);
    }
    ObjectNode json = CliJson.envelope(args.name(), StateShiftCli.OK);
    json.put("checkpoint", args.value("checkpoint"));
    json.put("shown", taken.size());
    json.put("more", more);
    ArrayNode entries = json.putArray("entries");
    for (Row row : taken) {
      try {
        entries.add(CliJson.MAPPER.readTree(row.json()));
      } catch (JsonProcessingException e) {
        throw new IllegalStateException(e);
      }
    }
    StringBuilder text = new StringBuilder(table(rows.schema(), taken));
    text.append(
        more
            ? String.format("(first %d entries; --limit <n> shows more)%n", limit)
            : String.format("(%d entries)%n", taken.size()));
    return new StateShiftCli.Outcome(StateShiftCli.OK, text.toString(), json);
  }

  /** The rows as a text table, one column per key and value field. */
  static String table(StructType schema, List<Row> rows) {
    List<String> header = new ArrayList<>();
    List<List<String>> cells = new ArrayList<>();
    for (StructField field : schema.fields()) {
      if (field.dataType() instanceof StructType struct) {
        for (StructField inner : struct.fields()) {
          header.add(field.name() + "." + inner.name());
        }
      } else {
        header.add(field.name());
      }
    }
    for (Row row : rows) {
      List<String> line = new ArrayList<>();
      for (int i = 0; i < schema.fields().length; i++) {
        Object value = row.get(i);
        if (schema.fields()[i].dataType() instanceof StructType struct) {
          Row inner = (Row) value;
          for (int j = 0; j < struct.fields().length; j++) {
            line.add(inner == null || inner.isNullAt(j) ? "null" : String.valueOf(inner.get(j)));
          }
        } else {
          line.add(String.valueOf(value));
        }
      }
      cells.add(line);
    }
    int[] width = new int[header.size()];
    for (int c = 0; c < header.size(); c++) {
      width[c] = header.get(c).length();
      for (List<String> line : cells) {
        width[c] = Math.max(width[c], Math.min(60, line.get(c).length()));
      }
    }
    StringBuilder out = new StringBuilder();
    appendLine(out, header, width);
    for (List<String> line : cells) {
      appendLine(out, line, width);
    }
    return out.toString();
  }

  private static void appendLine(StringBuilder out, List<String> cells, int[] width) {
    for (int c = 0; c < cells.size(); c++) {
      String cell = cells.get(c);
      if (cell.length() > 60) {
        cell = cell.substring(0, 57) + "...";
      }
      out.append(c == 0 ? "" : "  ").append(String.format("%-" + width[c] + "s", cell));
    }
    out.append(System.lineSeparator());
  }

  static StateShiftCli.Outcome export(SparkSession spark, Invocation args) {
    String format = args.value("format") == null ? "parquet" : args.value("format");
    format = format.toLowerCase(Locale.ROOT);
    String out = args.value("out");
    Path target = new Path(out);
    try {
      if (target.getFileSystem(SessionSettings.hadoopConf(spark)).exists(target)) {
        throw new IllegalArgumentException(
            "--out " + out + " exists already: export writes a new table; choose another path");
      }
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
    if (format.equals("delta") && !onClassPath("io.delta.sql.DeltaSparkSessionExtension")) {
      throw new IllegalArgumentException(
          "--format delta needs Delta Lake on the class path: add --packages"
              + " io.delta:delta-spark_<scala>:<the release for this Spark>");
    }
    Dataset<Row> rows = read(spark, args).load();
    rows.write().format(format).save(out);
    long written = spark.read().format(format).load(out).count();
    ObjectNode json = CliJson.envelope(args.name(), StateShiftCli.OK);
    json.put("checkpoint", args.value("checkpoint"));
    json.put("out", out);
    json.put("format", format);
    json.put("rows", written);
    return new StateShiftCli.Outcome(
        StateShiftCli.OK,
        String.format("Wrote %,d entries to %s (%s).%n", written, out, format),
        json);
  }

  private static boolean onClassPath(String className) {
    try {
      Class.forName(className, false, Thread.currentThread().getContextClassLoader());
      return true;
    } catch (ClassNotFoundException e) {
      return false;
    }
  }

  static StateShiftCli.Outcome edit(SparkSession spark, Invocation args, PrintStream err) {
    if (!args.has("delete-where") && !args.has("upsert-from") && args.all("set").isEmpty()) {
      throw new IllegalArgumentException(
          "edit needs --delete-where <predicate>, --upsert-from <table or path>, or"
              + " --set \"<value field> = <expression>\"");
    }
    EditState action =
        StateShift.get(spark)
            .editState(args.value("checkpoint"))
            .deleteWhere(args.value("delete-where"))
            .onProgress(message -> err.println("  " + message))
            .backupTo(args.value("backup-to"))
            .fileSink(args.value("file-sink"));
    if (args.has("operator")) {
      action.operator(args.intValue("operator", -1));
    }
    if (args.has("partitions")) {
      action.toPartitions(args.intValue("partitions", -1));
    }
    if (args.has("upsert-from")) {
      action.upsertFrom(args.value("upsert-from"));
    }
    for (String set : args.all("set")) {
      int eq = set.indexOf('=');
      action.set(set.substring(0, eq).strip(), set.substring(eq + 1).strip());
    }
    action.where(args.value("where"));
    if (args.flag("assume-stopped")) {
      action.assumeStopped();
    }
    ObjectNode json = CliJson.envelope(args.name(), StateShiftCli.OK);
    boolean dryRun = args.flag("dry-run");
    json.put("dryRun", dryRun);
    json.put("deleteWhere", args.value("delete-where"));
    json.put("upsertFrom", args.value("upsert-from"));
    if (!args.all("set").isEmpty()) {
      ArrayNode sets = json.putArray("set");
      args.all("set").forEach(sets::add);
      json.put("where", args.value("where"));
    }
    if (dryRun) {
      EditPreview preview = action.preview();
      json.put("changed", false);
      json.put("operatorId", preview.operatorId());
      json.put("matching", preview.rows());
      if (preview.set() != null) {
        json.put("rewriting", preview.set().rows());
      }
      if (preview.upsertRows() >= 0) {
        json.put("upsertRows", preview.upsertRows());
        json.put("upsertReplacing", preview.upsertReplacing());
      }
      ArrayNode matches = json.putArray("matches");
      for (EditPreview.Matches m : preview.matches()) {
        ObjectNode node = matches.addObject();
        node.put("store", m.store());
        node.put("partition", m.partition());
        node.put("rows", m.rows());
      }
      ArrayNode sample = json.putArray("sampleKeys");
      for (String key : preview.sampleKeys()) {
        try {
          sample.add(CliJson.MAPPER.readTree(key));
        } catch (JsonProcessingException e) {
          throw new IllegalStateException(e);
        }
      }
      return new StateShiftCli.Outcome(
          StateShiftCli.OK, preview + "dry run: nothing was written.\n", json);
    }
    RepartitionResult result = action.execute();
    long read = result.stores().stream().mapToLong(RepartitionResult.StoreMove::rowsRead).sum();
    long kept = result.rowsMoved();
    json.put("changed", !result.stores().isEmpty());
    json.put("batchId", result.batchId());
    json.put("totalMillis", result.totalMillis());
    json.put("entriesBefore", read);
    json.put("entriesAfter", kept);
    ArrayNode stores = json.putArray("stores");
    StringBuilder text = new StringBuilder();
    if (result.stores().isEmpty()) {
      text.append(
          result
              .plan()
              .interruptedAttempt()
              .map(a -> "The interrupted edit was finished (" + a + "); nothing more to delete.\n")
              .orElse("Nothing was deleted.\n"));
    } else {
      text.append(
          String.format(
              "Edited %s: %,d entries before, %,d after, in %,d ms (batch %d).%n",
              result.plan().checkpoint(), read, kept, result.totalMillis(), result.batchId()));
    }
    for (RepartitionResult.StoreMove m : result.stores()) {
      ObjectNode node = stores.addObject();
      node.put("operatorId", m.operatorId());
      node.put("storeName", m.storeName());
      node.put("rowsBefore", m.rowsRead());
      node.put("rowsAfter", m.rowsWritten());

      if (m.rowsRead() != m.rowsWritten()) {
        text.append(
            String.format(
                "  operator %d store %s: %,d -> %,d entries%n",
                m.operatorId(), m.storeName(), m.rowsRead(), m.rowsWritten()));
      }
    }
    return new StateShiftCli.Outcome(StateShiftCli.OK, text.toString(), json);
  }

  static StateShiftCli.Outcome evolve(SparkSession spark, Invocation args, PrintStream err) {
    EvolveState action =
        StateShift.get(spark)
            .evolveState(args.value("checkpoint"))
            .toValueSchema(args.value("value-schema"))
            .onProgress(message -> err.println("  " + message))
            .backupTo(args.value("backup-to"))
            .fileSink(args.value("file-sink"));
    if (args.has("operator")) {
      action.operator(args.intValue("operator", -1));
    }
    for (String fill : args.all("fill")) {
      int eq = fill.indexOf('=');
      action.fill(fill.substring(0, eq).trim(), fill.substring(eq + 1).trim());
    }
    if (args.flag("assume-stopped")) {
      action.assumeStopped();
    }
    ObjectNode json = CliJson.envelope(args.name(), StateShiftCli.OK);
    boolean dryRun = args.flag("dry-run");
    json.put("dryRun", dryRun);
    json.put("valueSchema", args.value("value-schema"));
    if (dryRun) {
      RepartitionPlan plan = action.plan();
      json.put("changed", false);
      json.put("lastCommittedBatch", plan.lastCommittedBatch());
      return new StateShiftCli.Outcome(
          StateShiftCli.OK,
          String.format(
              "The state of %s can evolve to value %s at batch %d.%ndry run: nothing was"
                  + " written.%n",
              plan.checkpoint(), args.value("value-schema"), plan.lastCommittedBatch()),
          json);
    }
    RepartitionResult result = action.execute();
    json.put("changed", !result.stores().isEmpty());
    json.put("batchId", result.batchId());
    json.put("totalMillis", result.totalMillis());
    json.put("entries", result.rowsMoved());
    return new StateShiftCli.Outcome(
        StateShiftCli.OK,
        result.stores().isEmpty()
            ? "The interrupted evolution was finished; nothing more to do.\n"
            : String.format(
                "Evolved %s: %,d entries rewritten to value %s in %,d ms (batch %d).%n",
                result.plan().checkpoint(),
                result.rowsMoved(),
                args.value("value-schema"),
                result.totalMillis(),
                result.batchId()),
        json);
  }
}
