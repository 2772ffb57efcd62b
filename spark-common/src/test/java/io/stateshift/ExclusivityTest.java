package io.stateshift;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.stateshift.StateShiftException.Reason;
import io.stateshift.checkpoint.CheckpointFiles;
import io.stateshift.cli.StateShiftCli;
import io.stateshift.protocol.CheckpointLock;
import io.stateshift.testing.CheckpointDigest;
import io.stateshift.testing.ChildJvm;
import io.stateshift.testing.RunningQueryMain;
import io.stateshift.testing.SparkTestSession;
import io.stateshift.testing.StateStores;
import io.stateshift.testing.StatefulQueries;
import io.stateshift.testing.StreamRun;
import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.apache.spark.sql.SparkSession;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Exclusivity across processes: a query running in another JVM on the checkpoint refuses a
 * repartition or rollback with a clear error and leaves the checkpoint as it was, whether the query
 * holds stateshift's lease (started with StateShiftExtensions) or only shows in recent log writes
 * (started without); the lease of a killed query is released at once (its process on this host is
 * gone). And a query does not start while a repartition holds the checkpoint lock.
 */
class ExclusivityTest {
  // long enough that a renewal stalled by a loaded machine does not let the lease lapse
  static final long CHILD_LEASE_MS = 30_000;

  private final SparkSession spark = SparkTestSession.get();

  @TempDir Path tmp;

  @Test
  void aQueryWithTheExtensionInAnotherProcessHoldsALeaseThatExpiresWhenItIsKilled()
      throws Exception {
    StreamRun run = new StreamRun(spark, tmp.resolve("input"));
    run.writeEvents(0, 200, 30);
    run.writeEvents(1, 200, 30);
    run.runAvailable(
        StatefulQueries.WINDOWED_COUNT, checkpoint(), sink(), StateStores.HDFS.withPartitions(4));
    StateShift.get(spark).repartitionState(checkpoint().toString()).toPartitions(3).execute();

    Process child = startQuery(true, 0); // no new input: it runs no batch, so rollback is possible
    try {
      Map<String, String> before = withoutLease(CheckpointDigest.of(checkpoint()));
      String queryId =
          Files.readString(tmp.resolve("marker")).trim().replace("running, query id ", "");
      assertThat(tmp.resolve("checkpoint/_stateshift/query-lease")).exists();

      assertThatThrownBy(
              () ->
                  StateShift.get(spark)
                      .repartitionState(checkpoint().toString())
                      .toPartitions(5)
                      .execute())
          .isInstanceOfSatisfying(
              StateShiftException.class,
              e -> assertThat(e.reason()).isEqualTo(Reason.CHECKPOINT_IN_USE))
          .hasMessageContaining("Query " + queryId)
          .hasMessageContaining("in process " + child.pid() + "@")
          .hasMessageContaining("expires by itself in");
      assertThatThrownBy(
              () -> StateShift.get(spark).rollbackRepartition(checkpoint().toString(), true))
          .isInstanceOfSatisfying(
              StateShiftException.class,
              e -> assertThat(e.reason()).isEqualTo(Reason.CHECKPOINT_IN_USE))
          .hasMessageContaining("Query " + queryId);
      ByteArrayOutputStream err = new ByteArrayOutputStream();
      int exit =
          new StateShiftCli(
                  new PrintStream(new ByteArrayOutputStream()),
                  new PrintStream(err, true, StandardCharsets.UTF_8))
              .run(
                  new String[] {
                    "repartition",
                    "--checkpoint",
                    checkpoint().toString(),
                    "--partitions",
                    "5",
                    "--assume-stopped"
                  });
      assertThat(exit).isEqualTo(2);
      assertThat(err.toString(StandardCharsets.UTF_8))
          .contains("Query " + queryId)
          .contains("Stop the query");
      assertThat(withoutLease(CheckpointDigest.of(checkpoint())))
          .as("the refused attempts changed nothing")
          .isEqualTo(before);

      child.destroyForcibly(); // SIGKILL: the lease is not released
      assertThat(child.waitFor(1, TimeUnit.MINUTES)).isTrue();
      assertThat(tmp.resolve("checkpoint/_stateshift/query-lease")).exists();
    } finally {
      child.destroyForcibly();
    }
    // At once, long before the lease would expire: its holder ran on this host and is gone,
    // which also explains the recent log writes.
    long started = System.currentTimeMillis();
    RepartitionPlan undone = StateShift.get(spark).rollbackRepartition(checkpoint().toString());
    assertThat(System.currentTimeMillis() - started).isLessThan(CHILD_LEASE_MS);
    assertThat(undone.toPartitions()).isEqualTo(4);
    finishAndCheckAgainstOracle(run, 4);
  }

  @Test
  void aQueryWithoutTheExtensionInAnotherProcessIsRefusedByItsRecentWrites() throws Exception {
    StreamRun run = new StreamRun(spark, tmp.resolve("input"));
    run.writeEvents(0, 200, 30);
    run.writeEvents(1, 200, 30);
    run.runAvailable(
        StatefulQueries.WINDOWED_COUNT, checkpoint(), sink(), StateStores.HDFS.withPartitions(4));
    run.writeEvents(2, 200, 30);

    Process child = startQuery(false, 1); // runs the batch of file 2, then waits for more
    try {
      assertThat(tmp.resolve("checkpoint/_stateshift")).doesNotExist();
      Map<String, String> before = CheckpointDigest.of(checkpoint());
      assertThatThrownBy(
              () ->
                  StateShift.get(spark)
                      .repartitionState(checkpoint().toString())
                      .toPartitions(3)
                      .execute())
          .isInstanceOfSatisfying(
              StateShiftException.class,
              e -> assertThat(e.reason()).isEqualTo(Reason.CHECKPOINT_IN_USE))
          .hasMessageContaining("may still be running")
          .hasMessageMatching("(?s).*commits/\\d+ was written \\d+ s ago.*")
          .hasMessageContaining("--assume-stopped");
      assertThat(CheckpointDigest.of(checkpoint()))
          .as("the refused attempt changed nothing")
          .isEqualTo(before);
    } finally {
      child.destroyForcibly();
      child.waitFor(1, TimeUnit.MINUTES);
    }
    // The user knows the query is stopped now.
    RepartitionResult result =
        StateShift.get(spark)
            .repartitionState(checkpoint().toString())
            .toPartitions(3)
            .assumeStopped()
            .execute();
    assertThat(result.toPartitions()).isEqualTo(3);
    assertThat(StateShift.get(spark).verify(checkpoint().toString()).problems()).isEmpty();
    finishAndCheckAgainstOracle(run, 3);
  }

  @Test
  void aQueryDoesNotStartWhileARepartitionHoldsTheLock() {
    StreamRun run = new StreamRun(spark, tmp.resolve("input"));
    run.writeEvents(0, 200, 30);
    run.runAvailable(
        StatefulQueries.WINDOWED_COUNT, checkpoint(), sink(), StateStores.HDFS.withPartitions(4));
    run.writeEvents(1, 200, 30);
    CheckpointFiles files =
        CheckpointFiles.at(checkpoint().toString(), spark.sparkContext().hadoopConfiguration());
    Map<String, String> before;
    try (CheckpointLock held = CheckpointLock.acquire(files, "repartition to 8", 600_000)) {
      before = CheckpointDigest.of(checkpoint());
      assertThatThrownBy(
              () ->
                  run.runAvailable(
                      StatefulQueries.WINDOWED_COUNT,
                      checkpoint(),
                      sink(),
                      StateStores.HDFS.withPartitions(4)))
          .hasStackTraceContaining("(repartition to 8), so the query cannot start on it now");
      assertThat(CheckpointDigest.of(checkpoint())).isEqualTo(before);
    }
    run.runAvailable(
        StatefulQueries.WINDOWED_COUNT, checkpoint(), sink(), StateStores.HDFS.withPartitions(4));
    assertThat(checkpoint().resolve("commits/1")).exists();
  }

  /** Starts the windowed count in another JVM and waits until it runs; see RunningQueryMain. */
  private Process startQuery(boolean extension, int batches) throws Exception {
    Process child =
        ChildJvm.start(
            tmp.resolve("child.log"),
            List.of("-Dspark.stateshift.query.leaseMs=" + CHILD_LEASE_MS),
            RunningQueryMain.class.getName(),
            tmp.resolve("input").toString(),
            checkpoint().toString(),
            sink().toString(),
            StateStores.HDFS.name(),
            "7",
            Boolean.toString(extension),
            "running",
            "0",
            tmp.resolve("marker").toString(),
            Integer.toString(batches));
    long deadline = System.currentTimeMillis() + TimeUnit.MINUTES.toMillis(3);
    while (!Files.exists(tmp.resolve("marker"))) {
      if (!child.isAlive() || System.currentTimeMillis() > deadline) {
        child.destroyForcibly();
        throw new AssertionError(
            "the query in the child JVM did not start: "
                + Files.readString(tmp.resolve("child.log")));
      }
      Thread.sleep(200);
    }
    return child;
  }

  /** Runs the rest of the input and the flush files and compares with an uninterrupted run. */
  private void finishAndCheckAgainstOracle(StreamRun run, int partitions) {
    for (int i = 0; i < 4; i++) {
      if (!Files.exists(tmp.resolve(String.format("input/events-%04d.json", i)))) {
        run.writeEvents(i, 200, 30);
      }
    }
    run.writeFlush(4);
    var last =
        run.runAvailable(
            StatefulQueries.WINDOWED_COUNT,
            checkpoint(),
            sink(),
            StateStores.HDFS.withPartitions(7));
    assertThat(StreamRun.stateInstances(last)).containsOnly((long) partitions);

    StreamRun oracle = new StreamRun(spark, tmp.resolve("oracle-input"));
    for (int i = 0; i < 4; i++) {
      oracle.writeEvents(i, 200, 30);
    }
    oracle.writeFlush(4);
    oracle.runAvailable(
        StatefulQueries.WINDOWED_COUNT,
        tmp.resolve("oracle-checkpoint"),
        tmp.resolve("oracle-sink"),
        StateStores.HDFS.withPartitions(2));
    assertThat(run.sinkRows(sink(), StatefulQueries.WINDOWED_COUNT))
        .containsExactlyElementsOf(
            oracle.sinkRows(tmp.resolve("oracle-sink"), StatefulQueries.WINDOWED_COUNT));
  }

  private static Map<String, String> withoutLease(Map<String, String> digest) {
    Map<String, String> out = new java.util.TreeMap<>(digest);
    out.remove("_stateshift/query-lease");
    out.keySet().removeIf(k -> k.startsWith("_stateshift/.query-lease")); // a renewal in flight
    return out;
  }

  private Path checkpoint() {
    return tmp.resolve("checkpoint");
  }

  private Path sink() {
    return tmp.resolve("sink");
  }
}
