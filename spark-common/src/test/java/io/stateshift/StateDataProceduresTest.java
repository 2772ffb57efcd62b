package io.stateshift;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.stateshift.testing.CheckpointDigest;
import io.stateshift.testing.SparkTestSession;
import io.stateshift.testing.StateStores;
import io.stateshift.testing.StatefulQueries;
import io.stateshift.testing.StreamRun;
import java.nio.file.Path;
import java.util.List;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.SparkSession;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * State as data through SQL, in a session whose only set-up is the catalog conf: read_state,
 * erase_state (a dry run, then the erase), upsert_state, set_state and evolve_state, and their
 * refusals.
 */
class StateDataProceduresTest {
  private final SparkSession streams = SparkTestSession.get();
  @TempDir Path tmp;

  private SparkSession sqlSession() {
    SparkSession session = streams.newSession();
    session.conf().set("spark.sql.catalog.stateshift", "io.stateshift.sql.StateShiftCatalog");
    return session;
  }

  @Test
  void readEraseUpsertAndEvolveThroughSql() {
    SparkSession sql = sqlSession();
    StreamRun run = new StreamRun(streams, tmp.resolve("input"));
    Path checkpoint = tmp.resolve("checkpoint");
    run.writeEvents(0, 200, 10);
    run.runAvailable(
        StatefulQueries.GROUPED_COUNT,
        checkpoint,
        tmp.resolve("sink"),
        StateStores.HDFS.withPartitions(3));
    String cp = checkpoint.toString();

    List<Row> read =
        sql.sql(
                "CALL stateshift.system.read_state(checkpoint => '"
                    + cp
                    + "', where => \"key.device = 'device-2'\")")
            .collectAsList();
    assertThat(read).singleElement();
    assertThat(read.get(0).getString(1)).isEqualTo("{\"device\":\"device-2\"}");
    assertThat(read.get(0).getString(2)).startsWith("{\"count\":");

    var digest = CheckpointDigest.of(checkpoint);
    List<Row> dry =
        sql.sql(
                "CALL stateshift.system.erase_state(checkpoint => '"
                    + cp
                    + "', delete_where => \"key.device IN ('device-1', 'device-2')\","
                    + " dry_run => true)")
            .collectAsList();
    assertThat(dry).singleElement();
    assertThat(dry.get(0).<Long>getAs("matching")).isEqualTo(2);
    assertThat(dry.get(0).isNullAt(dry.get(0).fieldIndex("entries_after"))).isTrue();
    assertThat(CheckpointDigest.of(checkpoint)).isEqualTo(digest);
    assertThatThrownBy(
            () ->
                sql.sql(
                        "CALL stateshift.system.erase_state(checkpoint => '"
                            + cp
                            + "', delete_where => 'key.nothing = 1')")
                    .collectAsList())
        .hasMessageContaining("erase_state refused [INVALID_ARGUMENT]")
        .hasMessageContaining("key.device string");
    assertThat(CheckpointDigest.of(checkpoint)).isEqualTo(digest);

    List<Row> erased =
        sql.sql(
                "CALL stateshift.system.erase_state(checkpoint => '"
                    + cp
                    + "', delete_where => \"key.device IN ('device-1', 'device-2')\","
                    + " assume_stopped => true)")
            .collectAsList();
    assertThat(erased.get(0).<Long>getAs("entries_before")).isEqualTo(10);
    assertThat(erased.get(0).<Long>getAs("entries_after")).isEqualTo(8);
    List<Row> history =
        sql.sql("CALL stateshift.system.history_state('" + cp + "')").collectAsList();
    assertThat(history)
        .filteredOn(r -> r.<String>getAs("kind").equals("edit"))
        .singleElement()
        .satisfies(
            r ->
                assertThat(r.<String>getAs("change"))
                    .contains("deleted where key.device IN ('device-1', 'device-2')")
                    .contains("10 -> 8 entries"));

    Path seed = tmp.resolve("seed");
    streams
        .sql("SELECT named_struct('device', 'device-1') AS key, named_struct('count', 5L) AS value")
        .write()
        .parquet(seed.toString());
    List<Row> upserted =
        sql.sql(
                "CALL stateshift.system.upsert_state(checkpoint => '"
                    + cp
                    + "', source => '"
                    + seed
                    + "', assume_stopped => true)")
            .collectAsList();
    assertThat(upserted.get(0).<Long>getAs("entries_after")).isEqualTo(9);

    String set =
        "CALL stateshift.system.set_state(checkpoint => '"
            + cp
            + "', set => map('count', 'value.count + 1'), where => \"key.device = 'device-1'\","
            + " assume_stopped => true";
    List<Row> toSet = sql.sql(set + ", dry_run => true)").collectAsList();
    assertThat(toSet.get(0).<Long>getAs("matching")).isEqualTo(1);
    assertThat(toSet.get(0).<Long>getAs("entries_after")).isNull();
    List<Row> setRows = sql.sql(set + ")").collectAsList();
    assertThat(setRows.get(0).<Long>getAs("entries_after")).isEqualTo(9);
    assertThatThrownBy(
            () ->
                sql.sql(
                        "CALL stateshift.system.set_state(checkpoint => '"
                            + cp
                            + "', set => map('count', \"'many'\"))")
                    .collect())
        .hasMessageContaining("set_state refused [INVALID_ARGUMENT]")
        .hasMessageContaining("does not fit value.count");

    List<Row> evolved =
        sql.sql(
                "CALL stateshift.system.evolve_state(checkpoint => '"
                    + cp
                    + "', value_schema => 'count BIGINT, seen BIGINT',"
                    + " fills => map('seen', 'value.count * 2'), assume_stopped => true)")
            .collectAsList();
    assertThat(evolved.get(0).<Long>getAs("entries_after")).isEqualTo(9);
    List<Row> after =
        StateShift.get(streams)
            .readState(cp)
            .where("key.device = 'device-1'")
            .load()
            .selectExpr("value.count", "value.seen")
            .collectAsList();
    assertThat(after).singleElement();
    assertThat(after.get(0).getLong(0)).isEqualTo(6);
    assertThat(after.get(0).getLong(1)).isEqualTo(12);
  }
}
