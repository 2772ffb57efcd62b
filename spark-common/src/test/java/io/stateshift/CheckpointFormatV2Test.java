package io.stateshift;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.stateshift.protocol.FailPoints;
import io.stateshift.testing.ChildJvm;
import io.stateshift.testing.SparkTestSession;
import io.stateshift.testing.StateStores;
import io.stateshift.testing.StatefulQueries;
import io.stateshift.testing.StreamRun;
import io.stateshift.testing.TestSets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.stream.Stream;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.streaming.StreamingQueryProgress;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * State checkpoint format v2 ({@code checkpointFormatVersion=2}, RocksDB only): every state version
 * is a file named by a unique id and the commit log names the ids. A repartitioned v2 checkpoint
 * must load by those ids, commit the ids of the new versions, and continue with exactly the
 * uninterrupted output.
 */
@Tag("checkpoint-v2") // state checkpoint format v2, which Spark 3.5 lacks
class CheckpointFormatV2Test {
  static final String FORMAT = "spark.sql.streaming.stateStore.checkpointFormatVersion";
  private static final Map<StatefulQueries, List<String>> ORACLES = new ConcurrentHashMap<>();
  private static final ObjectMapper JSON = new ObjectMapper();

  private final SparkSession spark = SparkTestSession.get();

  @TempDir Path tmp;

  /** By default an increase and a decrease, each store, two operators; all under -Pextended. */
  static Stream<Arguments> matrix() {
    return TestSets.subset(
        List.of(
            Arguments.of(StatefulQueries.WINDOWED_COUNT, StateStores.ROCKSDB, 4, 8),
            Arguments.of(StatefulQueries.WINDOWED_COUNT, StateStores.ROCKSDB, 8, 3),
            Arguments.of(StatefulQueries.WINDOWED_COUNT, StateStores.ROCKSDB_CHANGELOG, 4, 8),
            Arguments.of(StatefulQueries.WINDOWED_COUNT, StateStores.ROCKSDB_CHANGELOG, 8, 3),
            Arguments.of(
                StatefulQueries.DEDUP_THEN_WINDOWED_COUNT, StateStores.ROCKSDB_CHANGELOG, 3, 5)),
        i -> i != 1 && i != 2);
  }

  static Map<String, String> v2(StateStores store, int partitions) {
    Map<String, String> conf = new HashMap<>(store.withPartitions(partitions));
    conf.put(FORMAT, "2");
    // A snapshot every 2 versions, so changelog runs also load through snapshot + changelogs.
    conf.put("spark.sql.streaming.stateStore.minDeltasForSnapshot", "2");
    return conf;
  }

  @ParameterizedTest(name = "{0} on {1} with format v2: {2} -> {3} partitions")
  @MethodSource("matrix")
  void repartitionedV2CheckpointWritesExactlyTheUninterruptedOutput(
      StatefulQueries query, StateStores store, int from, int to) throws Exception {
    StreamRun run = new StreamRun(spark, tmp.resolve("input"));
    Path checkpoint = tmp.resolve("checkpoint");
    Path sink = tmp.resolve("sink");
    for (int i = 0; i < 3; i++) {
      run.writeEvents(i, 300, 40);
    }
    run.runAvailable(query, checkpoint, sink, v2(store, from));
    long base = lastCommit(checkpoint);
    assertThat(uniqueIds(checkpoint, base)).as("a v2 checkpoint").isNotNull();

    RepartitionResult result =
        StateShift.get(spark).repartitionState(checkpoint.toString()).toPartitions(to).execute();

    assertThat(result.stores())
        .allSatisfy(
            s -> {
              assertThat(s.rowsRead()).isPositive();
              assertThat(s.rowsWritten()).isEqualTo(s.rowsRead());
            });
    assertNewCommitNamesTheNewFiles(checkpoint, result.batchId(), to);
    // Spark's statestore source loads by the commit log's ids only when the session uses v2, and
    // 4.1's state-metadata source reads a v2 commit log only then.
    spark.conf().set(FORMAT, "2");
    try {
      StateAssertions.assertEveryKeyInItsSparkPartition(spark, checkpoint, result.batchId(), to);
      StateAssertions.assertMetadataReports(spark, checkpoint, to);
    } finally {
      spark.conf().unset(FORMAT);
    }
    assertThat(StateShift.get(spark).verify(checkpoint.toString()).problems()).isEmpty();

    continueAndCheck(run, query, store, checkpoint, sink, from, to);
  }

  /** SIGKILL after the new files are in place but before commits/N+1: the restart finishes it. */
  @Test
  void killedBeforeTheCommitIsFinishedWithTheNewIds() throws Exception {
    StatefulQueries query = StatefulQueries.WINDOWED_COUNT;
    StateStores store = StateStores.ROCKSDB_CHANGELOG;
    StreamRun run = new StreamRun(spark, tmp.resolve("input"));
    Path checkpoint = tmp.resolve("checkpoint");
    Path sink = tmp.resolve("sink");
    for (int i = 0; i < 3; i++) {
      run.writeEvents(i, 300, 40);
    }
    run.runAvailable(query, checkpoint, sink, v2(store, 5));
    long base = lastCommit(checkpoint);
    int exit =
        ChildJvm.runCli(
            tmp.resolve("child.log"),
            List.of("-D" + FailPoints.PROPERTY + "=published"),
            "repartition",
            "--checkpoint",
            checkpoint.toString(),
            "--partitions",
            "3",
            "--assume-stopped"); // the query just ran in this JVM, which a child process cannot
    // know
    assertThat(exit)
        .as("exit code; log: %s", Files.readString(tmp.resolve("child.log")))
        .isEqualTo(137);
    assertThat(checkpoint.resolve("commits/" + (base + 1))).doesNotExist();
    // No wait: the lock's holder ran on this host and is gone, so it is taken over at once.
    // The restart (StateShiftExtensions is in the session) finishes the attempt first.
    continueAndCheck(run, query, store, checkpoint, sink, 5, 3);
    assertNewCommitNamesTheNewFiles(checkpoint, base + 1, 3);
  }

  /**
   * The prepared path under format v2: a layout prepared after two files, a tail of one. The new
   * versions are named by fresh ids (the prepared state as L+1, the tail's log as L+2 with its
   * lineage back to L+1), commits/L+1 names the logs' ids, and the query loads by them and writes
   * the uninterrupted output.
   */
  @Test
  void preparedLayoutIsReplayedUnderFormatV2() throws Exception {
    StatefulQueries query = StatefulQueries.WINDOWED_COUNT;
    StateStores store = StateStores.ROCKSDB_CHANGELOG;
    StreamRun run = new StreamRun(spark, tmp.resolve("input"));
    Path checkpoint = tmp.resolve("checkpoint");
    Path sink = tmp.resolve("sink");
    run.writeEvents(0, 300, 40);
    run.writeEvents(1, 300, 40);
    run.runAvailable(query, checkpoint, sink, v2(store, 4));
    long v = StateAssertions.preparedBatch(spark, checkpoint, 6);
    run.writeEvents(2, 300, 40);
    run.runAvailable(query, checkpoint, sink, v2(store, 4));
    long base = lastCommit(checkpoint);
    assertThat(base).isGreaterThan(v);

    RepartitionResult result =
        StateShift.get(spark).repartitionState(checkpoint.toString()).toPartitions(6).execute();
    assertThat(result.path().prepared()).as("path: %s", result.path()).isTrue();
    assertThat(result.path().preparedBatch()).isEqualTo(v);
    assertThat(result.path().rowsReplayed()).isPositive();
    JsonNode ids = uniqueIds(checkpoint, result.batchId());
    JsonNode before = uniqueIds(checkpoint, base);
    ids.properties()
        .forEach(
            op -> {
              assertThat(op.getValue().size()).isEqualTo(6);
              for (int p = 0; p < 6; p++) {
                String id = op.getValue().get(p).get(0).asText();
                Path dir = checkpoint.resolve("state/" + op.getKey() + "/" + p);
                assertThat(dir.resolve((result.batchId() + 1) + "_" + id + ".changelog")).exists();
                assertThat(before.toString()).doesNotContain(id);
              }
            });
    spark.conf().set(FORMAT, "2");
    try {
      StateAssertions.assertEveryKeyInItsSparkPartition(spark, checkpoint, result.batchId(), 6);
    } finally {
      spark.conf().unset(FORMAT);
    }
    assertThat(StateShift.get(spark).verify(checkpoint.toString()).problems()).isEmpty();

    continueAndCheck(run, query, store, checkpoint, sink, 4, 6);
  }

  /** The on-demand path (conf at restart) under format v2. */
  @Test
  void onDemandRepartitionAtRestartKeepsFormatV2() throws Exception {
    StatefulQueries query = StatefulQueries.WINDOWED_COUNT;
    StateStores store = StateStores.ROCKSDB;
    StreamRun run = new StreamRun(spark, tmp.resolve("input"));
    Path checkpoint = tmp.resolve("checkpoint");
    Path sink = tmp.resolve("sink");
    for (int i = 0; i < 3; i++) {
      run.writeEvents(i, 300, 40);
    }
    run.runAvailable(query, checkpoint, sink, v2(store, 3));
    long base = lastCommit(checkpoint);
    for (int i = 3; i < 6; i++) {
      run.writeEvents(i, 300, 40);
    }
    run.writeFlush(6);
    Map<String, String> conf = v2(store, 3);
    conf.put("spark.sql.streaming.stateStore.partitions", "6");
    List<StreamingQueryProgress> progress = run.runAvailable(query, checkpoint, sink, conf);
    assertThat(StreamRun.stateInstances(progress)).containsOnly(6L);
    assertNewCommitNamesTheNewFiles(checkpoint, base + 1, 6);
    assertThat(run.sinkRows(sink, query)).containsExactlyElementsOf(oracle(query));
  }

  private void continueAndCheck(
      StreamRun run,
      StatefulQueries query,
      StateStores store,
      Path checkpoint,
      Path sink,
      int from,
      int to)
      throws Exception {
    for (int i = 3; i < 6; i++) {
      run.writeEvents(i, 300, 40);
    }
    run.writeFlush(6);
    List<StreamingQueryProgress> progress =
        run.runAvailable(query, checkpoint, sink, v2(store, from));
    assertThat(progress).isNotEmpty();
    assertThat(StreamRun.stateInstances(progress)).containsOnly((long) to);
    assertThat(run.sinkRows(sink, query)).containsExactlyElementsOf(oracle(query));
    // The batches after the repartition committed v2 ids too, for the new partition count.
    JsonNode last = uniqueIds(checkpoint, lastCommit(checkpoint));
    assertThat(last).isNotNull();
    last.properties().forEach(op -> assertThat(op.getValue().size()).isEqualTo(to));
  }

  /**
   * commits/N+1 names, for every operator and new partition, an id whose snapshot file exists
   * (version N+2), and no old id.
   */
  private void assertNewCommitNamesTheNewFiles(Path checkpoint, long batch, int partitions)
      throws Exception {
    JsonNode ids = uniqueIds(checkpoint, batch);
    JsonNode before = uniqueIds(checkpoint, batch - 1);
    assertThat(ids).isNotNull();
    assertThat(Files.readString(checkpoint.resolve("commits/" + batch)))
        .startsWith(
            Files.readString(checkpoint.resolve("commits/" + (batch - 1)))
                .substring(0, 3)); // same commit log version line
    assertThat(ids.size()).isEqualTo(before.size());
    ids.properties()
        .forEach(
            op -> {
              assertThat(op.getValue().size()).isEqualTo(partitions);
              for (int p = 0; p < partitions; p++) {
                String id = op.getValue().get(p).get(0).asText();
                Path zip =
                    checkpoint.resolve(
                        "state/" + op.getKey() + "/" + p + "/" + (batch + 1) + "_" + id + ".zip");
                assertThat(zip).exists();
                assertThat(before.toString()).doesNotContain(id);
              }
            });
  }

  private static long lastCommit(Path checkpoint) throws Exception {
    try (var files = Files.list(checkpoint.resolve("commits"))) {
      return files
          .map(p -> p.getFileName().toString())
          .filter(n -> n.matches("\\d+"))
          .mapToLong(Long::parseLong)
          .max()
          .orElseThrow();
    }
  }

  private static JsonNode uniqueIds(Path checkpoint, long batch) throws Exception {
    String text = Files.readString(checkpoint.resolve("commits/" + batch));
    JsonNode node = JSON.readTree(text.substring(text.indexOf('\n') + 1)).get("stateUniqueIds");
    return node == null || node.isNull() ? null : node;
  }

  /** The same query over the same files, uninterrupted (format v1, HDFS-backed store). */
  private List<String> oracle(StatefulQueries query) {
    return ORACLES.computeIfAbsent(
        query,
        q -> {
          Path dir = tmp.resolve("oracle-" + q.name());
          StreamRun run = new StreamRun(spark, dir.resolve("input"));
          for (int i = 0; i < 6; i++) {
            run.writeEvents(i, 300, 40);
          }
          run.writeFlush(6);
          run.runAvailable(
              q,
              dir.resolve("checkpoint"),
              dir.resolve("sink"),
              StateStores.HDFS.withPartitions(2));
          List<String> rows = run.sinkRows(dir.resolve("sink"), q);
          assertThat(rows).isNotEmpty();
          return rows;
        });
  }
}
