package io.stateshift;

import static org.assertj.core.api.Assertions.assertThat;

import io.stateshift.testing.S3Server;
import io.stateshift.testing.SparkTestSession;
import io.stateshift.testing.StateStores;
import io.stateshift.testing.StatefulQueries;
import io.stateshift.testing.StreamRun;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import java.util.TreeMap;
import java.util.stream.Stream;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.statistics.IOStatisticsSupport;
import org.apache.spark.sql.SparkSession;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * What a repartition costs in requests on S3 at Spark's default shape, 200 -> 64 partitions: the
 * checkpoint is built on local disk, uploaded to the S3 API on loopback ({@link S3Server}) and
 * repartitioned there; {@link RepartitionResult#storeRequests} (S3A's own count of HTTP requests)
 * stays within a bound per state file of the checkpoint, and the same repartition of the local copy
 * gives the same rows. The requests by kind and both timings are printed for the performance notes.
 */
@Tag("extended") // two 200-partition checkpoints: minutes on 2 cores; mvn -B test -Pextended
class S3RequestCostTest {
  /**
   * Requests per state file of the checkpoint, and a constant for its logs and the protocol.
   * Measured: 3.0 per file in all on the HDFS-backed store, 3.2 on RocksDB, of which about 160 are
   * the protocol's own, whatever the partition count (docs/object-stores-and-clusters.md).
   */
  private static final int PER_STATE_FILE = 3;

  /**
   * Requests per checksum file of Spark's ({@code <file>.crc} beside a version zip or a delta file:
   * Spark 4.1 writes them by default at any checkpoint format, 4.2 only at format v2): never read
   * (Spark checks none of a v1 checkpoint's on load), one copy when the old state moves, one PUT
   * for each new zip's or delta's own.
   */
  private static final int PER_CHECKSUM_FILE = 2;

  private static final int CONSTANT = 200;

  private static S3Server s3;
  private final SparkSession spark = SparkTestSession.get();

  @TempDir Path tmp;

  @BeforeAll
  static void startS3(@TempDir Path dir) throws Exception {
    s3 = S3Server.startForTestSession(dir);
  }

  @AfterAll
  static void stopS3() throws Exception {
    if (s3 != null) {
      s3.closeForTestSession();
    }
  }

  @ParameterizedTest(name = "{0} state on s3a, 200 -> 64: requests bounded per state file")
  @EnumSource(
      value = StateStores.class,
      names = {"HDFS", "ROCKSDB"})
  void repartitionRequestsStayWithinABoundPerStateFile(StateStores store) throws Exception {
    StreamRun run = new StreamRun(spark, tmp.resolve("input"));
    run.writeEvents(0, 4000, 2000);
    Path local = tmp.resolve("local");
    run.runAvailable(
        StatefulQueries.GROUPED_COUNT, local, tmp.resolve("sink"), store.withPartitions(200));
    String remote = "cost/" + store.name().toLowerCase();
    Configuration conf = spark.sparkContext().hadoopConfiguration();
    s3.upload(local, remote, conf);
    long stateFiles = stateFiles(local.resolve("state"), false);
    long checksumFiles = stateFiles(local.resolve("state"), true);
    FileSystem fs = s3.fileSystem(conf);
    Map<String, Long> before = counters(fs);

    long started = System.nanoTime();
    RepartitionResult onS3 =
        StateShift.get(spark)
            .repartitionState(s3.uri(remote))
            .toPartitions(64)
            .assumeStopped()
            .execute();
    long s3Millis = (System.nanoTime() - started) / 1_000_000;
    Map<String, Long> requests = new TreeMap<>();
    counters(fs)
        .forEach(
            (k, v) -> {
              long d = v - before.getOrDefault(k, 0L);
              if (d != 0
                  && (k.endsWith("_request") || k.endsWith("_requests"))
                  && !k.equals("store_io_request")) {
                requests.put(k, d);
              }
            });
    started = System.nanoTime();
    RepartitionResult onDisk =
        StateShift.get(spark)
            .repartitionState(local.toString())
            .toPartitions(64)
            .assumeStopped()
            .execute();
    long localMillis = (System.nanoTime() - started) / 1_000_000;
    System.out.printf(
        "%s 200 -> 64: %d state files (and %d of Spark's checksum files), %d requests (%s); s3a %d"
            + " ms %s, local disk %d ms %s%n",
        store,
        stateFiles,
        checksumFiles,
        onS3.storeRequests(),
        requests,
        s3Millis,
        onS3.phaseMillis(),
        localMillis,
        onDisk.phaseMillis());

    assertThat(onS3.storeRequests())
        .as(
            "requests for %d state files and %d checksum files: %s",
            stateFiles, checksumFiles, requests)
        .isPositive()
        .isLessThanOrEqualTo(
            PER_STATE_FILE * stateFiles + PER_CHECKSUM_FILE * checksumFiles + CONSTANT);
    assertThat(onS3.stores()).allSatisfy(s -> assertThat(s.rowsWritten()).isEqualTo(s.rowsRead()));
    assertThat(onS3.stores().stream().mapToLong(RepartitionResult.StoreMove::rowsWritten).sum())
        .isEqualTo(
            onDisk.stores().stream().mapToLong(RepartitionResult.StoreMove::rowsWritten).sum())
        .isPositive();
    StateAssertions.assertEveryKeyInItsSparkPartition(spark, s3.uri(remote), onS3.batchId(), 64);
  }

  private static Map<String, Long> counters(FileSystem fs) {
    return new TreeMap<>(IOStatisticsSupport.retrieveIOStatistics(fs).counters());
  }

  /**
   * The state files of a local checkpoint, or Spark's checksum files among them ({@code
   * <file>.crc}, uploaded with the rest), never Hadoop's local checksum side files ({@code
   * .<file>.crc}, which {@link S3Server#upload} leaves out).
   */
  private static long stateFiles(Path state, boolean sparkChecksums) throws Exception {
    try (Stream<Path> walk = Files.walk(state)) {
      return walk.filter(Files::isRegularFile)
          .map(p -> p.getFileName().toString())
          .filter(name -> !(name.startsWith(".") && name.endsWith(".crc")))
          .filter(name -> name.endsWith(".crc") == sparkChecksums)
          .count();
    }
  }
}
