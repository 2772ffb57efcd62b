package io.stateshift.spark.state;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.stateshift.StateShift;
import io.stateshift.StateShiftException;
import io.stateshift.StateShiftExtensions;
import io.stateshift.protocol.FailPoints;
import io.stateshift.testing.CheckpointDigest;
import io.stateshift.testing.SparkTestSession;
import io.stateshift.testing.StateStores;
import io.stateshift.testing.StatefulQueries;
import io.stateshift.testing.StreamRun;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.streaming.StreamingQueryProgress;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.rocksdb.Env;
import org.rocksdb.Priority;

/**
 * A repartition inside a user's application leaves the JVM as it found it: Spark's static {@code
 * InProcessDeletes.flagValue()} and the sizes of RocksDB's process-wide background pools are the
 * same after an on-demand repartition, and after a failed one, as before.
 */
class JvmSideEffectsTest {
  @TempDir Path tmp;

  private final SparkSession spark = SparkTestSession.get();

  /** What a repartition may change in the JVM while its tasks run. */
  private record JvmState(boolean isUnix, int lowThreads, int highThreads) {
    static JvmState now() {
      Env env = Env.getDefault();
      return new JvmState(
          InProcessDeletes.flagValue(),
          env.getBackgroundThreads(Priority.LOW),
          env.getBackgroundThreads(Priority.HIGH));
    }
  }

  @Test
  void compactionPoolHasAThreadPerCoreWhileATaskHoldsItThenItsSizeBefore() {
    Env env = Env.getDefault();
    int before = env.getBackgroundThreads(Priority.LOW);
    CompactionThreads.forEveryCore();
    assertThat(env.getBackgroundThreads(Priority.LOW)).as("outside a task").isEqualTo(before);
    CompactionThreads.acquire();
    CompactionThreads.acquire();
    CompactionThreads.forEveryCore();
    int cores = Runtime.getRuntime().availableProcessors();
    assertThat(env.getBackgroundThreads(Priority.LOW)).isEqualTo(Math.max(before, cores));
    CompactionThreads.release();
    assertThat(env.getBackgroundThreads(Priority.LOW))
        .as("one task still runs")
        .isEqualTo(Math.max(before, cores));
    CompactionThreads.release();
    assertThat(env.getBackgroundThreads(Priority.LOW)).isEqualTo(before);
    assertThatThrownBy(CompactionThreads::release).isInstanceOf(IllegalStateException.class);
  }

  @Test
  void anOnDemandRepartitionLeavesTheJvmAsItWas() {
    StreamRun run = new StreamRun(spark, tmp.resolve("input"));
    for (int i = 0; i < 3; i++) {
      run.writeEvents(i, 300, 40);
    }
    Path checkpoint = tmp.resolve("checkpoint");
    Path sink = tmp.resolve("sink");
    // The user's query has run on RocksDB in this JVM before (RocksDB sized its pools for it).
    run.runAvailable(
        StatefulQueries.WINDOWED_COUNT, checkpoint, sink, StateStores.ROCKSDB.withPartitions(4));
    for (int i = 3; i < 6; i++) {
      run.writeEvents(i, 300, 40);
    }
    run.writeFlush(6);
    JvmState before = JvmState.now();

    // 4 -> 2: each new partition ingests two old ones' files and compacts them
    Map<String, String> conf = new HashMap<>(StateStores.ROCKSDB.withPartitions(4));
    conf.put(StateShiftExtensions.STATE_PARTITIONS, "2");
    List<StreamingQueryProgress> progress =
        run.runAvailable(StatefulQueries.WINDOWED_COUNT, checkpoint, sink, conf);

    assertThat(progress).isNotEmpty();
    assertThat(progress.get(0).durationMs()).containsKey(StateShiftExtensions.PROGRESS_KEY);
    assertThat(StreamRun.stateInstances(progress)).containsOnly(2L);
    assertThat(JvmState.now()).isEqualTo(before);

    StreamRun oracle = new StreamRun(spark, tmp.resolve("input"));
    Path oracleSink = tmp.resolve("oracle-sink");
    oracle.runAvailable(
        StatefulQueries.WINDOWED_COUNT,
        tmp.resolve("oracle-checkpoint"),
        oracleSink,
        StateStores.ROCKSDB.withPartitions(4));
    assertThat(run.sinkRows(sink, StatefulQueries.WINDOWED_COUNT))
        .isNotEmpty()
        .containsExactlyElementsOf(oracle.sinkRows(oracleSink, StatefulQueries.WINDOWED_COUNT));
  }

  @Test
  void aRepartitionWhoseWriteTaskFailsLeavesTheJvmAndTheCheckpointAsTheyWere() {
    StreamRun run = new StreamRun(spark, tmp.resolve("input"));
    run.writeEvents(0, 300, 40);
    Path checkpoint = tmp.resolve("checkpoint");
    run.runAvailable(
        StatefulQueries.WINDOWED_COUNT,
        checkpoint,
        tmp.resolve("sink"),
        StateStores.ROCKSDB.withPartitions(4));
    Map<String, String> files = CheckpointDigest.of(checkpoint);
    JvmState before = JvmState.now();

    FailPoints.observe(
        point -> {
          if (point.equals("staging-task")) { // inside the last write task, after the others
            throw new IllegalStateException("injected failure in a write task");
          }
        });
    try {
      assertThatThrownBy(
              () ->
                  StateShift.get(spark)
                      .repartitionState(checkpoint.toString())
                      .toPartitions(2)
                      .assumeStopped()
                      .execute())
          .isInstanceOf(StateShiftException.class)
          .hasStackTraceContaining("injected failure in a write task");
    } finally {
      FailPoints.observe(null);
    }

    assertThat(JvmState.now()).isEqualTo(before);
    assertThat(CheckpointDigest.of(checkpoint)).isEqualTo(files);
  }
}
