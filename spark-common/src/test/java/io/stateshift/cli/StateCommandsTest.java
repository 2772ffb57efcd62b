package io.stateshift.cli;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import io.stateshift.testing.CheckpointDigest;
import io.stateshift.testing.SparkTestSession;
import io.stateshift.testing.StateStores;
import io.stateshift.testing.StatefulQueries;
import io.stateshift.testing.StreamRun;
import java.nio.file.Path;
import java.util.Map;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.SparkSession;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** {@code state}, {@code export} and {@code edit} as a script meets them. */
class StateCommandsTest {
  private final SparkSession spark = SparkTestSession.get(); // the CLI uses the program's session

  @TempDir Path tmp;

  /** Runs the command line in this JVM, as {@link StateShiftCliTest} does. */
  private static StateShiftCliTest.Run cli(String... args) {
    return StateShiftCliTest.cli(args);
  }

  /** A grouped count over 200 events of 20 devices, in 4 partitions, and a batch count to check. */
  private Path checkpoint(StateStores store) {
    StreamRun run = new StreamRun(spark, tmp.resolve("input"));
    run.writeEvents(0, 200, 20);
    Path checkpoint = tmp.resolve("checkpoint");
    run.runAvailable(
        StatefulQueries.GROUPED_COUNT, checkpoint, tmp.resolve("sink"), store.withPartitions(4));
    return checkpoint;
  }

  private long batchCount(String device) {
    return spark
        .read()
        .schema(StreamRun.EVENT_SCHEMA)
        .json(tmp.resolve("input").toString())
        .where("device = '" + device + "'")
        .count();
  }

  @Tag("cover")
  @Test
  void stateExportAndEditReadAndChangeTheEntries() throws Exception {
    Path checkpoint = checkpoint(StateStores.ROCKSDB);
    String cp = checkpoint.toString();

    StateShiftCliTest.Run shown =
        cli("state", "--checkpoint", cp, "--where", "key.device = 'device-7'", "--json");
    assertThat(shown.exit()).as(shown.err()).isZero();
    JsonNode entries = shown.json().get("entries");
    assertThat(entries).hasSize(1);
    assertThat(entries.get(0).get("key").get("device").asText()).isEqualTo("device-7");
    assertThat(entries.get(0).get("value").get("count").asLong()).isEqualTo(batchCount("device-7"));
    StateShiftCliTest.Run table = cli("state", "--checkpoint", cp, "--limit", "3");
    assertThat(table.exit()).isZero();
    assertThat(table.out())
        .contains("partition_id", "key.device", "value.count", "first 3 entries");

    Path out = tmp.resolve("exported");
    StateShiftCliTest.Run exported =
        cli("export", "--checkpoint", cp, "--out", out.toString(), "--json");
    assertThat(exported.exit()).as(exported.err()).isZero();
    assertThat(exported.json().get("rows").asLong()).isEqualTo(20);
    long total =
        spark.read().parquet(out.toString()).selectExpr("sum(value.count)").first().getLong(0);
    assertThat(total).isEqualTo(200);
    StateShiftCliTest.Run again = cli("export", "--checkpoint", cp, "--out", out.toString());
    assertThat(again.exit()).isEqualTo(2);
    assertThat(again.err()).contains("exists already");

    Map<String, String> before = CheckpointDigest.of(checkpoint);
    StateShiftCliTest.Run dry =
        cli(
            "edit",
            "--checkpoint",
            cp,
            "--delete-where",
            "key.device IN ('device-1', 'device-2')",
            "--dry-run",
            "--json");
    assertThat(dry.exit()).as(dry.err()).isZero();
    assertThat(dry.json().get("matching").asLong()).isEqualTo(2);
    assertThat(dry.json().get("sampleKeys")).hasSize(2);
    assertThat(CheckpointDigest.of(checkpoint)).isEqualTo(before);

    StateShiftCliTest.Run bad =
        cli("edit", "--checkpoint", cp, "--delete-where", "key.devise = 'x'");
    assertThat(bad.exit()).isEqualTo(2);
    assertThat(bad.err()).contains("key.device string").doesNotContain("\tat ");
    assertThat(CheckpointDigest.of(checkpoint)).isEqualTo(before);

    StateShiftCliTest.Run edited =
        cli(
            "edit",
            "--checkpoint",
            cp,
            "--delete-where",
            "key.device IN ('device-1', 'device-2')",
            "--json");
    assertThat(edited.exit()).as(edited.err()).isZero();
    assertThat(edited.json().get("entriesBefore").asLong()).isEqualTo(20);
    assertThat(edited.json().get("entriesAfter").asLong()).isEqualTo(18);
    StateShiftCliTest.Run left = cli("state", "--checkpoint", cp, "--limit", "100", "--json");
    assertThat(left.json().get("shown").asInt()).isEqualTo(18);
    assertThat(left.out()).doesNotContain("\"device-1\"", "\"device-2\"");

    StateShiftCliTest.Run history = cli("history", "--checkpoint", cp);
    assertThat(history.out())
        .contains("edit", "key.device IN ('device-1', 'device-2')", "20 -> 18 entries");
    assertThat(history.out()).doesNotContain("count\":");
    StateShiftCliTest.Run historyJson = cli("history", "--checkpoint", cp, "--json");
    assertThat(historyJson.json().get("entries").findValuesAsText("change"))
        .anySatisfy(c -> assertThat(c).contains("20 -> 18 entries"));

    // rollback undoes the edit: the entries are back
    StateShiftCliTest.Run rollback = cli("rollback", "--checkpoint", cp);
    assertThat(rollback.exit()).as(rollback.err()).isZero();
    StateShiftCliTest.Run back = cli("state", "--checkpoint", cp, "--limit", "100", "--json");
    assertThat(back.json().get("shown").asInt()).isEqualTo(20);

    // values rewritten in place: an evolution to the same value with a fill
    StateShiftCliTest.Run scaled =
        cli(
            "evolve",
            "--checkpoint",
            cp,
            "--value-schema",
            "count BIGINT",
            "--fill",
            "count=CASE WHEN key.device = 'device-7' THEN value.count * 10 ELSE value.count END",
            "--assume-stopped");
    assertThat(scaled.exit()).as(scaled.err()).isZero();
    StateShiftCliTest.Run seven =
        cli("state", "--checkpoint", cp, "--where", "key.device = 'device-7'", "--json");
    assertThat(seven.json().get("entries").get(0).get("value").get("count").asLong())
        .isEqualTo(10 * batchCount("device-7"));
  }

  @Test
  void statelessAndAmbiguousReadsAreRefusedWithTheFix() {
    Path checkpoint = checkpoint(StateStores.HDFS);
    StateShiftCliTest.Run store =
        cli("state", "--checkpoint", checkpoint.toString(), "--store", "left");
    assertThat(store.exit()).isEqualTo(2);
    assertThat(store.err()).contains("no store 'left'", "[default]");
    StateShiftCliTest.Run operator =
        cli("state", "--checkpoint", checkpoint.toString(), "--operator", "3");
    assertThat(operator.exit()).isEqualTo(2);
    assertThat(operator.err()).contains("no stateful operator 3");
    StateShiftCliTest.Run missing = cli("state", "--checkpoint", tmp.resolve("nothing").toString());
    assertThat(missing.exit()).isEqualTo(2);
    Row any = spark.read().parquet(tmp.resolve("sink").toString()).first();
    assertThat(any).isNotNull();
  }
}
