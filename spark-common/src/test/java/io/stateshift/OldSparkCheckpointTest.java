package io.stateshift;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.stateshift.fixtures.OldSparkFixtures;
import io.stateshift.fixtures.OldSparkFixtures.Query;
import io.stateshift.testing.CheckpointDigest;
import io.stateshift.testing.CheckpointTrees;
import io.stateshift.testing.ProjectFiles;
import io.stateshift.testing.SparkTestSession;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.stream.Stream;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.streaming.StateOperatorProgress;
import org.apache.spark.sql.streaming.StreamingQueryProgress;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * Checkpoints written by Spark 3.5, 4.0 and 4.1 (committed fixtures, made by {@code
 * fixtures/regenerate} with those versions from Maven Central), picked up by Spark 4.2:
 * repartitioned, then continued over more input on 4.2; the whole output must equal the same query
 * run on 4.2 without interruption over the same input. Spark 3.5 writes no operator metadata: the
 * operator is derived from its state schema (see OperatorWithoutMetadata), and the placement the
 * derivation implies is checked key by key while reading.
 */
class OldSparkCheckpointTest {
  static final List<String> VERSIONS = List.of("3.5.8", "4.0.1", "4.1.1");
  static final int MORE_FILES = 3;
  static final String PROVIDER = "spark.sql.streaming.stateStore.providerClass";
  private static final Map<Query, List<String>> ORACLES = new ConcurrentHashMap<>();

  private final SparkSession spark = SparkTestSession.get();

  @TempDir Path tmp;

  /**
   * Every fixture once; per version, each provider is increased for one query, decreased for the
   * other.
   */
  static Stream<Arguments> fixtures() {
    List<Arguments> out = new ArrayList<>();
    for (String version : VERSIONS) {
      out.add(Arguments.of(version, Query.WINDOWED_COUNT, "hdfs", 5));
      out.add(Arguments.of(version, Query.WINDOWED_COUNT, "rocksdb", 2));
      out.add(Arguments.of(version, Query.DEDUP, "hdfs", 2));
      out.add(Arguments.of(version, Query.DEDUP, "rocksdb", 5));
    }
    return out.stream();
  }

  @ParameterizedTest(name = "Spark {0} {1} on {2}: 3 -> {3} partitions, continued on 4.2")
  @MethodSource("fixtures")
  void oldCheckpointIsRepartitionedAndContinuedOnSpark42(
      String version, Query query, String provider, int to) throws Exception {
    repartitionAndContinue(version, query, provider, to);
  }

  /**
   * transformWithState written by Spark 4.0.1 and 4.1.1 on RocksDB (value, list and map state and
   * event-time timers; lists merged as those versions merge them, which their offset logs do not
   * record), repartitioned and continued on this line.
   */
  @Tag("transform-with-state") // the lines whose stateshift moves its state (4.2)
  @ParameterizedTest(name = "Spark {0} transformWithState on RocksDB: 3 -> 5, continued on 4.2")
  @ValueSource(strings = {"4.0.1", "4.1.1"})
  void transformWithStateOfAnOlderSparkIsRepartitionedAndContinued(String version)
      throws Exception {
    repartitionAndContinue(version, Query.TRANSFORM_WITH_STATE, "rocksdb", 5);
  }

  private void repartitionAndContinue(String version, Query query, String provider, int to)
      throws Exception {
    Path input = tmp.resolve("input");
    Path fixture = copyFixture(version, query.folder(provider), input);
    Path checkpoint = fixture.resolve("checkpoint");
    Path sink = fixture.resolve("sink");
    writeMoreInput(input);

    // A copied checkpoint looks freshly written: the user knows its query is stopped.
    RepartitionResult result =
        StateShift.get(spark)
            .repartitionState(checkpoint.toString())
            .toPartitions(to)
            .assumeStopped()
            .execute();

    assertThat(result.fromPartitions()).isEqualTo(OldSparkFixtures.PARTITIONS);
    assertThat(result.stores())
        .allSatisfy(
            s -> {
              assertThat(s.rowsRead()).isPositive();
              assertThat(s.rowsWritten()).isEqualTo(s.rowsRead());
            });
    assertThat(StateShift.get(spark).verify(checkpoint.toString()).problems()).isEmpty();

    StreamingQueryProgress[] progress =
        OldSparkFixtures.runAvailable(spark, query, input, checkpoint, sink);

    assertThat(progress).isNotEmpty();
    for (StreamingQueryProgress p : progress) {
      for (StateOperatorProgress op : p.stateOperators()) {
        assertThat(op.numStateStoreInstances()).isEqualTo(to);
      }
    }
    assertThat(OldSparkFixtures.sinkRows(spark, sink)).containsExactlyElementsOf(oracle(query));
    if (query != Query.TRANSFORM_WITH_STATE) { // its per-variable check: TWS oracle test
      // Spark 4.2 has written operator metadata by now, so its statestore source can check
      // placement.
      StateAssertions.assertEveryKeyInItsSparkPartition(spark, checkpoint, result.batchId(), to);
    }
  }

  /**
   * A stream-stream join written by Spark 3.5, which writes no operator metadata for joins: derived
   * from its four stores, repartitioned, and continued on 4.2 to the uninterrupted output.
   */
  @ParameterizedTest(name = "Spark 3.5.8 join on {0}: 3 -> {1} partitions, continued on 4.2")
  @org.junit.jupiter.params.provider.CsvSource({"hdfs, 5", "rocksdb, 2"})
  void spark35JoinIsDerivedRepartitionedAndContinued(String provider, int to) throws Exception {
    Path input = tmp.resolve("input");
    Path fixture = copyFixture("3.5.8", Query.JOIN.folder(provider), input);
    Path checkpoint = fixture.resolve("checkpoint");
    Path sink = fixture.resolve("sink");
    assertThat(checkpoint.resolve("state/0/_metadata")).doesNotExist();
    writeMoreInput(input);

    RepartitionResult result =
        StateShift.get(spark)
            .repartitionState(checkpoint.toString())
            .toPartitions(to)
            .assumeStopped()
            .execute();

    assertThat(result.stores()).hasSize(4);
    assertThat(result.stores())
        .allSatisfy(s -> assertThat(s.rowsWritten()).isEqualTo(s.rowsRead()));
    assertThat(StateShift.get(spark).verify(checkpoint.toString()).problems()).isEmpty();
    StreamingQueryProgress[] progress =
        OldSparkFixtures.runAvailable(spark, Query.JOIN, input, checkpoint, sink);
    for (StreamingQueryProgress p : progress) {
      for (StateOperatorProgress op : p.stateOperators()) {
        assertThat(op.numStateStoreInstances()).isEqualTo(4L * to);
      }
    }
    assertThat(OldSparkFixtures.sinkRows(spark, sink))
        .containsExactlyElementsOf(oracle(Query.JOIN));
  }

  /**
   * Checkpoints written by Spark 3.5.8 and repartitioned 3 -> 5 by stateshift's own 3.5 line (on
   * 3.5.8; {@code fixtures/regenerate line-3.5}) continue on this line: the output equals the
   * uninterrupted run's, and the history the 3.5 line wrote reads here.
   */
  @ParameterizedTest(name = "Spark 3.5.8 {0}, repartitioned by the 3.5 line, continued here")
  @org.junit.jupiter.params.provider.ValueSource(
      strings = {"windowed-count-hdfs", "windowed-count-rocksdb", "join-rocksdb"})
  void checkpointChangedByThe35LineContinuesHere(String folder) throws Exception {
    Path input = tmp.resolve("input");
    Path fixture = copyFixture("3.5.8-changed-by-line-3.5", folder, input);
    Path checkpoint = fixture.resolve("checkpoint");
    writeMoreInput(input);
    Query query = folder.startsWith("join") ? Query.JOIN : Query.WINDOWED_COUNT;

    assertThat(StateShift.get(spark).history(checkpoint.toString()))
        .singleElement()
        .satisfies(h -> assertThat(h.toPartitions()).isEqualTo(5));
    StreamingQueryProgress[] progress =
        OldSparkFixtures.runAvailable(spark, query, input, checkpoint, fixture.resolve("sink"));
    assertThat(progress).isNotEmpty();
    long stores = query == Query.JOIN ? 4 : 1;
    for (StreamingQueryProgress p : progress) {
      for (StateOperatorProgress op : p.stateOperators()) {
        assertThat(op.numStateStoreInstances()).isEqualTo(stores * 5);
      }
    }
    assertThat(OldSparkFixtures.sinkRows(spark, fixture.resolve("sink")))
        .containsExactlyElementsOf(oracle(query));
  }

  /** Without a repartition, Spark 4.2 continues the old checkpoints too (the control case). */
  @Test
  void spark42ContinuesA35CheckpointUnchanged() throws Exception {
    Path input = tmp.resolve("input");
    Path fixture = copyFixture("3.5.8", Query.WINDOWED_COUNT.folder("rocksdb"), input);
    writeMoreInput(input);
    OldSparkFixtures.runAvailable(
        spark, Query.WINDOWED_COUNT, input, fixture.resolve("checkpoint"), fixture.resolve("sink"));
    assertThat(OldSparkFixtures.sinkRows(spark, fixture.resolve("sink")))
        .containsExactlyElementsOf(oracle(Query.WINDOWED_COUNT));
  }

  /**
   * A 3.5 checkpoint whose placement cannot be derived (here: a session-window key) is refused with
   * the fix, and left unchanged.
   */
  @Test
  void underivableOperatorWithoutMetadataIsRefusedWithTheFix() throws Exception {
    Path input = tmp.resolve("input");
    Path fixture = copyFixture("3.5.8", Query.WINDOWED_COUNT.folder("hdfs"), input);
    Path checkpoint = fixture.resolve("checkpoint");
    Path schema = checkpoint.resolve("state/0/0/_metadata/schema");
    Files.write(schema, renameWindowColumn(Files.readAllBytes(schema)));
    Map<String, String> before = CheckpointDigest.of(checkpoint);

    assertThatThrownBy(
            () ->
                StateShift.get(spark)
                    .repartitionState(checkpoint.toString())
                    .toPartitions(5)
                    .assumeStopped()
                    .execute())
        .isInstanceOf(StateShiftException.class)
        .hasMessageContaining("no operator metadata")
        .hasMessageContaining("session_window")
        .hasMessageContaining("Run the query for one batch on Spark 4.0 or later")
        .satisfies(e -> assertThat(((StateShiftException) e).reason().isBadInput()).isTrue());
    assertThat(CheckpointDigest.of(checkpoint)).isEqualTo(before);
  }

  /**
   * The derived placement is checked against the state itself: a 3.5 checkpoint whose keys do not
   * sit where the whole-key hash puts them (here two partition folders swapped) is refused before
   * anything changes.
   */
  @Test
  void stateThatContradictsTheDerivedPlacementIsRefused() throws Exception {
    Path input = tmp.resolve("input");
    Path fixture = copyFixture("3.5.8", Query.DEDUP.folder("hdfs"), input);
    Path checkpoint = fixture.resolve("checkpoint");
    Path one = checkpoint.resolve("state/0/1");
    Path two = checkpoint.resolve("state/0/2");
    Path swap = checkpoint.resolve("state/0/swap");
    Files.move(one, swap);
    Files.move(two, one);
    Files.move(swap, two);
    Map<String, String> before = CheckpointDigest.of(checkpoint);

    assertThatThrownBy(
            () ->
                StateShift.get(spark)
                    .repartitionState(checkpoint.toString())
                    .toPartitions(5)
                    .assumeStopped()
                    .execute())
        .isInstanceOf(StateShiftException.class)
        .hasMessageContaining("is not placed by its whole state key")
        .hasMessageContaining("Run the query for one batch on Spark 4.0 or later");
    assertThat(CheckpointDigest.of(checkpoint)).isEqualTo(before);
  }

  /**
   * The schema file is Spark's binary writeUTF format: renaming "window" to a same-length name
   * keeps it valid. "window" (6) and "session_window" (14) differ, so rename "device" instead would
   * not do; swap the whole key field name by rewriting its length-prefixed JSON string.
   */
  private static byte[] renameWindowColumn(byte[] schemaFile) {
    String text = new String(schemaFile, java.nio.charset.StandardCharsets.ISO_8859_1);
    int start = text.indexOf("{\"type\":\"struct\"");
    int lengthAt = start - 2; // writeUTF: a 2-byte length before the JSON
    int length = ((schemaFile[lengthAt] & 0xff) << 8) | (schemaFile[lengthAt + 1] & 0xff);
    String json = text.substring(start, start + length);
    String renamed = json.replaceFirst("\"name\":\"window\"", "\"name\":\"session_window\"");
    byte[] head = java.util.Arrays.copyOfRange(schemaFile, 0, lengthAt);
    byte[] tail = java.util.Arrays.copyOfRange(schemaFile, start + length, schemaFile.length);
    byte[] body = renamed.getBytes(java.nio.charset.StandardCharsets.ISO_8859_1);
    byte[] out = new byte[head.length + 2 + body.length + tail.length];
    System.arraycopy(head, 0, out, 0, head.length);
    out[head.length] = (byte) (body.length >> 8);
    out[head.length + 1] = (byte) body.length;
    System.arraycopy(body, 0, out, head.length + 2, body.length);
    System.arraycopy(tail, 0, out, head.length + 2 + body.length, tail.length);
    return out;
  }

  private void writeMoreInput(Path input) {
    for (int i = OldSparkFixtures.FIXTURE_FILES;
        i < OldSparkFixtures.FIXTURE_FILES + MORE_FILES;
        i++) {
      OldSparkFixtures.writeEvents(input, i);
    }
    int flush = OldSparkFixtures.FIXTURE_FILES + MORE_FILES;
    OldSparkFixtures.writeFlush(input, flush);
    OldSparkFixtures.writeFlush(input, flush + 1);
  }

  /** Copies a committed fixture (and its version's input) into the test's folder. */
  private Path copyFixture(String version, String folder, Path input) throws IOException {
    Path root =
        ProjectFiles.root()
            .resolve("spark-common/src/test/resources/old-checkpoints")
            .resolve(version);
    assertThat(root.resolve(folder)).as("fixture; run fixtures/regenerate").isDirectory();
    CheckpointTrees.copy(root.resolve("input"), input);
    Path copy = tmp.resolve(folder);
    CheckpointTrees.copy(root.resolve(folder), copy);
    OldSparkFixtures.relocate(copy, input);
    return copy;
  }

  /** The same query on Spark 4.2 over all the input, uninterrupted. */
  private List<String> oracle(Query query) {
    return ORACLES.computeIfAbsent(
        query,
        q -> {
          try {
            Path dir = tmp.resolve("oracle-" + q.name());
            Path input = dir.resolve("input");
            for (int i = 0; i < OldSparkFixtures.FIXTURE_FILES; i++) {
              OldSparkFixtures.writeEvents(input, i);
            }
            writeMoreInput(input);
            // the session's provider, unless the query runs on one only (transformWithState)
            String only = q.providers().size() == 1 ? q.providers().get(0) : null;
            String before = spark.conf().get(PROVIDER, null);
            if (only != null) {
              spark.conf().set(PROVIDER, OldSparkFixtures.providerClass(only));
            }
            try {
              OldSparkFixtures.runAvailable(
                  spark, q, input, dir.resolve("checkpoint"), dir.resolve("sink"));
            } finally {
              if (before == null) {
                spark.conf().unset(PROVIDER);
              } else {
                spark.conf().set(PROVIDER, before);
              }
            }
            List<String> rows = OldSparkFixtures.sinkRows(spark, dir.resolve("sink"));
            assertThat(rows).isNotEmpty();
            return rows;
          } catch (Exception e) {
            throw new IllegalStateException(e);
          }
        });
  }
}
