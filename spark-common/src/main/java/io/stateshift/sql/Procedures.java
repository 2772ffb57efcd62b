package io.stateshift.sql;

import io.stateshift.CheckpointReport;
import io.stateshift.HistoryEntry;
import io.stateshift.MigrateState;
import io.stateshift.RepartitionPlan;
import io.stateshift.RepartitionResult;
import io.stateshift.StateChange;
import io.stateshift.StateShift;
import io.stateshift.StateShiftException;
import io.stateshift.VerificationReport;
import io.stateshift.doctor.Doctor;
import io.stateshift.doctor.DoctorReport;
import io.stateshift.doctor.Finding;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.function.Function;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.connector.catalog.procedures.ProcedureParameter;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.StructType;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/** The procedures of {@link StateShiftCatalog}; each is a thin layer over {@link StateShift}. */
final class Procedures {
  private static final Logger LOG = LoggerFactory.getLogger(Procedures.class);

  private Procedures() {}

  static final DataType STRING = DataTypes.StringType;
  static final DataType INT = DataTypes.IntegerType;
  static final DataType LONG = DataTypes.LongType;
  static final DataType BOOLEAN = DataTypes.BooleanType;

  static ProcedureParameter required(String name, DataType type, String comment) {
    return ProcedureParameter.in(name, type).comment(comment).build();
  }

  static ProcedureParameter optional(
      String name, DataType type, String defaultSql, String comment) {
    return ProcedureParameter.in(name, type).defaultValue(defaultSql).comment(comment).build();
  }

  private static final ProcedureParameter CHECKPOINT =
      required("checkpoint", STRING, "the checkpointLocation of the stopped query");
  private static final ProcedureParameter BACKUP_TO =
      optional(
          "backup_to",
          STRING,
          "NULL",
          "keep the partition folders a decrease drops under this location");
  private static final ProcedureParameter ASSUME_STOPPED =
      optional(
          "assume_stopped",
          BOOLEAN,
          "false",
          "the query is known to be stopped: do not refuse a checkpoint written in the last "
              + "2 minutes (a lease held by a running query still refuses)");

  /**
   * {@code repartition_state(checkpoint, partitions, dry_run, assume_stopped, backup_to)}: one row
   * per state store; a dry run plans, writes nothing and leaves the row and byte columns null.
   */
  static final class RepartitionState extends StateShiftProcedure {
    RepartitionState() {
      super(
          "repartition_state",
          "Redistributes the state of a stopped streaming query into `partitions` partitions "
              + "(dry_run => true: only plans). One row per state store.",
          storeRowSchema(new StructType(), new StructType()),
          CHECKPOINT,
          required("partitions", INT, "the number of state partitions to end with"),
          optional("dry_run", BOOLEAN, "false", "only report what would be done"),
          ASSUME_STOPPED,
          BACKUP_TO);
    }

    @Override
    List<Object[]> run(SparkSession spark, Arguments args) {
      String checkpoint = args.required(0);
      Integer partitions = args.integer(1);
      if (partitions == null) {
        throw new StateShiftException(
            StateShiftException.Reason.INVALID_PARTITION_COUNT,
            "partitions is null: pass the partition count to end with, for example "
                + "partitions => 16.");
      }
      checkPartitions(partitions);
      var action =
          StateShift.get(spark)
              .repartitionState(checkpoint)
              .toPartitions(partitions)
              .backupTo(args.string(4))
              .onProgress(message -> LOG.info("repartition_state {}: {}", checkpoint, message));
      if (args.flag(3)) {
        action.assumeStopped();
      }
      return storeRows(action, args.flag(2), plan -> new Object[0], plan -> new Object[0]);
    }
  }

  /**
   * {@code migrate_state(checkpoint, provider, partitions, dry_run, assume_stopped, backup_to,
   * format_version)}: one row per state store, as {@code repartition_state}, with the providers on
   * both sides and what to set in the query's session; a dry run plans and writes nothing.
   */
  static final class MigrateStateProcedure extends StateShiftProcedure {
    MigrateStateProcedure() {
      super(
          "migrate_state",
          "Moves the state of a stopped streaming query to another state store provider "
              + "(provider => 'rocksdb' or 'hdfs'), with a new partition count in the same pass if "
              + "`partitions` is given (dry_run => true: only plans). One row per state store.",
          storeRowSchema(
              new StructType()
                  .add("from_provider", STRING, false)
                  .add("to_provider", STRING, false)
                  .add("from_format_version", INT)
                  .add("to_format_version", INT),
              new StructType()
                  .add("session_notes", DataTypes.createArrayType(STRING, false), false)),
          CHECKPOINT,
          optional(
              "provider",
              STRING,
              "NULL",
              "the provider to end with: 'rocksdb' or 'hdfs'; NULL keeps the checkpoint's"),
          optional(
              "partitions",
              INT,
              "NULL",
              "the number of state partitions to end with; NULL keeps the checkpoint's"),
          optional("dry_run", BOOLEAN, "false", "only report what would be done"),
          ASSUME_STOPPED,
          BACKUP_TO,
          optional(
              "format_version",
              INT,
              "NULL",
              "RocksDB's state checkpoint format to end with, 1 or 2; NULL keeps the checkpoint's"));
    }

    @Override
    List<Object[]> run(SparkSession spark, Arguments args) {
      String checkpoint = args.required(0);
      var action =
          StateShift.get(spark)
              .migrateState(checkpoint)
              .backupTo(args.string(5))
              .onProgress(message -> LOG.info("migrate_state {}: {}", checkpoint, message));
      String provider = args.string(1);
      if (provider != null) {
        action.toProvider(provider);
      }
      Integer formatVersion = args.integer(6);
      if (formatVersion != null) {
        action.toFormatVersion(formatVersion);
      }
      Integer partitions = args.integer(2);
      if (partitions != null) {
        checkPartitions(partitions);
        action.toPartitions(partitions);
      }
      if (args.flag(4)) {
        action.assumeStopped();
      }
      return storeRows(
          action,
          args.flag(3),
          plan ->
              new Object[] {
                plan.stateStoreProvider(),
                plan.targetStateStoreProvider(),
                formatVersion(plan.checkpointFormatVersion()),
                formatVersion(plan.targetCheckpointFormatVersion())
              },
          plan -> new Object[] {MigrateState.sessionNotes(plan).toArray(String[]::new)});
    }
  }

  /** A partition count argument, checked under its SQL name (not the Java API's). */
  private static void checkPartitions(int partitions) {
    if (partitions < 1) {
      throw new StateShiftException(
          StateShiftException.Reason.INVALID_PARTITION_COUNT,
          "partitions => "
              + partitions
              + ": the partition count must be at least 1, for example partitions => 16.");
    }
  }

  /** A count the record does not hold (negative) as NULL. */
  private static Long known(long value) {
    return value < 0 ? null : value;
  }

  /** A text the record does not hold (empty) as NULL. */
  private static String known(String value) {
    return value == null || value.isEmpty() ? null : value;
  }

  /**
   * The columns of a state change's rows, one per state store: checkpoint, query_id, dry_run, then
   * {@code after} the procedure's own, the counts, and {@code last} the procedure's own.
   */
  private static StructType storeRowSchema(StructType after, StructType last) {
    StructType schema =
        new StructType()
            .add("checkpoint", STRING, false)
            .add("query_id", STRING)
            .add("dry_run", BOOLEAN, false);
    for (var field : after.fields()) {
      schema = schema.add(field);
    }
    schema =
        schema
            .add("from_partitions", INT, false)
            .add("to_partitions", INT, false)
            .add("batch", LONG, false)
            .add("operator_id", LONG)
            .add("operator_name", STRING)
            .add("store_name", STRING)
            .add("rows_read", LONG)
            .add("rows_written", LONG)
            .add("bytes_written", LONG)
            .add("duration_ms", LONG)
            .add("interrupted_attempt", STRING)
            .add("state_bytes", LONG)
            .add("state_files", LONG)
            .add("estimated_seconds", DataTypes.DoubleType)
            .add("estimate_task_slots", INT);
    for (var field : last.fields()) {
      schema = schema.add(field);
    }
    return schema;
  }

  /**
   * The rows of {@link #storeRowSchema}: a dry run's from the plan (it writes nothing; the row and
   * byte columns are null), else from the result of executing {@code action}.
   */
  private static List<Object[]> storeRows(
      StateChange<?> action,
      boolean dryRun,
      Function<RepartitionPlan, Object[]> after,
      Function<RepartitionPlan, Object[]> last) {
    List<Object[]> rows = new ArrayList<>();
    if (dryRun) {
      RepartitionPlan plan = action.plan();
      for (RepartitionPlan.OperatorInfo op : plan.operators()) {
        for (String store : op.stores()) {
          rows.add(
              row(
                  plan,
                  true,
                  after,
                  last,
                  plan.repartitionBatch(),
                  op.id(),
                  op.name(),
                  store,
                  null,
                  null,
                  null,
                  null));
        }
      }
      return rows;
    }
    RepartitionResult result = action.execute();
    for (RepartitionResult.StoreMove s : result.stores()) {
      rows.add(
          row(
              result.plan(),
              false,
              after,
              last,
              result.batchId(),
              s.operatorId(),
              s.operatorName(),
              s.storeName(),
              s.rowsRead(),
              s.rowsWritten(),
              s.bytesWritten(),
              result.totalMillis()));
    }
    return rows;
  }

  /** A state checkpoint format version, or null where the plan does not know it (0). */
  private static Integer formatVersion(int version) {
    return version > 0 ? version : null;
  }

  private static Object[] row(
      RepartitionPlan plan,
      boolean dryRun,
      Function<RepartitionPlan, Object[]> after,
      Function<RepartitionPlan, Object[]> last,
      Object... counts) {
    List<Object> row = new ArrayList<>();
    row.add(plan.checkpoint());
    row.add(plan.queryId());
    row.add(dryRun);
    row.addAll(Arrays.asList(after.apply(plan)));
    row.add(plan.fromPartitions());
    row.add(plan.toPartitions());
    row.addAll(Arrays.asList(counts));
    row.add(plan.interruptedAttempt().orElse(null));
    row.add(plan.stateFiles() > 0 ? plan.stateBytes() : null);
    row.add(plan.stateFiles() > 0 ? plan.stateFiles() : null);
    row.add(plan.estimate().map(e -> e.seconds()).orElse(null));
    row.add(plan.estimate().map(e -> e.slots().count()).orElse(null));
    row.addAll(Arrays.asList(last.apply(plan)));
    return row.toArray();
  }

  /** {@code inspect_state(checkpoint)}: one row per state store, with per-partition arrays. */
  static final class InspectState extends StateShiftProcedure {
    InspectState() {
      super(
          "inspect_state",
          "The layout of a checkpoint: one row per state store with its rows, bytes, skew, "
              + "misplaced keys, and rows and bytes per partition.",
          new StructType()
              .add("checkpoint", STRING, false)
              .add("query_id", STRING)
              .add("last_planned_batch", LONG, false)
              .add("last_committed_batch", LONG, false)
              .add("state_store_provider", STRING)
              .add("partitions", INT, false)
              .add("operator_id", LONG)
              .add("operator_name", STRING)
              .add("supported", BOOLEAN)
              .add("store_name", STRING)
              .add("rows", LONG)
              .add("bytes", LONG)
              .add("skew", DataTypes.DoubleType)
              .add("misplaced_keys", LONG)
              .add("rows_per_partition", DataTypes.createArrayType(LONG, false))
              .add("bytes_per_partition", DataTypes.createArrayType(LONG, false))
              .add("interrupted_repartition", STRING),
          CHECKPOINT);
    }

    @Override
    List<Object[]> run(SparkSession spark, Arguments args) {
      CheckpointReport r = StateShift.get(spark).inspect(args.required(0));
      String interrupted = r.interruptedRepartition().orElse(null);
      List<Object[]> rows = new ArrayList<>();
      for (CheckpointReport.OperatorReport op : r.operators()) {
        if (op.stores().isEmpty()) { // an operator whose stores were not read: still listed
          rows.add(
              new Object[] {
                r.checkpoint(),
                r.queryId(),
                r.lastPlannedBatch(),
                r.lastCommittedBatch(),
                r.stateStoreProvider(),
                r.partitions(),
                op.id(),
                op.name(),
                op.supported(),
                null,
                null,
                null,
                null,
                null,
                null,
                null,
                interrupted
              });
        }
        for (CheckpointReport.StoreReport s : op.stores()) {
          rows.add(
              new Object[] {
                r.checkpoint(),
                r.queryId(),
                r.lastPlannedBatch(),
                r.lastCommittedBatch(),
                r.stateStoreProvider(),
                r.partitions(),
                op.id(),
                op.name(),
                op.supported(),
                s.name(),
                s.totalRows(),
                s.totalBytes(),
                s.skew(),
                s.misplacedKeys(),
                s.rows(),
                s.bytes(),
                interrupted
              });
        }
      }
      return rows;
    }
  }

  /**
   * {@code verify_state(checkpoint)}: one row per problem found, or one row with {@code ok} true
   * and no problem. Problems are rows, not an error: the call itself succeeded.
   */
  static final class VerifyState extends StateShiftProcedure {
    VerifyState() {
      super(
          "verify_state",
          "Checks every key is in the partition Spark assigns it, row counts match the counts "
              + "before the last repartition, and the state files the logs need exist.",
          new StructType()
              .add("checkpoint", STRING, false)
              .add("partitions", INT, false)
              .add("rows_checked", LONG, false)
              .add("ok", BOOLEAN, false)
              .add("problem", STRING),
          CHECKPOINT);
    }

    @Override
    List<Object[]> run(SparkSession spark, Arguments args) {
      VerificationReport r = StateShift.get(spark).verify(args.required(0));
      if (r.ok()) {
        return List.<Object[]>of(
            new Object[] {r.checkpoint(), r.partitions(), r.rowsChecked(), true, null});
      }
      return r.problems().stream()
          .map(p -> new Object[] {r.checkpoint(), r.partitions(), r.rowsChecked(), false, p})
          .toList();
    }
  }

  /** {@code rollback_state(checkpoint, assume_stopped)}: one row, the repartition undone. */
  static final class RollbackState extends StateShiftProcedure {
    RollbackState() {
      super(
          "rollback_state",
          "Restores the layout before the checkpoint's last repartition, as long as no batch has "
              + "run on the new layout.",
          new StructType()
              .add("checkpoint", STRING, false)
              .add("query_id", STRING)
              .add("rolled_back_batch", LONG, false)
              .add("from_partitions", INT, false)
              .add("to_partitions", INT, false),
          CHECKPOINT,
          ASSUME_STOPPED);
    }

    @Override
    List<Object[]> run(SparkSession spark, Arguments args) {
      RepartitionPlan undone =
          StateShift.get(spark).rollbackRepartition(args.required(0), args.flag(1));
      return List.<Object[]>of(
          new Object[] {
            undone.checkpoint(),
            undone.queryId(),
            undone.repartitionBatch(),
            undone.fromPartitions(),
            undone.toPartitions()
          });
    }
  }

  /**
   * {@code doctor_state(checkpoint, cores, history, file_sink)}: one row per finding, most severe
   * first, each with the checkpoint's summary. An ERROR finding is a row, not an error.
   */
  static final class DoctorProcedure extends StateShiftProcedure {
    DoctorProcedure() {
      super(
          "doctor_state",
          "Checks a checkpoint against the production checklist, read-only: one row per finding "
              + "(severity, code, title, evidence, fix).",
          new StructType()
              .add("checkpoint", STRING, false)
              .add("query_id", STRING)
              .add("last_committed_batch", LONG, false)
              .add("partitions", INT, false)
              .add("recommended_partitions", INT, false)
              .add("cores", INT, false)
              .add("cores_source", STRING)
              .add("severity", STRING)
              .add("code", STRING)
              .add("title", STRING)
              .add("evidence", STRING)
              .add("fix", STRING),
          CHECKPOINT,
          optional(
              "cores",
              INT,
              "NULL",
              "the cores the query runs on (default: spark.cores.max, else the executors' "
                  + "settings, else the session's master)"),
          optional(
              "history",
              STRING,
              "NULL",
              "a progress history written by the monitor (a file or a folder of .jsonl files)"),
          optional(
              "file_sink",
              STRING,
              "NULL",
              "the output folder of the query's file sink, whose log is checked (the sink on "
                  + "record is checked without it)"));
    }

    @Override
    List<Object[]> run(SparkSession spark, Arguments args) {
      Doctor doctor =
          StateShift.get(spark)
              .doctor(args.required(0))
              .history(args.string(2))
              .fileSink(args.string(3));
      if (args.integer(1) != null) {
        if (args.integer(1) < 1) {
          throw new StateShiftException(
              StateShiftException.Reason.INVALID_ARGUMENT,
              "cores => " + args.integer(1) + ": the core count must be at least 1.");
        }
        doctor.cores(args.integer(1), "cores => " + args.integer(1));
      }
      DoctorReport r = doctor.run();
      List<Finding> findings = new ArrayList<>(r.findings());
      findings.sort(java.util.Comparator.comparing(Finding::severity).reversed());
      List<Object[]> rows = new ArrayList<>();
      for (Finding f : findings) {
        rows.add(
            new Object[] {
              r.checkpoint(),
              r.queryId(),
              r.lastCommittedBatch(),
              r.partitions(),
              r.recommendedPartitions(),
              r.cores(),
              r.coresSource(),
              f.severity().name(),
              f.code(),
              f.title(),
              f.evidence(),
              f.fix()
            });
      }
      if (rows.isEmpty()) { // nothing found: the summary still has a row
        rows.add(
            new Object[] {
              r.checkpoint(),
              r.queryId(),
              r.lastCommittedBatch(),
              r.partitions(),
              r.recommendedPartitions(),
              r.cores(),
              r.coresSource(),
              null,
              null,
              null,
              null,
              null
            });
      }
      return rows;
    }
  }

  /**
   * {@code history_state(checkpoint)}: one row per repartition and rollback stateshift recorded for
   * the checkpoint, oldest first (the rows of {@code stateshift history}); what a record does not
   * hold is NULL.
   */
  static final class StateHistory extends StateShiftProcedure {
    StateHistory() {
      super(
          "history_state",
          "Every repartition and rollback of the checkpoint: when, from -> to, rows and bytes "
              + "moved, duration, write path, application and user, outcome.",
          new StructType()
              .add("checkpoint", STRING, false)
              .add("kind", STRING, false)
              .add("outcome", STRING, false)
              .add("batch", LONG)
              .add("started_at", DataTypes.TimestampType)
              .add("duration_ms", LONG)
              .add("from_partitions", INT, false)
              .add("to_partitions", INT, false)
              .add("rows_moved", LONG)
              .add("bytes_moved", LONG)
              .add("path", STRING)
              .add("application", STRING)
              .add("user", STRING)
              .add("rolled_back", DataTypes.BooleanType, false)
              .add("message", STRING)
              .add("attempt_id", STRING)
              .add("change", STRING),
          CHECKPOINT);
    }

    @Override
    List<Object[]> run(SparkSession spark, Arguments args) {
      String checkpoint = args.required(0);
      List<HistoryEntry> entries = StateShift.get(spark).history(checkpoint);
      String qualified =
          io.stateshift.checkpoint.CheckpointFiles.at(
                  checkpoint, io.stateshift.checkpoint.SessionSettings.hadoopConf(spark))
              .root()
              .toString();
      return entries.stream()
          .map(
              h ->
                  new Object[] {
                    qualified,
                    h.kind().name().toLowerCase(java.util.Locale.ROOT),
                    h.outcome().name().toLowerCase(java.util.Locale.ROOT),
                    known(h.batch()),
                    h.startedAt().map(t -> t.toEpochMilli() * 1000L).orElse(null),
                    known(h.durationMs()),
                    h.fromPartitions(),
                    h.toPartitions(),
                    known(h.rowsMoved()),
                    known(h.bytesMoved()),
                    known(h.path()),
                    known(h.application()),
                    known(h.user()),
                    h.rolledBack(),
                    h.message().orElse(null),
                    known(h.attemptId()),
                    h.change().orElse(null)
                  })
          .toList();
    }
  }

  /**
   * {@code prepare_state(checkpoint, partitions, cancel)}: one row, the layout prepared (or the
   * layouts removed), as {@code stateshift prepare}; the query may keep running.
   */
  static final class PrepareStateProcedure extends StateShiftProcedure {
    PrepareStateProcedure() {
      super(
          "prepare_state",
          "While the query runs, writes the state of its last committed batch in `partitions` "
              + "partitions under _stateshift/prepared/, so the repartition at the restart only "
              + "replays the batches since (cancel => true removes it). One row.",
          new StructType()
              .add("checkpoint", STRING, false)
              .add("query_id", STRING)
              .add("prepared_batch", LONG)
              .add("from_partitions", INT)
              .add("to_partitions", INT)
              .add("rows", LONG)
              .add("bytes", LONG)
              .add("removed_layouts", INT, false)
              .add("duration_ms", LONG, false),
          CHECKPOINT,
          optional(
              "partitions",
              INT,
              "NULL",
              "the partition count the restart will ask for (needed unless cancel => true)"),
          optional("cancel", BOOLEAN, "false", "remove the prepared layout instead"));
    }

    @Override
    List<Object[]> run(SparkSession spark, Arguments args) {
      String checkpoint = args.required(0);
      var action =
          StateShift.get(spark)
              .prepareState(checkpoint)
              .onProgress(message -> LOG.info("prepare_state {}: {}", checkpoint, message));
      Integer partitions = args.integer(1);
      io.stateshift.PrepareResult result;
      if (args.flag(2)) {
        if (partitions != null) {
          throw new StateShiftException(
              StateShiftException.Reason.INVALID_ARGUMENT,
              "give partitions => n or cancel => true, not both.");
        }
        result = action.cancel();
      } else {
        if (partitions == null) {
          throw new StateShiftException(
              StateShiftException.Reason.INVALID_PARTITION_COUNT,
              "partitions is null: pass the partition count the restart will ask for, for "
                  + "example partitions => 16, or cancel => true.");
        }
        checkPartitions(partitions);
        result = action.toPartitions(partitions).execute();
      }
      var p = result.prepared();
      return List.<Object[]>of(
          new Object[] {
            result.checkpoint(),
            p.map(x -> x.queryId()).orElse(null),
            p.map(x -> x.preparedBatch()).orElse(null),
            p.map(x -> x.fromPartitions()).orElse(null),
            p.map(x -> x.toPartitions()).orElse(null),
            p.map(x -> x.rows()).orElse(null),
            p.map(x -> x.bytes()).orElse(null),
            result.removed(),
            result.totalMillis()
          });
    }
  }

  /**
   * {@code repair_sink_log(checkpoint, file_sink)}: one row per batch filled or left, as {@code
   * stateshift repair-sink-log}; none when the log lacks nothing.
   */
  static final class RepairSinkLog extends StateShiftProcedure {
    RepairSinkLog() {
      super(
          "repair_sink_log",
          "Writes an empty entry into a file sink's log (<output>/_spark_metadata) for each "
              + "repartition batch of the checkpoint it lacks. One row per batch: filled, or not "
              + "(with why).",
          new StructType()
              .add("sink_log", STRING, false)
              .add("batch", LONG)
              .add("filled", BOOLEAN, false)
              .add("problem", STRING),
          CHECKPOINT,
          required("file_sink", STRING, "the output folder of the query's file sink"));
    }

    @Override
    List<Object[]> run(SparkSession spark, Arguments args) {
      io.stateshift.SinkLogRepair repair =
          StateShift.get(spark).repairSinkLog(args.required(0), args.required(1));
      List<Object[]> rows = new ArrayList<>();
      for (Long batch : repair.filled()) {
        rows.add(new Object[] {repair.sinkLog(), batch, true, null});
      }
      for (String problem : repair.unfillable()) {
        rows.add(new Object[] {repair.sinkLog(), null, false, problem});
      }
      return rows;
    }
  }

  /**
   * {@code report_state(checkpoint, out, history, cores)}: writes the HTML report to {@code out}, a
   * file on the driver, as {@code stateshift report}; one row.
   */
  static final class ReportState extends StateShiftProcedure {
    ReportState() {
      super(
          "report_state",
          "Writes a self-contained HTML page with charts and the doctor's findings to `out`, a "
              + "file on the driver. One row.",
          new StructType()
              .add("checkpoint", STRING, false)
              .add("out", STRING, false)
              .add("history_batches", INT, false)
              .add("findings", INT, false)
              .add("worst", STRING, false),
          CHECKPOINT,
          required("out", STRING, "the page to write: a file path on the driver"),
          optional(
              "history",
              STRING,
              "NULL",
              "a progress history written by the monitor (a file or a folder of .jsonl files)"),
          optional("cores", INT, "NULL", "the cores the query runs on"));
    }

    @Override
    List<Object[]> run(SparkSession spark, Arguments args) {
      java.nio.file.Path file = java.nio.file.Path.of(args.required(1)).toAbsolutePath();
      if (java.nio.file.Files.isDirectory(file)) {
        throw new StateShiftException(
            StateShiftException.Reason.INVALID_ARGUMENT,
            "out => '"
                + args.required(1)
                + "' is a folder; name the page to write, for example out => '"
                + file.resolve("report.html")
                + "'.");
      }
      Doctor doctor = StateShift.get(spark).doctor(args.required(0)).history(args.string(2));
      if (args.integer(3) != null) {
        if (args.integer(3) < 1) {
          throw new StateShiftException(
              StateShiftException.Reason.INVALID_ARGUMENT,
              "cores => " + args.integer(3) + ": the core count must be at least 1.");
        }
        doctor.cores(args.integer(3), "cores => " + args.integer(3));
      }
      DoctorReport report = doctor.run();
      io.stateshift.monitor.ProgressHistory history =
          args.string(2) == null
              ? null
              : io.stateshift.monitor.ProgressHistory.read(
                      args.string(2), io.stateshift.checkpoint.SessionSettings.hadoopConf(spark))
                  .ofQuery(report.queryId());
      io.stateshift.report.HtmlReport.write(
          report, history, StateShift.get(spark).history(args.required(0)), file);
      return List.<Object[]>of(
          new Object[] {
            report.checkpoint(),
            file.toString(),
            history == null ? 0 : history.batches().size(),
            report.findings().size(),
            report.worst().name()
          });
    }
  }

  /**
   * {@code inventory_state(location, history, cores)}: one row per stream found at or below the
   * location (a folder of checkpoints, or a checkpoint), with the kinds of recommendation that name
   * it (the rows of {@code stateshift inventory}).
   */
  static final class InventoryState extends StateShiftProcedure {
    InventoryState() {
      super(
          "inventory_state",
          "The fleet view, read-only: one row per stream below a folder of checkpoints (state,"
              + " pace, the doctor's worst finding) with the cost practice's recommendations.",
          new StructType()
              .add("stream", STRING, false)
              .add("checkpoint", STRING, false)
              .add("query_id", STRING)
              .add("provider", STRING)
              .add("partitions", INT)
              .add("recommended_partitions", INT)
              .add("state_rows", LONG)
              .add("state_bytes", LONG)
              .add("batches_per_hour", DataTypes.DoubleType)
              .add("idle_share", DataTypes.DoubleType)
              .add("trigger_interval_ms", LONG)
              .add("batch_duration_ms_median", LONG)
              .add("worst_finding", STRING)
              .add("recommendations", STRING)
              .add("error", STRING),
          required("location", STRING, "a folder that holds checkpoints, or a checkpoint"),
          optional(
              "history",
              STRING,
              "NULL",
              "a progress history written by the monitor (a file or a folder of .jsonl files)"),
          optional(
              "cores",
              INT,
              "NULL",
              "the cores each stream runs on (default: the session's default parallelism)"));
    }

    @Override
    List<Object[]> run(SparkSession spark, Arguments args) {
      io.stateshift.inventory.Inventory inventory =
          StateShift.get(spark).inventory(List.of(args.required(0))).history(args.string(1));
      if (args.integer(2) != null) {
        inventory.cores(args.integer(2));
      }
      io.stateshift.inventory.FleetReport fleet = inventory.run();
      List<Object[]> rows = new ArrayList<>();
      for (io.stateshift.inventory.FleetReport.Stream s : fleet.streams()) {
        List<String> kinds =
            fleet.recommendations().stream()
                .filter(r -> r.streams().contains(s.name()))
                .map(r -> r.kind().name())
                .toList();
        rows.add(
            new Object[] {
              s.name(),
              s.checkpoint(),
              s.queryId(),
              s.provider(),
              s.partitions(),
              s.recommendedPartitions(),
              s.stateRows(),
              s.stateBytes(),
              s.batchesPerHour(),
              s.idleShare(),
              s.triggerIntervalMs(),
              s.batchDurationMsMedian(),
              s.worst() == null ? null : s.worstSeverity() + " " + s.worst(),
              kinds.isEmpty() ? null : String.join(",", kinds),
              s.error()
            });
      }
      return rows;
    }
  }
}
