package io.stateshift;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.stateshift.spark.state.DeltaChanges;
import io.stateshift.spark.state.StoreMaintenance;
import io.stateshift.testing.CheckpointDigest;
import io.stateshift.testing.SparkTestSession;
import io.stateshift.testing.StateStores;
import io.stateshift.testing.StatefulQueries;
import io.stateshift.testing.StreamRun;
import io.stateshift.testing.TestSets;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.stream.Stream;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.streaming.StreamingQueryProgress;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * A repartition that starts from a layout prepared earlier ({@code prepare}, possibly while the
 * query ran) and replays the batches committed since must leave a checkpoint whose restarted query
 * writes exactly what an uninterrupted run writes; where the prepared layout cannot be used, the
 * full path runs and says why. A windowed count on the HDFS-backed store and on RocksDB with
 * changelog checkpointing: the batches after the prepared one add windows, update counts and evict
 * windows behind the watermark.
 */
class PreparedRepartitionTest {
  private static final int FILES_BEFORE = 2;
  private static final int FILES_TAIL = 3;
  private static final int FILES_AFTER = 2;
  private static final int ALL_FILES = FILES_BEFORE + FILES_TAIL + FILES_AFTER;
  private static final int ROWS = 300;
  private static final int DEVICES = 40;
  private static final StatefulQueries QUERY = StatefulQueries.WINDOWED_COUNT;

  private final SparkSession spark = SparkTestSession.get();

  @TempDir Path tmp;

  @Test
  void preparedWhileRunningThenTailReplayedWritesTheUninterruptedOutput() throws Exception {
    StreamRun run = new StreamRun(spark, tmp.resolve("input"));
    Path checkpoint = tmp.resolve("checkpoint");
    Path sink = tmp.resolve("sink");
    write(run, 0, FILES_BEFORE);
    run.runAvailable(QUERY, checkpoint, sink, StateStores.HDFS.withPartitions(4));

    // prepare while the query runs its next batches
    long before = lastCommitted(checkpoint);
    write(run, FILES_BEFORE, FILES_TAIL);
    CompletableFuture<PrepareResult> prepared =
        CompletableFuture.supplyAsync(
            () -> {
              awaitFile(checkpoint.resolve("commits/" + (before + 1)));
              return StateShift.get(spark)
                  .prepareState(checkpoint.toString())
                  .toPartitions(6)
                  .execute();
            });
    run.runAvailable(QUERY, checkpoint, sink, StateStores.HDFS.withPartitions(4));
    PrepareResult prepare = prepared.get();
    assertThat(prepare.prepared()).isPresent();
    long v = prepare.prepared().get().preparedBatch();
    long last = lastCommitted(checkpoint);
    assertThat(v).isBetween(before + 1, last);
    assertNothingOutsidePrepared(checkpoint);

    RepartitionResult result = repartition(checkpoint, 6);
    assertThat(result.path().prepared()).isTrue();
    assertThat(result.path().preparedBatch()).isEqualTo(v);
    assertThat(result.path().lastCommittedBatch()).isEqualTo(last);
    if (v < last) {
      assertThat(result.path().rowsReplayed()).isPositive();
    }
    assertThat(checkpoint.resolve("_stateshift/prepared")).doesNotExist();
    StateAssertions.assertEveryKeyInItsSparkPartition(spark, checkpoint, result.batchId(), 6);

    finishAndCompare(run, checkpoint, sink);
  }

  /**
   * Both stores under {@code -Pextended}; by default the store-specific cases take turns:
   * HDFS-backed here, RocksDB with changelog checkpointing in the damaged-file case (its zip
   * digest).
   */
  static Stream<Arguments> stores(int inDefault) {
    return TestSets.subset(
        List.of(Arguments.of(StateStores.HDFS), Arguments.of(StateStores.ROCKSDB_CHANGELOG)),
        i -> i == inDefault);
  }

  static Stream<Arguments> movedForwardStores() {
    return stores(0);
  }

  static Stream<Arguments> damagedFileStores() {
    return stores(1);
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("movedForwardStores")
  void preparedWhileStoppedThenMovedForwardIsUsed(StateStores store) throws IOException {
    StreamRun run = new StreamRun(spark, tmp.resolve("input"));
    Path checkpoint = tmp.resolve("checkpoint");
    Path sink = tmp.resolve("sink");
    write(run, 0, FILES_BEFORE);
    run.runAvailable(QUERY, checkpoint, sink, store.withPartitions(4));
    PrepareResult first = prepare(checkpoint, 3);
    write(run, FILES_BEFORE, 1);
    run.runAvailable(QUERY, checkpoint, sink, store.withPartitions(4));
    PrepareResult second = prepare(checkpoint, 3); // moves V forward, replacing the first
    assertThat(second.removed()).isEqualTo(1);
    assertThat(second.prepared().get().preparedBatch())
        .isGreaterThan(first.prepared().get().preparedBatch());
    write(run, FILES_BEFORE + 1, FILES_TAIL - 1);
    run.runAvailable(QUERY, checkpoint, sink, store.withPartitions(4));
    // the tail adds and updates windows and evicts those behind the watermark
    long v = second.prepared().get().preparedBatch();
    DeltaChanges.Counts tail =
        DeltaChanges.of(spark, checkpoint, v + 2, lastCommitted(checkpoint) + 1);
    assertThat(tail.puts()).isPositive();
    assertThat(tail.removals()).isPositive();

    // a tail above the driver's budget (1 byte): read by tasks and shuffled instead
    RepartitionResult result;
    String budget = io.stateshift.config.StateShiftConf.PREPARED_DRIVER_TAIL_BYTES.key();
    spark.conf().set(budget, "1");
    try {
      result = repartition(checkpoint, 3);
    } finally {
      spark.conf().unset(budget);
    }
    assertThat(result.path().prepared()).isTrue();
    assertThat(result.path().preparedBatch()).isEqualTo(second.prepared().get().preparedBatch());
    assertThat(result.path().lastCommittedBatch()).isEqualTo(result.plan().lastCommittedBatch());
    assertThat(result.path().rowsReplayed()).isPositive();
    finishAndCompare(run, checkpoint, sink, store);
  }

  /**
   * Right after a repartition of a RocksDB checkpoint with changelog checkpointing, whose last
   * batch stateshift wrote as a snapshot without a changelog file, prepare works from that snapshot
   * (it once blamed changelog checkpointing, which was on); the restart's repartition uses the
   * prepared layout and the output equals an uninterrupted run's.
   */
  @Test
  void preparedRightAfterARepartitionWorksFromItsSnapshot() throws IOException {
    StreamRun run = new StreamRun(spark, tmp.resolve("input"));
    Path checkpoint = tmp.resolve("checkpoint");
    Path sink = tmp.resolve("sink");
    write(run, 0, FILES_BEFORE);
    run.runAvailable(QUERY, checkpoint, sink, StateStores.ROCKSDB_CHANGELOG.withPartitions(4));
    repartition(checkpoint, 6);
    PrepareResult prepared = prepare(checkpoint, 3);
    assertThat(prepared.prepared().get().fromPartitions()).isEqualTo(6);
    assertThat(prepared.prepared().get().preparedBatch()).isEqualTo(lastCommitted(checkpoint));
    write(run, FILES_BEFORE, FILES_TAIL);
    run.runAvailable(QUERY, checkpoint, sink, StateStores.ROCKSDB_CHANGELOG.withPartitions(4));
    RepartitionResult result = repartition(checkpoint, 3);
    assertThat(result.path().prepared()).as(result.path().toString()).isTrue();
    assertThat(result.path().rowsReplayed()).isPositive();
    finishAndCompare(run, checkpoint, sink, StateStores.ROCKSDB_CHANGELOG);
  }

  @Test
  void otherCountOrOtherQueryFallsBackToTheFullPath() throws IOException {
    StreamRun run = new StreamRun(spark, tmp.resolve("input"));
    Path checkpoint = tmp.resolve("checkpoint");
    Path sink = tmp.resolve("sink");
    write(run, 0, FILES_BEFORE);
    run.runAvailable(QUERY, checkpoint, sink, StateStores.HDFS.withPartitions(4));
    prepare(checkpoint, 6);

    // another query over the same input, given this checkpoint's prepared layout
    Path other = tmp.resolve("other-checkpoint");
    run.runAvailable(QUERY, other, tmp.resolve("other-sink"), StateStores.HDFS.withPartitions(4));
    copyTree(checkpoint.resolve("_stateshift/prepared"), other.resolve("_stateshift/prepared"));
    RepartitionResult otherResult = repartition(other, 6);
    assertThat(otherResult.path().prepared()).isFalse();
    assertThat(otherResult.path().reason()).contains("prepared for query");

    write(run, FILES_BEFORE, FILES_TAIL);
    run.runAvailable(QUERY, checkpoint, sink, StateStores.HDFS.withPartitions(4));
    RepartitionResult result = repartition(checkpoint, 5); // not the prepared count
    assertThat(result.path().prepared()).isFalse();
    assertThat(result.path().reason()).contains("prepared for 6 partitions, not 5");
    assertThat(checkpoint.resolve("_stateshift/prepared")).doesNotExist();
    finishAndCompare(run, checkpoint, sink);
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("damagedFileStores")
  void damagedPreparedFileFallsBackAndCancelRemovesTheLayout(StateStores store) throws IOException {
    StreamRun run = new StreamRun(spark, tmp.resolve("input"));
    Path checkpoint = tmp.resolve("checkpoint");
    Path sink = tmp.resolve("sink");
    write(run, 0, FILES_BEFORE);
    run.runAvailable(QUERY, checkpoint, sink, store.withPartitions(4));
    prepare(checkpoint, 6);
    PrepareResult cancelled = StateShift.get(spark).prepareState(checkpoint.toString()).cancel();
    assertThat(cancelled.removed()).isEqualTo(1);
    assertThat(checkpoint.resolve("_stateshift")).doesNotExist();

    prepare(checkpoint, 6);
    // same length, other bytes: only the digest can tell
    Path file;
    try (Stream<Path> walk = Files.walk(checkpoint.resolve("_stateshift/prepared"))) {
      file =
          walk.filter(p -> p.toString().endsWith(store == StateStores.HDFS ? ".snapshot" : ".zip"))
              .filter(p -> p.toFile().length() > 40)
              .findFirst()
              .orElseThrow();
    }
    byte[] bytes = Files.readAllBytes(file);
    bytes[bytes.length / 2] ^= 0x55;
    Files.write(file, bytes);
    Files.deleteIfExists(file.resolveSibling("." + file.getFileName() + ".crc"));
    write(run, FILES_BEFORE, FILES_TAIL);
    run.runAvailable(QUERY, checkpoint, sink, store.withPartitions(4));

    RepartitionResult result = repartition(checkpoint, 6);
    assertThat(result.path().prepared()).isFalse();
    assertThat(result.path().reason()).contains("prepared file");
    finishAndCompare(run, checkpoint, sink, store);
  }

  static Stream<Arguments> bothStores() {
    return Stream.of(Arguments.of(StateStores.HDFS), Arguments.of(StateStores.ROCKSDB_CHANGELOG));
  }

  /**
   * Each new partition's base is version N+1, a name the old partition's own snapshot of N+1 may
   * hold already (Spark's maintenance writes one every few versions): the switch moves the old one
   * aside, the new layout writes the uninterrupted output, and a rollback (on a copy made before
   * the repartition) restores the old layout byte for byte.
   */
  @ParameterizedTest(name = "{0}")
  @MethodSource("bothStores")
  void oldSnapshotsOfTheBaseVersionAreMovedAsideAndBackOnRollback(StateStores store)
      throws IOException {
    StreamRun run = new StreamRun(spark, tmp.resolve("input"));
    Path checkpoint = tmp.resolve("checkpoint");
    Path sink = tmp.resolve("sink");
    write(run, 0, FILES_BEFORE);
    run.runAvailable(QUERY, checkpoint, sink, store.withPartitions(4));
    prepare(checkpoint, 6);
    write(run, FILES_BEFORE, FILES_TAIL);
    runWithSnapshotOfLastVersion(spark, run, checkpoint, sink, store, 4);
    long base = lastCommitted(checkpoint) + 1;
    String snapshot = base + (store == StateStores.HDFS ? ".snapshot" : ".zip");
    assertThat(checkpoint.resolve("state/0/0/" + snapshot)).exists();
    byte[] old = Files.readAllBytes(checkpoint.resolve("state/0/0/" + snapshot));

    Path copy = tmp.resolve("copy");
    copyTree(checkpoint, copy);
    Map<String, String> before = withoutStateshiftFolder(CheckpointDigest.of(copy));
    RepartitionResult copied =
        StateShift.get(spark)
            .repartitionState(copy.toString())
            .toPartitions(6)
            .assumeStopped()
            .execute();
    assertThat(copied.path().prepared()).isTrue();
    StateShift.get(spark).rollbackRepartition(copy.toString(), true);
    assertThat(withoutStateshiftFolder(CheckpointDigest.of(copy))).isEqualTo(before);

    RepartitionResult result = repartition(checkpoint, 6);
    assertThat(result.path().prepared()).isTrue();
    assertThat(result.path().rowsReplayed()).isPositive();
    assertThat(Files.readAllBytes(checkpoint.resolve("state/0/0/" + snapshot))).isNotEqualTo(old);
    try (Stream<Path> retired = Files.walk(checkpoint.resolve("_stateshift/attempts"))) {
      assertThat(retired.filter(p -> p.endsWith("retired/state/0/0/" + snapshot)).toList())
          .singleElement()
          .satisfies(p -> assertThat(Files.readAllBytes(p)).isEqualTo(old));
    }
    assertThat(StateShift.get(spark).verify(checkpoint.toString()).problems()).isEmpty();
    finishAndCompare(run, checkpoint, sink, store);
  }

  /**
   * Runs the rest of the input with each old partition left holding a snapshot of the last version,
   * as Spark's maintenance writes one every few versions in a long-running query: RocksDB's
   * maintenance run as each task commits, with a snapshot of every version; the HDFS-backed store's
   * maintenance run by its own provider afterwards.
   */
  static void runWithSnapshotOfLastVersion(
      SparkSession spark, StreamRun run, Path checkpoint, Path sink, StateStores store, int n) {
    Map<String, String> conf = new HashMap<>(store.withPartitions(n));
    if (store != StateStores.HDFS) {
      conf.put("spark.sql.streaming.stateStore.unloadOnCommit", "true");
      conf.put("spark.sql.streaming.stateStore.minDeltasForSnapshot", "1");
    }
    run.runAvailable(QUERY, checkpoint, sink, conf);
    if (store == StateStores.HDFS) {
      StoreMaintenance.run(spark, checkpoint, 1, 100);
    } else {
      // before Spark 4.1 the snapshot waits for the maintenance
      StoreMaintenance.uploadQueuedSnapshots(checkpoint);
    }
  }

  private static Map<String, String> withoutStateshiftFolder(Map<String, String> digest) {
    Map<String, String> out = new java.util.TreeMap<>(digest);
    out.keySet().removeIf(k -> k.startsWith("_stateshift"));
    return out;
  }

  @Test
  void tailFilesRemovedByMaintenanceFallBackToTheFullPathAndSayWhy() {
    StreamRun run = new StreamRun(spark, tmp.resolve("input"));
    Path checkpoint = tmp.resolve("checkpoint");
    Path sink = tmp.resolve("sink");
    write(run, 0, FILES_BEFORE);
    run.runAvailable(QUERY, checkpoint, sink, StateStores.HDFS.withPartitions(4));
    long v = prepare(checkpoint, 6).prepared().get().preparedBatch();
    write(run, FILES_BEFORE, 2);
    run.runAvailable(QUERY, checkpoint, sink, StateStores.HDFS.withPartitions(4));
    // Spark's maintenance, by its own provider: a snapshot of the last version, nothing removed
    StoreMaintenance.run(spark, checkpoint, 1, 100);
    write(run, FILES_BEFORE + 2, FILES_TAIL - 2);
    run.runAvailable(QUERY, checkpoint, sink, StateStores.HDFS.withPartitions(4));
    // retaining one version: the files before that snapshot go, the tail's first delta among them
    StoreMaintenance.run(spark, checkpoint, 1, 1);
    assertThat(checkpoint.resolve("state/0/0/" + (v + 2) + ".delta")).doesNotExist();

    RepartitionResult result = repartition(checkpoint, 6);
    assertThat(result.path().prepared()).isFalse();
    assertThat(result.path().reason())
        .contains(".delta of batch " + (v + 1) + " is gone")
        .contains("maintenance");
    assertThat(result.path().lastCommittedBatch()).isEqualTo(result.plan().lastCommittedBatch());
    assertThat(checkpoint.resolve("_stateshift/prepared")).doesNotExist();
    finishAndCompare(run, checkpoint, sink);
  }

  /**
   * The restart with {@code spark.sql.streaming.stateStore.partitions} set to the prepared count: a
   * changed query is refused with everything unchanged; the unchanged query's on-demand repartition
   * starts from the prepared layout and its progress says so.
   */
  @Test
  void onDemandRestartUsesThePreparedLayout() {
    SparkSession session = spark.newSession();
    StreamRun run = new StreamRun(session, tmp.resolve("input"));
    Path checkpoint = tmp.resolve("checkpoint");
    Path sink = tmp.resolve("sink");
    write(run, 0, FILES_BEFORE);
    run.runAvailable(QUERY, checkpoint, sink, StateStores.HDFS.withPartitions(4));
    long v = StateAssertions.preparedBatch(session, checkpoint, 6);
    write(run, FILES_BEFORE, FILES_TAIL);
    run.runAvailable(QUERY, checkpoint, sink, StateStores.HDFS.withPartitions(4));

    write(run, FILES_BEFORE + FILES_TAIL, FILES_AFTER);
    run.writeFlush(ALL_FILES);
    Map<String, String> conf = new HashMap<>(StateStores.HDFS.withPartitions(4));
    conf.put(StateShiftExtensions.STATE_PARTITIONS, "6");
    // a changed query is refused before any state moves: checkpoint and prepared layout intact
    var before = CheckpointDigest.of(checkpoint);
    assertThatThrownBy(
            () ->
                run.runAvailable(
                    StatefulQueries.GROUPED_COUNT,
                    checkpoint,
                    tmp.resolve("changed-sink"),
                    new HashMap<>(conf)))
        .hasStackTraceContaining("differ from those in checkpoint");
    assertThat(CheckpointDigest.of(checkpoint)).isEqualTo(before);
    List<StreamingQueryProgress> progress = run.runAvailable(QUERY, checkpoint, sink, conf);

    assertThat(StreamRun.stateInstances(progress)).containsOnly(6L);
    RepartitionResult result =
        StateShiftExtensions.lastRepartition(progress.get(0).id()).orElseThrow();
    assertThat(result.path().prepared()).isTrue();
    assertThat(result.path().preparedBatch()).isEqualTo(v);
    assertThat(result.path().lastCommittedBatch()).isGreaterThan(v);
    assertThat(result.path().rowsReplayed()).isPositive();
    assertThat(progress.get(0).durationMs())
        .containsKey(StateShiftExtensions.PROGRESS_KEY)
        .containsKey(StateShiftExtensions.PROGRESS_PREPARED_KEY);
    assertThat(progress.get(0).durationMs().get(StateShiftExtensions.PROGRESS_PREPARED_KEY))
        .isLessThanOrEqualTo(progress.get(0).durationMs().get(StateShiftExtensions.PROGRESS_KEY));
    assertThat(checkpoint.resolve("_stateshift/prepared")).doesNotExist();
    assertThat(run.sinkRows(sink, QUERY)).containsExactlyElementsOf(oracle());
  }

  @Test
  void rocksDbWithoutChangelogIsRefusedWithTheCheckpointUnchanged() {
    StreamRun run = new StreamRun(spark, tmp.resolve("input"));
    Path checkpoint = tmp.resolve("checkpoint");
    write(run, 0, 1);
    run.runAvailable(QUERY, checkpoint, tmp.resolve("sink"), StateStores.ROCKSDB.withPartitions(4));
    var before = CheckpointDigest.of(checkpoint);
    assertThatThrownBy(
            () ->
                StateShift.get(spark).prepareState(checkpoint.toString()).toPartitions(6).execute())
        .isInstanceOfSatisfying(
            StateShiftException.class,
            e ->
                assertThat(e.reason()).isEqualTo(StateShiftException.Reason.UNSUPPORTED_CHECKPOINT))
        .hasMessageContaining("prepare on RocksDB needs changelog checkpointing")
        .hasMessageContaining("changelogCheckpointing.enabled=true")
        .hasMessageContaining("Nothing was written");
    assertThat(CheckpointDigest.of(checkpoint)).isEqualTo(before);
  }

  /**
   * Prepared with changelog checkpointing on, the tail run with it off: RocksDB logged none of the
   * tail's batches, so the repartition takes the full path and says why.
   */
  @Test
  void rocksDbTailWithoutChangelogFallsBackAndSaysWhy() {
    StreamRun run = new StreamRun(spark, tmp.resolve("input"));
    Path checkpoint = tmp.resolve("checkpoint");
    Path sink = tmp.resolve("sink");
    write(run, 0, FILES_BEFORE);
    run.runAvailable(QUERY, checkpoint, sink, StateStores.ROCKSDB_CHANGELOG.withPartitions(4));
    long v = prepare(checkpoint, 6).prepared().get().preparedBatch();
    write(run, FILES_BEFORE, FILES_TAIL);
    run.runAvailable(QUERY, checkpoint, sink, StateStores.ROCKSDB.withPartitions(4));

    RepartitionResult result = repartition(checkpoint, 6);
    assertThat(result.path().prepared()).isFalse();
    assertThat(result.path().reason())
        .contains((v + 2) + ".changelog of batch " + (v + 1) + " is not there")
        .contains("changelog checkpointing is off");
    assertThat(checkpoint.resolve("_stateshift/prepared")).doesNotExist();
    finishAndCompare(run, checkpoint, sink, StateStores.ROCKSDB);
  }

  // ---- helpers ----

  private PrepareResult prepare(Path checkpoint, int partitions) {
    PrepareResult result =
        StateShift.get(spark)
            .prepareState(checkpoint.toString())
            .toPartitions(partitions)
            .execute();
    assertThat(result.prepared()).isPresent();
    assertThat(result.prepared().get().rows()).isPositive();
    return result;
  }

  private RepartitionResult repartition(Path checkpoint, int partitions) {
    RepartitionResult result =
        StateShift.get(spark)
            .repartitionState(checkpoint.toString())
            .toPartitions(partitions)
            .execute();
    assertThat(result.toPartitions()).isEqualTo(partitions);
    assertThat(result.stores())
        .allSatisfy(s -> assertThat(s.rowsWritten()).isEqualTo(s.rowsRead()));
    return result;
  }

  private static void write(StreamRun run, int first, int count) {
    for (int i = first; i < first + count; i++) {
      run.writeEvents(i, ROWS, DEVICES);
    }
  }

  /** The rest of the input on the new layout, then the sink against an uninterrupted run. */
  private void finishAndCompare(StreamRun run, Path checkpoint, Path sink) {
    finishAndCompare(run, checkpoint, sink, StateStores.HDFS);
  }

  private void finishAndCompare(StreamRun run, Path checkpoint, Path sink, StateStores store) {
    write(run, FILES_BEFORE + FILES_TAIL, FILES_AFTER);
    run.writeFlush(ALL_FILES);
    run.runAvailable(QUERY, checkpoint, sink, store.withPartitions(4));
    assertThat(run.sinkRows(sink, QUERY)).containsExactlyElementsOf(oracle());
  }

  private List<String> oracle() {
    Path dir = tmp.resolve("oracle");
    StreamRun run = new StreamRun(spark, dir.resolve("input"));
    write(run, 0, ALL_FILES);
    run.writeFlush(ALL_FILES);
    run.runAvailable(
        QUERY, dir.resolve("checkpoint"), dir.resolve("sink"), StateStores.HDFS.withPartitions(5));
    List<String> rows = run.sinkRows(dir.resolve("sink"), QUERY);
    assertThat(rows).isNotEmpty();
    return rows;
  }

  /** Prepare writes only under _stateshift/prepared/ (and nothing of its own remains elsewhere). */
  private static void assertNothingOutsidePrepared(Path checkpoint) throws IOException {
    try (Stream<Path> walk = Files.walk(checkpoint.resolve("_stateshift"))) {
      assertThat(walk.filter(Files::isRegularFile).map(checkpoint::relativize))
          .allSatisfy(p -> assertThat(p.toString()).startsWith("_stateshift/prepared/"));
    }
  }

  static long lastCommitted(Path checkpoint) throws IOException {
    try (Stream<Path> files = Files.list(checkpoint.resolve("commits"))) {
      return files
          .map(p -> p.getFileName().toString())
          .filter(n -> n.matches("\\d+"))
          .mapToLong(Long::parseLong)
          .max()
          .orElse(-1);
    }
  }

  private static void awaitFile(Path file) {
    long deadline = System.currentTimeMillis() + 60_000;
    while (!Files.exists(file) && System.currentTimeMillis() < deadline) {
      sleep(20);
    }
  }

  private static void sleep(long ms) {
    try {
      Thread.sleep(ms);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException(e);
    }
  }

  private static void copyTree(Path from, Path to) throws IOException {
    try (Stream<Path> walk = Files.walk(from)) {
      for (Path p : walk.toList()) {
        Path target = to.resolve(from.relativize(p).toString());
        if (Files.isDirectory(p)) {
          Files.createDirectories(target);
        } else {
          Files.copy(p, target);
        }
      }
    }
  }
}
