package io.stateshift;

import static org.assertj.core.api.Assertions.assertThat;

import io.stateshift.checkpoint.CheckpointFiles;
import io.stateshift.testing.CrashTestInput;
import io.stateshift.testing.StateStores;
import io.stateshift.testing.StatefulQueries;
import io.stateshift.testing.StreamRun;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.EnumMap;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;
import org.apache.hadoop.fs.FileSystem;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.streaming.StreamingQueryProgress;

/**
 * What the crash suites share: the input files and the uninterrupted oracle, built once; each
 * store's base checkpoint (the first two input files, {@link CrashSafetyTest#FROM} partitions, on
 * local disk), built once and copied for each case; and the check after a crash: the query
 * restarted, repartitioned again to completion, run to the end, its whole output the oracle's.
 *
 * <p>The input folder is one for every case (the file source's log names its files by absolute
 * path), reset to the first two files by each case; cases run one after another.
 */
final class CrashCases {
  private final SparkSession spark;
  private final Path shared;
  private Path template;
  private List<String> oracle;
  private final Map<StateStores, Path> bases = new EnumMap<>(StateStores.class);

  /** Cases in {@code shared}, a folder that lives as long as the test class. */
  CrashCases(SparkSession spark, Path shared) {
    this.spark = spark;
    this.shared = shared;
  }

  /** The input folder, reset to the first two files, and a run of the query over it. */
  StreamRun newRun() throws IOException {
    oracle();
    resetInput();
    return new StreamRun(spark, input());
  }

  Path input() {
    return shared.resolve("input");
  }

  void resetInput() throws IOException {
    if (Files.exists(input())) {
      try (Stream<Path> files = Files.list(input())) {
        for (Path file : (Iterable<Path>) files::iterator) {
          Files.delete(file);
        }
      }
    }
    addInput(0);
    addInput(1);
  }

  void addInput(int index) throws IOException {
    oracle();
    String name = String.format("events-%04d.json", index);
    Files.createDirectories(input());
    Files.copy(template.resolve(name), input().resolve(name));
  }

  /** The input files (four slices of events and two flush files) and the oracle, built once. */
  synchronized List<String> oracle() {
    if (oracle == null) {
      CrashTestInput built = CrashTestInput.build(spark, shared.resolve("oracle"));
      oracle = built.oracle();
      template = built.input();
    }
    return oracle;
  }

  /**
   * The store's base: a folder with {@code checkpoint} (after the first two input files, {@link
   * CrashSafetyTest#FROM} partitions) and {@code sink}, built once.
   */
  synchronized Path base(StateStores store) throws IOException {
    oracle();
    Path base = bases.get(store);
    if (base == null) {
      base = shared.resolve("base-" + store);
      resetInput();
      new StreamRun(spark, input())
          .runAvailable(
              StatefulQueries.WINDOWED_COUNT,
              base.resolve("checkpoint"),
              base.resolve("sink"),
              store.withPartitions(CrashSafetyTest.FROM));
      bases.put(store, base);
    }
    return base;
  }

  /**
   * Restarts the query on {@code checkpoint} (on {@code fs}; with StateShiftExtensions, as in
   * production, no partition setting), which finishes or undoes an interrupted attempt and must run
   * with {@code expected} partitions; then repartitions again to completion; then checks the whole
   * output in {@code sink} against the uninterrupted oracle.
   */
  void restartAndCheck(
      StreamRun run, StateStores store, String checkpoint, FileSystem fs, Path sink, int expected)
      throws IOException {
    addInput(2);
    List<StreamingQueryProgress> restarted =
        run.runAvailable(StatefulQueries.WINDOWED_COUNT, checkpoint, sink, store.withPartitions(7));
    assertThat(StreamRun.stateInstances(restarted))
        .as("state partitions after the restart")
        .containsOnly((long) expected);
    assertThat(fs.exists(new org.apache.hadoop.fs.Path(checkpoint + "/_stateshift/journal")))
        .isFalse();
    assertThat(
            fs.exists(new org.apache.hadoop.fs.Path(checkpoint + "/_stateshift/journal.previous")))
        .isFalse();
    // Operator metadata v1 survives every failure with the count the query runs with.
    assertThat(fs.exists(new org.apache.hadoop.fs.Path(checkpoint + "/state/0/_metadata/metadata")))
        .isEqualTo(io.stateshift.spark.state.StateSources.OPERATOR_METADATA);
    StateAssertions.assertMetadataReports(spark, checkpoint, expected);

    int next = expected == CrashSafetyTest.TO ? CrashSafetyTest.AGAIN : CrashSafetyTest.TO;
    var change = StateShift.get(spark).repartitionState(checkpoint).toPartitions(next);
    // a store that cannot be locked (S3A before hadoop-aws 3.4.2) is changed as its users do it
    boolean lockable =
        !"s3a".equals(fs.getScheme())
            || fs.hasPathCapability(
                new org.apache.hadoop.fs.Path(checkpoint), CheckpointFiles.CONDITIONAL_CREATE);
    RepartitionResult again = (lockable ? change : change.assumeStopped()).execute();
    assertThat(again.toPartitions()).isEqualTo(next);
    assertThat(StateShift.get(spark).verify(checkpoint).problems()).isEmpty();
    addInput(3);
    addInput(4);
    addInput(5);
    List<StreamingQueryProgress> last =
        run.runAvailable(StatefulQueries.WINDOWED_COUNT, checkpoint, sink, store.withPartitions(7));
    assertThat(StreamRun.stateInstances(last)).containsOnly((long) next);
    assertThat(run.sinkRows(sink, StatefulQueries.WINDOWED_COUNT))
        .containsExactlyElementsOf(oracle());
  }
}
