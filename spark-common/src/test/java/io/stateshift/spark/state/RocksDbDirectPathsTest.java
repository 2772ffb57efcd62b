package io.stateshift.spark.state;

import static org.assertj.core.api.Assertions.assertThat;

import io.stateshift.checkpoint.Checkpoint;
import io.stateshift.checkpoint.CheckpointFiles;
import io.stateshift.checkpoint.StateLayout;
import io.stateshift.checkpoint.StoreSpec;
import io.stateshift.spark.line.LineCalls;
import io.stateshift.spark.line.StateCalls;
import io.stateshift.testing.SparkTestSession;
import io.stateshift.testing.StateStores;
import io.stateshift.testing.StatefulQueries;
import io.stateshift.testing.StreamRun;
import java.io.File;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Enumeration;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.stream.Stream;
import java.util.zip.ZipEntry;
import java.util.zip.ZipFile;
import org.apache.hadoop.conf.Configuration;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.execution.streaming.state.ReadStateStore;
import org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider;
import org.apache.spark.sql.execution.streaming.state.StateStoreConf;
import org.apache.spark.sql.execution.streaming.state.StateStoreId;
import org.apache.spark.sql.execution.streaming.state.StateStoreProvider;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.rocksdb.RocksIterator;

/**
 * The SST exchange's two ways around Spark's RocksDB provider: reading a version's snapshot
 * read-only, and committing a new version straight from SST files. The oracle for both is Spark's
 * provider itself: its load of the same version, and its own commit of the same file.
 */
class RocksDbDirectPathsTest {
  @TempDir Path tmp;

  private StateLayout layout;
  private StoreSpec spec;
  private StateStoreConf storeConf;
  private Configuration hadoopConf;
  private String liveRoot;
  private long version;

  @BeforeEach
  void checkpoint() throws Exception {
    SparkSession spark = SparkTestSession.get();
    spark.streams(); // the state store coordinator
    StreamRun run = new StreamRun(spark, tmp.resolve("input"));
    for (int batch = 0; batch < 3; batch++) { // several SST files per partition
      run.writeEvents(batch, 6_000, 50);
    }
    Path checkpoint = tmp.resolve("checkpoint");
    run.runAvailable(
        StatefulQueries.DEDUP,
        checkpoint,
        tmp.resolve("sink"),
        StateStores.ROCKSDB.withPartitions(2));
    layout =
        StateLayout.read(
            spark,
            Checkpoint.load(
                CheckpointFiles.at(checkpoint.toString(), spark.sessionState().newHadoopConf())),
            true);
    spec = layout.stores().get(0);
    storeConf = io.stateshift.spark.state.StateStores.storeConf(layout.storeConf());
    hadoopConf = layout.checkpoint().files().conf();
    liveRoot = layout.checkpoint().files().path("state").toString();
    version = layout.lastCommitted() + 1;
  }

  @Test
  void readOnlySnapshotHoldsWhatSparksLoadHoldsAndChangesNothing() throws Exception {
    Map<String, String> sparks = readThroughSpark(liveRoot, version);
    assertThat(sparks).hasSizeGreaterThan(1_000);
    Map<String, Long> before = listing(tmp.resolve("checkpoint"));

    Map<String, String> ours;
    try (RocksDbTaskScope scope = RocksDbTaskScope.open(liveRoot, spec, storeConf, hadoopConf)) {
      StateStoreId store = new StateStoreId(liveRoot, spec.operatorId(), 0, spec.storeName());
      try (RocksDbSnapshotReader snapshot = openDirectly(scope, store, version)) {
        assertThat(snapshot).as("a version with its own zip is read directly").isNotNull();
        ours = entries(snapshot.db());
      }
      assertThat(openDirectly(scope, store, version + 1))
          .as("no snapshot of that version: the provider's")
          .isNull();
    }
    assertThat(ours).isEqualTo(sparks);
    assertThat(listing(tmp.resolve("checkpoint")))
        .as("the checkpoint is unchanged")
        .isEqualTo(before);
  }

  @Test
  void aTruncatedStateFileIsNamedNotRead() throws Exception {
    Path ssts =
        Path.of(
            new StateStoreId(liveRoot, spec.operatorId(), 0, spec.storeName())
                .storeCheckpointLocation()
                .toUri()
                .getPath(),
            "SSTs");
    Path victim;
    try (Stream<Path> files = Files.list(ssts)) {
      victim =
          files.filter(f -> f.getFileName().toString().endsWith(".sst")).findFirst().orElseThrow();
    }
    byte[] bytes = Files.readAllBytes(victim);
    Files.write(victim, java.util.Arrays.copyOf(bytes, bytes.length - 1));
    try (RocksDbTaskScope scope = RocksDbTaskScope.open(liveRoot, spec, storeConf, hadoopConf)) {
      StateStoreId store = new StateStoreId(liveRoot, spec.operatorId(), 0, spec.storeName());
      org.assertj.core.api.Assertions.assertThatThrownBy(() -> openDirectly(scope, store, version))
          .isInstanceOf(IllegalStateException.class)
          .hasMessageContaining(victim.getFileName().toString())
          .hasMessageContaining((bytes.length - 1) + " bytes");
    }
  }

  @Test
  void directCommitWritesWhatSparksOwnCommitWrites() throws Exception {
    Map<String, String> source = readThroughSpark(liveRoot, version);
    File runs = tmp.resolve("partition-0.runs").toFile();
    List<StateRedistributionJob.StagedFile> staged = staged(source, runs);
    String direct = tmp.resolve("direct/state").toString();
    String viaSpark = tmp.resolve("spark/state").toString();
    long batchId = version - 1;
    try (RocksDbTaskScope scope = RocksDbTaskScope.open(direct, spec, storeConf, hadoopConf)) {
      RocksDbSstExchange.ingest(direct, spec, 0, storeConf, hadoopConf, batchId, staged, scope);
      RocksDbSstExchange.ingest(direct, spec, 1, storeConf, hadoopConf, batchId, List.of(), scope);
    }
    RocksDbSstExchange.ingest(viaSpark, spec, 0, storeConf, hadoopConf, batchId, staged, null);
    RocksDbSstExchange.ingest(viaSpark, spec, 1, storeConf, hadoopConf, batchId, List.of(), null);

    assertThat(runs).as("the staged file stays for a retried task").exists();
    assertThat(readThroughSpark(direct, version)).isEqualTo(source);
    assertThat(readThroughSpark(viaSpark, version)).isEqualTo(source);
    assertThat(readThroughSpark(direct, 1, version)).as("an empty partition").isEmpty();
    for (int partition = 0; partition < 2; partition++) {
      assertThat(zipEntries(direct, partition))
          .as("partition " + partition + "'s zip")
          .isEqualTo(zipEntries(viaSpark, partition));
      assertThat(metadata(direct, partition)).isEqualTo(metadata(viaSpark, partition));
      assertThat(zipChecksum(direct, partition))
          .as("partition " + partition + "'s zip checksum file (Spark 4.1 writes one)")
          .isEqualTo(zipChecksum(viaSpark, partition) == null ? null : summed(direct, partition));
      assertThat(zipChecksum(viaSpark, partition))
          .isIn(null, summed(viaSpark, partition)); // what Spark's own file holds
    }
    assertThat(metadata(direct, 0)).contains("\"numKeys\":" + source.size());
  }

  @Test
  void withRowTrackingOffADirectCommitKeepsTheTrueKeyCount() throws Exception {
    Map<String, String> source = readThroughSpark(liveRoot, version);
    Map<String, String> settings = new TreeMap<>(layout.storeConf());
    settings.put("spark.sql.streaming.stateStore.rocksdb.trackTotalNumberOfRows", "false");
    StateStoreConf trackingOn = storeConf;
    storeConf = io.stateshift.spark.state.StateStores.storeConf(settings);
    List<StateRedistributionJob.StagedFile> staged =
        staged(source, tmp.resolve("partition-0.runs").toFile());
    String direct = tmp.resolve("direct/state").toString();
    String viaSpark = tmp.resolve("spark/state").toString();
    try (RocksDbTaskScope scope = RocksDbTaskScope.open(direct, spec, storeConf, hadoopConf)) {
      RocksDbSstExchange.ingest(direct, spec, 0, storeConf, hadoopConf, version - 1, staged, scope);
    }
    RocksDbSstExchange.ingest(viaSpark, spec, 0, storeConf, hadoopConf, version - 1, staged, null);

    // Spark would record -1 (not counted); both ingests record the count they wrote, which Spark
    // discards while tracking is off and uses once it is turned on.
    assertThat(metadata(viaSpark, 0)).contains("\"numKeys\":" + source.size());
    assertThat(metadata(direct, 0)).contains("\"numKeys\":" + source.size());
    assertThat(readThroughSpark(direct, version)).as("tracking off").isEqualTo(source);
    storeConf = trackingOn;
    assertThat(readThroughSpark(direct, version)).as("tracking on").isEqualTo(source);
  }

  /** The entries staged in {@code runs}, as the exchange's write side stages a partition. */
  private static List<StateRedistributionJob.StagedFile> staged(
      Map<String, String> entries, File runs) throws IOException {
    try (SortedRuns.Writer writer = new SortedRuns.Writer(runs, 0, 1)) {
      for (Map.Entry<String, String> e : entries.entrySet()) { // sorted: hex keeps byte order
        byte[] key = HexFormat.of().parseHex(e.getKey());
        byte[] value = HexFormat.of().parseHex(e.getValue());
        writer.add(0, key, key.length, value, value.length);
      }
      return SortedRuns.staged(writer.finish(), runs.getAbsolutePath(), runs.length());
    }
  }

  /** A version read by {@link RocksDbSnapshotReader}, without a driver's listing. */
  private RocksDbSnapshotReader openDirectly(RocksDbTaskScope scope, StateStoreId store, long v) {
    return RocksDbSnapshotReader.open(
        scope, store, v, scala.Option.empty(), hadoopConf, new TaskTimer("test"), null);
  }

  private Map<String, String> readThroughSpark(String stateRoot, long v) {
    return readThroughSpark(stateRoot, 0, v);
  }

  /** Every key and value of one version, loaded by Spark's own provider. */
  private Map<String, String> readThroughSpark(String stateRoot, int partition, long v) {
    StateStoreProvider provider =
        io.stateshift.spark.state.StateStores.open(
            stateRoot, spec, partition, storeConf, hadoopConf);
    try {
      ReadStateStore store = LineCalls.readStore(provider, v, scala.Option.empty());
      try {
        return entries(
            RocksDbInternals.nativeDb(
                ((RocksDBStateStoreProvider.RocksDBStateStore) store).dbInstance()));
      } finally {
        StateCalls.release(store);
      }
    } finally {
      provider.close();
    }
  }

  private static Map<String, String> entries(org.rocksdb.RocksDB db) {
    Map<String, String> entries = new TreeMap<>();
    try (RocksIterator it = db.newIterator()) {
      for (it.seekToFirst(); it.isValid(); it.next()) {
        entries.put(HexFormat.of().formatHex(it.key()), HexFormat.of().formatHex(it.value()));
      }
    }
    return entries;
  }

  /** The names of the files in the version's zip. */
  private TreeSet<String> zipEntries(String stateRoot, int partition) throws IOException {
    TreeSet<String> names = new TreeSet<>();
    try (ZipFile zip = new ZipFile(zipOf(stateRoot, partition))) {
      Enumeration<? extends ZipEntry> all = zip.entries();
      while (all.hasMoreElements()) {
        names.add(all.nextElement().getName().replaceAll("\\d+", "N"));
      }
    }
    return names;
  }

  /** Spark's metadata in the version's zip, less the SST files' unique names and sizes. */
  private String metadata(String stateRoot, int partition) throws IOException {
    try (ZipFile zip = new ZipFile(zipOf(stateRoot, partition))) {
      String json = new String(zip.getInputStream(zip.getEntry("metadata")).readAllBytes());
      return json.replaceAll("\"sstFiles\":\\[[^]]*]", "\"sstFiles\":[..]");
    }
  }

  /**
   * The algorithm, sum and length Spark's checksum file beside the version's zip ({@code
   * <version>.zip.crc}) records, or null when there is none.
   */
  private String zipChecksum(String stateRoot, int partition) throws IOException {
    File file = new File(zipOf(stateRoot, partition).getPath() + ".crc");
    if (!file.exists()) {
      return null;
    }
    com.fasterxml.jackson.databind.JsonNode json =
        new com.fasterxml.jackson.databind.ObjectMapper().readTree(file);
    return json.get("algorithm").asText()
        + " "
        + json.get("value").asInt()
        + " "
        + json.get("mainFileSize").asLong();
  }

  /** The same for the zip's bytes as they are. */
  private String summed(String stateRoot, int partition) throws IOException {
    byte[] zip = Files.readAllBytes(zipOf(stateRoot, partition).toPath());
    java.util.zip.CRC32C crc = new java.util.zip.CRC32C();
    crc.update(zip);
    return "CRC32C " + (int) crc.getValue() + " " + zip.length;
  }

  private File zipOf(String stateRoot, int partition) {
    return new File(
        new StateStoreId(stateRoot, spec.operatorId(), partition, spec.storeName())
            .storeCheckpointLocation()
            .toUri()
            .getPath(),
        version + ".zip");
  }

  private static Map<String, Long> listing(Path root) throws IOException {
    Map<String, Long> files = new TreeMap<>();
    try (Stream<Path> all = Files.walk(root)) {
      for (Path p : (Iterable<Path>) all::iterator) {
        files.put(root.relativize(p).toString(), Files.isDirectory(p) ? -1 : Files.size(p));
      }
    }
    return files;
  }
}
