package io.stateshift;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.stateshift.testing.CheckpointDigest;
import io.stateshift.testing.SparkTestSession;
import io.stateshift.testing.StateStores;
import io.stateshift.testing.StatefulQueries;
import io.stateshift.testing.StreamRun;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.SparkSession;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The SQL procedures as users call them: {@code CALL stateshift.system.*} in a session whose only
 * set-up is the catalog conf. Repartition through SQL must pass the same oracle as the API.
 */
class SqlProceduresTest {
  private static final StatefulQueries QUERY = StatefulQueries.DEDUP_THEN_WINDOWED_COUNT;
  private static final StateStores STORE = StateStores.ROCKSDB;

  private final SparkSession streams = SparkTestSession.get();
  @TempDir Path tmp;

  /** A new session on the test JVM's Spark, given the catalog by conf and nothing else. */
  private SparkSession sqlSession() {
    SparkSession session = streams.newSession();
    session.conf().set("spark.sql.catalog.stateshift", "io.stateshift.sql.StateShiftCatalog");
    return session;
  }

  private static List<Row> call(SparkSession sql, String statement) {
    return sql.sql(statement).collectAsList();
  }

  @Test
  void everyProcedureThroughSqlAndRepartitionPassesTheOracle() throws Exception {
    SparkSession sql = sqlSession();
    StreamRun run = new StreamRun(streams, tmp.resolve("input"));
    Path checkpoint = tmp.resolve("checkpoint");
    Path sink = tmp.resolve("sink");
    for (int i = 0; i < 2; i++) {
      run.writeEvents(i, 200, 30);
    }
    run.runAvailable(QUERY, checkpoint, sink, STORE.withPartitions(4));
    String cp = checkpoint.toString();

    // inspect_state: a row per store (dedup, then the windowed count), 4 partitions each
    List<Row> inspect =
        call(sql, "CALL stateshift.system.inspect_state(checkpoint => '" + cp + "')");
    assertThat(inspect)
        .hasSize(2)
        .allSatisfy(
            r -> {
              assertThat(r.<Integer>getAs("partitions")).isEqualTo(4);
              assertThat(r.<Long>getAs("rows")).isPositive();
              assertThat(r.<Long>getAs("misplaced_keys")).isZero();
              assertThat(r.<scala.collection.Seq<Long>>getAs("rows_per_partition").size())
                  .isEqualTo(4);
            });
    long committed = inspect.get(0).<Long>getAs("last_committed_batch");
    assertThat(inspect.stream().map(r -> r.<String>getAs("operator_name")).toList())
        .anySatisfy(n -> assertThat(n).containsIgnoringCase("dedup"));

    // a dry run: the plan per store, nothing written
    Map<String, String> before = CheckpointDigest.of(checkpoint);
    List<Row> plan =
        call(
            sql,
            "CALL stateshift.system.repartition_state(checkpoint => '"
                + cp
                + "', partitions => 8, dry_run => true)");
    assertThat(plan)
        .hasSize(2)
        .allSatisfy(
            r -> {
              assertThat(r.<Boolean>getAs("dry_run")).isTrue();
              assertThat(r.<Integer>getAs("from_partitions")).isEqualTo(4);
              assertThat(r.<Integer>getAs("to_partitions")).isEqualTo(8);
              assertThat(r.<Long>getAs("batch")).isEqualTo(committed + 1);
              assertThat(r.isNullAt(r.fieldIndex("rows_written"))).isTrue();
              // the state's size and the estimate, as --dry-run prints them
              assertThat(r.<Long>getAs("state_bytes")).isPositive();
              assertThat(r.<Long>getAs("state_files")).isPositive();
              assertThat(r.<Double>getAs("estimated_seconds")).isPositive();
              assertThat(r.<Integer>getAs("estimate_task_slots")).isPositive();
            });
    assertThat(CheckpointDigest.of(checkpoint)).isEqualTo(before);

    // repartition, then undo it, then do it again: history keeps both
    List<Row> moved =
        call(
            sql,
            "CALL stateshift.system.repartition_state(checkpoint => '"
                + cp
                + "', partitions => 8)");
    assertMoved(moved, 4, 8);
    List<Row> undone = call(sql, "CALL stateshift.system.rollback_state('" + cp + "')");
    assertThat(undone)
        .singleElement()
        .satisfies(
            r -> {
              assertThat(r.<Long>getAs("rolled_back_batch")).isEqualTo(committed + 1);
              assertThat(r.<Integer>getAs("from_partitions")).isEqualTo(8);
              assertThat(r.<Integer>getAs("to_partitions")).isEqualTo(4);
            });
    List<Row> again =
        call(
            sql,
            "CALL stateshift.system.repartition_state(checkpoint => '"
                + cp
                + "', partitions => 8, assume_stopped => true)");
    assertMoved(again, 4, 8);
    StateAssertions.assertEveryKeyInItsSparkPartition(
        streams, checkpoint, again.get(0).<Long>getAs("batch"), 8);
    StateAssertions.assertMetadataReports(streams, checkpoint, 8);

    List<Row> history =
        call(sql, "CALL stateshift.system.history_state(checkpoint => '" + cp + "')");
    // The first repartition (rolled back), its rollback, the second repartition; oldest first.
    assertThat(history).hasSize(3);
    assertThat(history.stream().map(r -> r.<String>getAs("kind")).toList())
        .containsExactly("repartition", "rollback", "repartition");
    assertThat(history.stream().map(r -> r.<Boolean>getAs("rolled_back")).toList())
        .containsExactly(true, false, false);
    assertThat(history)
        .allSatisfy(
            r -> {
              assertThat(r.<String>getAs("outcome")).isEqualTo("completed");
              assertThat(r.<Long>getAs("batch")).isEqualTo(committed + 1);
              assertThat(r.<java.sql.Timestamp>getAs("started_at").toInstant())
                  .isAfter(java.time.Instant.now().minusSeconds(600));
            });
    Row last = history.get(2);
    assertThat(last.<Integer>getAs("from_partitions")).isEqualTo(4);
    assertThat(last.<Integer>getAs("to_partitions")).isEqualTo(8);
    assertThat(last.<Long>getAs("rows_moved")).isPositive();
    assertThat(last.<Long>getAs("bytes_moved")).isPositive();
    assertThat(last.<String>getAs("path")).isNotBlank();

    List<Row> verify = call(sql, "CALL stateshift.system.verify_state(checkpoint => '" + cp + "')");
    assertThat(verify)
        .singleElement()
        .satisfies(
            r -> {
              assertThat(r.<Boolean>getAs("ok")).isTrue();
              assertThat(r.<Integer>getAs("partitions")).isEqualTo(8);
              assertThat(r.<Long>getAs("rows_checked")).isPositive();
              assertThat(r.isNullAt(r.fieldIndex("problem"))).isTrue();
            });

    List<Row> doctor =
        call(sql, "CALL stateshift.system.doctor_state(checkpoint => '" + cp + "', cores => 2)");
    assertThat(doctor)
        .isNotEmpty()
        .allSatisfy(
            r -> {
              assertThat(r.<Integer>getAs("partitions")).isEqualTo(8);
              assertThat(r.<Integer>getAs("cores")).isEqualTo(2);
              assertThat(r.<String>getAs("cores_source")).isEqualTo("cores => 2");
              assertThat(r.<String>getAs("severity")).isIn("INFO", "WARNING", "ERROR");
            });
    // a script can filter the rows like any DataFrame
    assertThat(
            sql.sql("CALL stateshift.system.doctor('" + cp + "', 2)")
                .filter("severity = 'ERROR'")
                .count())
        .isZero();

    // the query restarts on 8 partitions and writes exactly what an uninterrupted run writes
    for (int i = 2; i < 4; i++) {
      run.writeEvents(i, 200, 30);
    }
    run.writeFlush(4);
    assertThat(
            StreamRun.stateInstances(
                run.runAvailable(QUERY, checkpoint, sink, STORE.withPartitions(4))))
        .isNotEmpty()
        .containsOnly(8L);
    assertThat(run.sinkRows(sink, QUERY)).containsExactlyElementsOf(oracle());
  }

  private static void assertMoved(List<Row> rows, int from, int to) {
    assertThat(rows)
        .hasSize(2)
        .allSatisfy(
            r -> {
              assertThat(r.<Boolean>getAs("dry_run")).isFalse();
              assertThat(r.<Integer>getAs("from_partitions")).isEqualTo(from);
              assertThat(r.<Integer>getAs("to_partitions")).isEqualTo(to);
              assertThat(r.<Long>getAs("rows_written"))
                  .isPositive()
                  .isEqualTo(r.<Long>getAs("rows_read"));
              assertThat(r.<Long>getAs("bytes_written")).isPositive();
              assertThat(r.<Long>getAs("duration_ms")).isNotNegative();
            });
  }

  /** The same query over the same files, on a fresh checkpoint, uninterrupted. */
  private List<String> oracle() {
    Path dir = tmp.resolve("oracle");
    StreamRun run = new StreamRun(streams, tmp.resolve("input"));
    run.runAvailable(
        QUERY, dir.resolve("checkpoint"), dir.resolve("sink"), StateStores.HDFS.withPartitions(5));
    List<String> rows = run.sinkRows(dir.resolve("sink"), QUERY);
    assertThat(rows).isNotEmpty();
    return rows;
  }

  /**
   * migrate_state: a dry run plans with both providers and writes nothing; the migration to RocksDB
   * with a partition change moves every row, the restarted query runs on RocksDB with the new count
   * although its session names the HDFS-backed store, and writes the uninterrupted output; the
   * provider the checkpoint has and an unknown one are refused, checkpoint unchanged.
   */
  @Test
  void migrateStateThroughSqlPassesTheOracle() throws Exception {
    SparkSession sql = sqlSession();
    StreamRun run = new StreamRun(streams, tmp.resolve("input"));
    Path checkpoint = tmp.resolve("checkpoint");
    Path sink = tmp.resolve("sink");
    for (int i = 0; i < 2; i++) {
      run.writeEvents(i, 200, 30);
    }
    run.runAvailable(QUERY, checkpoint, sink, StateStores.HDFS.withPartitions(4));
    String cp = checkpoint.toString();
    Map<String, String> before = CheckpointDigest.of(checkpoint);

    assertThatThrownBy(
            () ->
                sql.sql(
                    "CALL stateshift.system.migrate_state(checkpoint => '"
                        + cp
                        + "', provider => 'hdfs')"))
        .isInstanceOf(StateShiftException.class)
        .hasMessageContaining("migrate_state refused [SAME_PROVIDER]")
        .hasMessageContaining("stateshift repartition --checkpoint");
    assertThatThrownBy(
            () ->
                sql.sql(
                    "CALL stateshift.system.migrate_state(checkpoint => '"
                        + cp
                        + "', provider => 'leveldb')"))
        .hasMessageContaining("migrate_state refused [INVALID_ARGUMENT]")
        .hasMessageContaining("pass rocksdb or hdfs");
    List<Row> plan =
        call(
            sql,
            "CALL stateshift.system.migrate_state(checkpoint => '"
                + cp
                + "', provider => 'rocksdb', partitions => 6, dry_run => true)");
    assertThat(plan)
        .hasSize(2)
        .allSatisfy(
            r -> {
              assertThat(r.<Boolean>getAs("dry_run")).isTrue();
              assertThat(r.<String>getAs("from_provider")).isEqualTo(MigrateOracleTest.HDFS);
              assertThat(r.<String>getAs("to_provider")).isEqualTo(MigrateOracleTest.ROCKSDB);
              assertThat(r.<Integer>getAs("from_partitions")).isEqualTo(4);
              assertThat(r.<Integer>getAs("to_partitions")).isEqualTo(6);
              assertThat(r.isNullAt(r.fieldIndex("rows_written"))).isTrue();
              assertThat(r.<scala.collection.Seq<String>>getAs("session_notes").mkString("\n"))
                  .contains("Nothing to set for the provider")
                  .contains(MigrateOracleTest.ROCKSDB_CHANGELOG);
            });
    assertThat(CheckpointDigest.of(checkpoint)).isEqualTo(before);

    List<Row> moved =
        call(
            sql,
            "CALL stateshift.system.migrate_state(checkpoint => '"
                + cp
                + "', provider => 'rocksdb', partitions => 6)");
    assertMoved(moved, 4, 6);
    assertThat(moved)
        .allSatisfy(
            r -> {
              assertThat(r.<String>getAs("from_provider")).isEqualTo(MigrateOracleTest.HDFS);
              assertThat(r.<String>getAs("to_provider")).isEqualTo(MigrateOracleTest.ROCKSDB);
            });
    List<Row> history =
        call(sql, "CALL stateshift.system.history_state(checkpoint => '" + cp + "')");
    assertThat(history).singleElement();
    assertThat(history.get(0).<String>getAs("path")).startsWith("migrate hdfs -> rocksdb");
    List<Row> verify = call(sql, "CALL stateshift.system.verify_state('" + cp + "')");
    assertThat(verify.get(0).<Boolean>getAs("ok")).isTrue();
    // the state checkpoint format, planned only: provider and count stay, nothing is written
    Map<String, String> migrated = CheckpointDigest.of(checkpoint);
    List<Row> formatPlan =
        call(
            sql,
            "CALL stateshift.system.migrate_state(checkpoint => '"
                + cp
                + "', format_version => 2, dry_run => true)");
    assertThat(formatPlan)
        .allSatisfy(
            r -> {
              assertThat(r.<String>getAs("from_provider")).isEqualTo(MigrateOracleTest.ROCKSDB);
              assertThat(r.<String>getAs("to_provider")).isEqualTo(MigrateOracleTest.ROCKSDB);
              assertThat(r.<Integer>getAs("from_format_version")).isEqualTo(1);
              assertThat(r.<Integer>getAs("to_format_version")).isEqualTo(2);
              assertThat(r.<Integer>getAs("to_partitions")).isEqualTo(6);
              assertThat(r.<scala.collection.Seq<String>>getAs("session_notes").mkString("\n"))
                  .contains("checkpointFormatVersion");
            });
    assertThat(CheckpointDigest.of(checkpoint)).isEqualTo(migrated);

    for (int i = 2; i < 4; i++) {
      run.writeEvents(i, 200, 30);
    }
    run.writeFlush(4);
    assertThat(
            StreamRun.stateInstances(
                run.runAvailable(QUERY, checkpoint, sink, StateStores.HDFS.withPartitions(4))))
        .isNotEmpty()
        .containsOnly(6L);
    MigrateOracleTest.assertNewVersionsWrittenBy(
        checkpoint, moved.get(0).<Long>getAs("batch") + 1, MigrateOracleTest.ROCKSDB);
    assertThat(run.sinkRows(sink, QUERY)).containsExactlyElementsOf(oracle());
  }

  @Test
  void refusalsRaiseTheReasonAndLeaveTheCheckpointUnchanged() throws Exception {
    SparkSession sql = sqlSession();
    String missing = tmp.resolve("no-such-checkpoint").toString();
    for (String procedure :
        List.of(
            "repartition_state(checkpoint => '" + missing + "', partitions => 8)",
            "inspect_state('" + missing + "')",
            "verify_state('" + missing + "')",
            "rollback_state('" + missing + "')",
            "doctor_state('" + missing + "')",
            "history_state('" + missing + "')",
            "prepare_state('" + missing + "', 4)",
            "report_state('" + missing + "', '" + tmp.resolve("r.html") + "')",
            "repair_sink_log('" + missing + "', '" + tmp.resolve("out") + "')",
            // the other names of doctor_state and history_state
            "doctor('" + missing + "')",
            "state_history('" + missing + "')")) {
      assertThatThrownBy(() -> sql.sql("CALL stateshift.system." + procedure))
          .isInstanceOf(StateShiftException.class)
          .hasMessageContaining("refused [CHECKPOINT_NOT_FOUND]")
          .hasMessageContaining("does not exist. Pass the checkpointLocation");
    }

    StreamRun run = new StreamRun(streams, tmp.resolve("input"));
    Path checkpoint = tmp.resolve("checkpoint");
    run.writeEvents(0, 200, 20);
    run.runAvailable(
        StatefulQueries.GROUPED_COUNT,
        checkpoint,
        tmp.resolve("sink"),
        StateStores.HDFS.withPartitions(3));
    Map<String, String> before = CheckpointDigest.of(checkpoint);
    String cp = checkpoint.toString();
    assertThatThrownBy(
            () ->
                sql.sql(
                    "CALL stateshift.system.repartition_state(checkpoint => '"
                        + cp
                        + "', partitions => 3)"))
        .isInstanceOf(StateShiftException.class)
        .hasMessageContaining("repartition_state refused [SAME_PARTITION_COUNT]")
        .satisfies(
            e ->
                assertThat(((StateShiftException) e).reason())
                    .isEqualTo(StateShiftException.Reason.SAME_PARTITION_COUNT));
    assertThatThrownBy(
            () ->
                sql.sql(
                    "CALL stateshift.system.repartition_state(checkpoint => '"
                        + cp
                        + "', partitions => 0)"))
        .hasMessageContaining("refused [INVALID_PARTITION_COUNT]")
        // the SQL argument, not the Java API behind it
        .hasMessageContaining("partitions => 0")
        .hasMessageNotContaining("toPartitions");
    assertThatThrownBy(
            () ->
                sql.sql(
                    "CALL stateshift.system.migrate_state(checkpoint => '"
                        + cp
                        + "', provider => 'rocksdb', partitions => -1)"))
        .hasMessageContaining("partitions => -1")
        .hasMessageNotContaining("toPartitions");
    assertThatThrownBy(
            () -> sql.sql("CALL stateshift.system.rollback_state(checkpoint => '" + cp + "')"))
        .hasMessageContaining("rollback_state refused [");
    // Spark's own checks of names and arguments, before anything runs
    assertThatThrownBy(
            () ->
                sql.sql(
                    "CALL stateshift.system.repartition_state(checkpoint => '"
                        + cp
                        + "', partition => 6)"))
        .hasMessageContaining("partition");
    assertThatThrownBy(() -> sql.sql("CALL stateshift.system.repartition_stat('" + cp + "', 6)"))
        .hasMessageContaining("cannot be found")
        .hasMessageContaining("repartition_state, report_state, rollback_state");
    assertThat(CheckpointDigest.of(checkpoint)).isEqualTo(before);
    assertThat(call(sql, "CALL stateshift.system.history_state('" + cp + "')")).isEmpty();
    assertThat(Files.exists(checkpoint.resolve("_stateshift"))).isFalse();
  }

  /**
   * prepare_state, report_state and repair_sink_log, the commands' procedures: a prepared layout
   * and its removal, a report page, a sink log that lacks nothing; a folder as the page refused.
   */
  @Test
  void prepareReportAndRepairSinkLogThroughSql() throws Exception {
    SparkSession sql = sqlSession();
    StreamRun run = new StreamRun(streams, tmp.resolve("input"));
    Path checkpoint = tmp.resolve("checkpoint");
    run.writeEvents(0, 200, 20);
    run.runAvailable(
        StatefulQueries.GROUPED_COUNT,
        checkpoint,
        tmp.resolve("sink"),
        StateStores.HDFS.withPartitions(3));
    String cp = checkpoint.toString();

    assertThat(call(sql, "CALL stateshift.system.prepare_state('" + cp + "', 5)"))
        .singleElement()
        .satisfies(
            r -> {
              assertThat(r.<Integer>getAs("from_partitions")).isEqualTo(3);
              assertThat(r.<Integer>getAs("to_partitions")).isEqualTo(5);
              assertThat(r.<Long>getAs("rows")).isPositive();
            });
    assertThat(checkpoint.resolve("_stateshift/prepared")).isNotEmptyDirectory();
    assertThat(
            call(
                sql,
                "CALL stateshift.system.prepare_state(checkpoint => '" + cp + "', cancel => true)"))
        .singleElement()
        .satisfies(
            r -> {
              assertThat(r.<Integer>getAs("removed_layouts")).isEqualTo(1);
              assertThat(r.isNullAt(r.fieldIndex("to_partitions"))).isTrue();
            });
    assertThatThrownBy(() -> sql.sql("CALL stateshift.system.prepare_state('" + cp + "')"))
        .hasMessageContaining("prepare_state refused [INVALID_PARTITION_COUNT]")
        .hasMessageContaining("partitions => 16");

    Path page = tmp.resolve("report.html");
    assertThat(call(sql, "CALL stateshift.system.report_state('" + cp + "', '" + page + "')"))
        .singleElement()
        .satisfies(r -> assertThat(r.<String>getAs("out")).isEqualTo(page.toString()));
    assertThat(page).content().contains("stateshift report");
    assertThatThrownBy(
            () -> sql.sql("CALL stateshift.system.report_state('" + cp + "', '" + tmp + "')"))
        .hasMessageContaining("report_state refused [INVALID_ARGUMENT]")
        .hasMessageContaining("is a folder");

    Path out = Files.createDirectories(tmp.resolve("out/_spark_metadata"));
    assertThat(
            call(
                sql,
                "CALL stateshift.system.repair_sink_log('" + cp + "', '" + out.getParent() + "')"))
        .isEmpty();
  }
}
