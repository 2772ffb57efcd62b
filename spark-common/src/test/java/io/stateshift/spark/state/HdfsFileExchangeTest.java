package io.stateshift.spark.state;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.stateshift.checkpoint.StoreSpec;
import io.stateshift.checkpoint.spi.Redistribution;
import io.stateshift.spark.line.StateCalls;
import io.stateshift.testing.SparkTestSession;
import java.io.DataOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.zip.DeflaterOutputStream;
import java.util.zip.InflaterInputStream;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FileSystem;
import org.apache.spark.SparkConf;
import org.apache.spark.io.CompressionCodec;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.catalyst.expressions.UnsafeRow;
import org.apache.spark.sql.execution.streaming.state.ReadStateStore;
import org.apache.spark.sql.execution.streaming.state.StateStoreConf;
import org.apache.spark.sql.execution.streaming.state.StateStoreIterator;
import org.apache.spark.sql.execution.streaming.state.StateStoreProvider;
import org.apache.spark.sql.execution.streaming.state.UnsafeRowPair;
import org.apache.spark.sql.internal.SQLConf;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.StructType;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * The HDFS-backed file exchange against Spark's own HDFS-backed provider, on hand-written version
 * chains with every case a chain can hold: a stale older snapshot, a snapshot overwritten and
 * removed from by later deltas, a key written twice in one delta, a key put and removed in one
 * delta, a removed key put again, a chain of deltas without a snapshot, and a delta newer than the
 * version read. The oracle is Spark's provider loading the old version; the new partitions are
 * loaded by Spark's provider too.
 */
class HdfsFileExchangeTest {
  private static final StructType KEY = new StructType().add("k", DataTypes.IntegerType, false);
  private static final StructType VALUE = new StructType().add("v", DataTypes.LongType, false);
  private static final StoreSpec SPEC =
      new StoreSpec(0, 0, "stateStoreSave", "default", 0, KEY, VALUE, 0);
  private static final int NEW_PARTITIONS = 3;

  private final SparkSession spark = SparkTestSession.get();
  private final Configuration hadoopConf = spark.sparkContext().hadoopConfiguration();
  private String codecName = storeConf().compressionCodec();

  @TempDir Path tmp;

  /**
   * Spark's four codecs, whose staged streams are concatenated as compressed bytes, and one it does
   * not know to concatenate, whose staged files are re-encoded.
   */
  @ParameterizedTest
  @ValueSource(
      strings = {
        "lz4",
        "zstd",
        "snappy",
        "lzf",
        "io.stateshift.spark.state.HdfsFileExchangeTest$DeflateCodec"
      })
  void newPartitionsHoldExactlyTheLiveEntriesOfTheOldVersionEachWhereSparkPlacesIt(String codec)
      throws IOException {
    codecName = codec;
    assertThat(HdfsFileExchange.concatenable(codec())).isEqualTo(!codec.endsWith("DeflateCodec"));
    org.apache.hadoop.fs.Path old = new org.apache.hadoop.fs.Path(tmp.resolve("old").toUri());
    // partition 0: a snapshot chain
    Map<Integer, Long> stale = Map.of(99, 1L);
    writeFile(old, 0, "1.snapshot", entries(stale));
    Map<Integer, Long> snapshot = new HashMap<>();
    for (int k = 1; k <= 50; k++) {
      snapshot.put(k, k * 10L);
    }
    writeFile(old, 0, "2.snapshot", entries(snapshot));
    writeFile(
        old,
        0,
        "3.delta",
        List.of(
            put(1, 111),
            remove(2),
            put(51, 510),
            put(51, 511),
            put(52, 520),
            remove(52),
            put(200, 2000)));
    writeFile(old, 0, "4.delta", List.of(put(2, 222), remove(200), put(53, 530)));
    writeFile(old, 0, "5.delta", List.of(put(3, 333))); // newer than the version read
    // partition 1: deltas only
    List<long[]> first = new ArrayList<>();
    for (int k = 1001; k <= 1100; k++) {
      first.add(put(k, k));
    }
    writeFile(old, 1, "1.delta", first);
    writeFile(old, 1, "2.delta", List.of(put(1001, 1), remove(1002)));
    writeFile(old, 1, "3.delta", List.of(remove(1003), put(1003, 3)));
    writeFile(old, 1, "4.delta", List.of(put(1101, 11)));

    Map<Integer, Long> expected = new HashMap<>();
    expected.putAll(readWithSpark(old, 0, 4));
    expected.putAll(readWithSpark(old, 1, 4));
    // the oracle itself, on the cases that matter
    assertThat(expected)
        .containsEntry(1, 111L)
        .containsEntry(2, 222L)
        .containsEntry(3, 30L)
        .containsEntry(51, 511L)
        .containsEntry(53, 530L)
        .containsEntry(1001, 1L)
        .containsEntry(1003, 3L)
        .containsEntry(1101, 11L)
        .doesNotContainKeys(52, 99, 200, 1002)
        .hasSize(50 + 2 + 99 + 1);

    String exchange = tmp.resolve("exchange").toUri().toString();
    List<StateRedistributionJob.StagedFile> staged = new ArrayList<>();
    long readRows = 0;
    for (int p = 0; p < 2; p++) {
      StateRedistributionJob.ReadOutcome outcome = split(partitionDir(old, p), 4, p, exchange);
      staged.addAll(outcome.files());
      readRows += outcome.count().rows();
    }
    assertThat(readRows).isEqualTo(expected.size());

    org.apache.hadoop.fs.Path fresh = new org.apache.hadoop.fs.Path(tmp.resolve("new").toUri());
    StateStores.KeyPlacement placement = new StateStores.KeyPlacement(SPEC, NEW_PARTITIONS);
    Map<Integer, Long> union = new HashMap<>();
    for (int p = 0; p < NEW_PARTITIONS; p++) {
      int target = p;
      List<StateRedistributionJob.StagedFile> mine =
          staged.stream().filter(f -> f.target() == target).toList();
      Redistribution.PartitionCount written =
          HdfsFileExchange.writeSnapshot(
              new org.apache.hadoop.fs.Path(partitionDir(fresh, p), "5.snapshot"),
              SPEC,
              p,
              mine,
              codecName,
              hadoopConf);
      Map<Integer, Long> loaded = readWithSpark(fresh, p, 5);
      assertThat(written.rows()).isEqualTo(loaded.size());
      for (int key : loaded.keySet()) {
        assertThat(placement.partitionOf(keyRow(key))).as("partition of key %d", key).isEqualTo(p);
      }
      assertThat(union.keySet()).doesNotContainAnyElementsOf(loaded.keySet());
      union.putAll(loaded);
    }
    assertThat(union).isEqualTo(expected);
  }

  @Test
  void aStagedFileOfAnotherLengthThanItsReadTaskWroteFailsTheWrite() throws IOException {
    org.apache.hadoop.fs.Path old = new org.apache.hadoop.fs.Path(tmp.resolve("short").toUri());
    List<long[]> entries = new ArrayList<>();
    for (int k = 1; k <= 100; k++) {
      entries.add(put(k, k));
    }
    writeFile(old, 0, "1.delta", entries);
    List<StateRedistributionJob.StagedFile> staged =
        split(partitionDir(old, 0), 1, 0, tmp.resolve("exchange").toUri().toString()).files();
    StateRedistributionJob.StagedFile first = staged.get(0);
    java.nio.file.Path file = java.nio.file.Path.of(java.net.URI.create(first.path()));
    java.nio.file.Files.write(
        file, Arrays.copyOf(java.nio.file.Files.readAllBytes(file), (int) first.fileBytes() - 1));
    org.apache.hadoop.fs.Path snapshot =
        new org.apache.hadoop.fs.Path(
            partitionDir(new org.apache.hadoop.fs.Path(tmp.resolve("new").toUri()), 0),
            "2.snapshot");
    assertThatThrownBy(
            () ->
                HdfsFileExchange.writeSnapshot(
                    snapshot, SPEC, first.target(), List.of(first), codecName, hadoopConf))
        .hasMessageContaining(
            "holds "
                + (first.fileBytes() - 1)
                + " bytes, its read task wrote "
                + first.fileBytes());
  }

  @Test
  void aGapInTheChainIsReportedWithTheMissingVersion() throws IOException {
    org.apache.hadoop.fs.Path old = new org.apache.hadoop.fs.Path(tmp.resolve("gap").toUri());
    writeFile(old, 0, "1.delta", List.of(put(1, 1)));
    writeFile(old, 0, "3.delta", List.of(put(2, 2)));
    assertThatThrownBy(
            () -> split(partitionDir(old, 0), 3, 0, tmp.resolve("exchange").toUri().toString()))
        .hasMessageContaining("no state file for version 2");
  }

  @Test
  void aTruncatedFileIsReportedAsTruncated() throws IOException {
    org.apache.hadoop.fs.Path old = new org.apache.hadoop.fs.Path(tmp.resolve("cut").toUri());
    writeFile(old, 0, "1.delta", List.of(put(1, 1), put(2, 2)));
    org.apache.hadoop.fs.Path file = new org.apache.hadoop.fs.Path(partitionDir(old, 0), "2.delta");
    try (DataOutputStream out =
        new DataOutputStream(codec().compressedOutputStream(fs().create(file, false)))) {
      out.writeInt(16); // a key length, and then nothing
    }
    assertThatThrownBy(
            () -> split(partitionDir(old, 0), 2, 0, tmp.resolve("exchange").toUri().toString()))
        .hasMessageContaining("2.delta ends before its end marker");
  }

  // ---- helpers ----

  private static long[] put(int key, long value) {
    return new long[] {key, value, 1};
  }

  private static long[] remove(int key) {
    return new long[] {key, 0, 0};
  }

  private static List<long[]> entries(Map<Integer, Long> state) {
    List<long[]> list = new ArrayList<>();
    state.forEach((k, v) -> list.add(put(k, v)));
    return list;
  }

  private static org.apache.hadoop.fs.Path partitionDir(org.apache.hadoop.fs.Path root, int p) {
    return new org.apache.hadoop.fs.Path(root, SPEC.dir(p));
  }

  /** A state file as Spark's HDFS-backed provider writes it; a removal has value length -1. */
  private void writeFile(
      org.apache.hadoop.fs.Path root, int partition, String name, List<long[]> entries)
      throws IOException {
    org.apache.hadoop.fs.Path file =
        new org.apache.hadoop.fs.Path(partitionDir(root, partition), name);
    fs().mkdirs(file.getParent());
    try (DataOutputStream out =
        new DataOutputStream(codec().compressedOutputStream(fs().create(file, false)))) {
      for (long[] entry : entries) {
        byte[] key = keyRow((int) entry[0]).getBytes();
        out.writeInt(key.length);
        out.write(key);
        if (entry[2] == 0) {
          out.writeInt(-1);
        } else {
          byte[] value = valueRow(entry[1]).getBytes();
          out.writeInt(value.length);
          out.write(value);
        }
      }
      out.writeInt(-1);
    }
  }

  private Map<Integer, Long> readWithSpark(
      org.apache.hadoop.fs.Path root, int partition, long version) {
    spark.streams(); // the StateStoreCoordinator the provider reports snapshot loads to
    StateStoreProvider provider =
        StateStores.open(
            new org.apache.hadoop.fs.Path(root, "state").toString(),
            SPEC,
            partition,
            storeConf(),
            hadoopConf);
    try {
      ReadStateStore store = provider.getReadStore(version, ScalaBridge.none());
      Map<Integer, Long> state = new HashMap<>();
      StateStoreIterator<UnsafeRowPair> rows = store.iterator(StateStores.DEFAULT_COLUMN_FAMILY);
      while (rows.hasNext()) {
        UnsafeRowPair pair = rows.next();
        state.put(pair.key().getInt(0), pair.value().getLong(0));
      }
      rows.close();
      StateCalls.release(store);
      return state;
    } finally {
      provider.close();
    }
  }

  private static UnsafeRow keyRow(int key) {
    UnsafeRow row = new UnsafeRow(1);
    row.pointTo(new byte[16], 16);
    row.setInt(0, key);
    return row;
  }

  private static UnsafeRow valueRow(long value) {
    UnsafeRow row = new UnsafeRow(1);
    row.pointTo(new byte[16], 16);
    row.setLong(0, value);
    return row;
  }

  private FileSystem fs() throws IOException {
    return FileSystem.getLocal(hadoopConf);
  }

  /** Splits version {@code version} of old partition {@code p} as a read task does. */
  private StateRedistributionJob.ReadOutcome split(
      org.apache.hadoop.fs.Path partitionDir, long version, int p, String exchange) {
    return HdfsFileExchange.split(
        new SplitTask(
            SPEC,
            p,
            new StateStores.KeyPlacement(SPEC, NEW_PARTITIONS),
            null,
            partitionDir + " version " + version,
            0,
            NEW_PARTITIONS,
            exchange,
            hadoopConf,
            new TaskTimer("t"),
            null,
            null),
        partitionDir,
        version,
        codecName,
        "checkpoint");
  }

  private CompressionCodec codec() {
    return HdfsFileExchange.codec(codecName);
  }

  /** The store conf of the session, with the codec under test. */
  private StateStoreConf storeConf() {
    SQLConf conf =
        ((org.apache.spark.sql.classic.SparkSession) spark).sessionState().conf().clone();
    if (codecName != null) {
      conf.setConfString("spark.sql.streaming.stateStore.compression.codec", codecName);
    }
    return new StateStoreConf(conf, scala.collection.immutable.Map$.MODULE$.empty());
  }

  /** A codec Spark does not list as concatenable: its streams are re-encoded, not joined. */
  public static final class DeflateCodec implements CompressionCodec {
    public DeflateCodec(SparkConf conf) {}

    @Override
    public OutputStream compressedOutputStream(OutputStream s) {
      return new DeflaterOutputStream(s);
    }

    @Override
    public InputStream compressedInputStream(InputStream s) {
      return new InflaterInputStream(s);
    }
  }
}
