package io.stateshift.spark.state;

import static org.assertj.core.api.Assertions.assertThat;

import io.stateshift.testing.SparkTestSession;
import java.io.DataOutputStream;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Random;
import org.apache.hadoop.fs.FileSystem;
import org.apache.spark.io.CompressionCodec;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@link DeltaChain} against the obvious oracle: replaying the deltas oldest first into a map, the
 * last write of a key winning. Keys include the empty key and keys that are prefixes of others;
 * hash functions that collide force the byte-by-byte comparisons.
 */
class DeltaChainTest {
  private static final int REMOVE = -1;

  @TempDir Path tmp;

  private final FileSystem fs = localFs();
  private final CompressionCodec codec = HdfsFileExchange.codec("lz4");

  @Test
  void newestEntriesOfRandomChainsMatchAReplayOfTheDeltas() throws IOException {
    // 60k records: enough for many buckets
    check(new Random(7), 5, 12_000, 20_000, null);
  }

  @Test
  void keysWhoseHashesCollideAreToldApartByTheirBytes() throws IOException {
    check(new Random(11), 4, 600, 800, (data, offset, length) -> 0);
    check(new Random(12), 4, 3_000, 4_000, (data, offset, length) -> length);
  }

  @Test
  void anEmptyChainHasNoEntriesAndNoKeys() throws IOException {
    DeltaChain chain = DeltaChain.read(fs, List.of(), codec);
    assertThat(chain.records()).isZero();
    assertThat(chain.containsKey(new byte[] {1}, 0, 1)).isFalse();
    chain.forEachLiveNewest(
        (d, ko, kl, vo, vl) -> {
          throw new AssertionError("no entry expected");
        });
  }

  private void check(
      Random random, int deltaCount, int recordsPerDelta, int keyRange, DeltaChain.KeyHash hash)
      throws IOException {
    Map<ByteBuffer, Optional<byte[]>> oracle = new HashMap<>();
    List<org.apache.hadoop.fs.Path> newestFirst = new ArrayList<>();
    Path dir = java.nio.file.Files.createTempDirectory(tmp, "chain");
    int records = 0;
    for (int d = 1; d <= deltaCount; d++) {
      List<byte[][]> delta = new ArrayList<>();
      int size = random.nextInt(recordsPerDelta + 1);
      for (int i = 0; i < size; i++) {
        byte[] key = key(random.nextInt(keyRange));
        byte[] value = random.nextInt(5) == 0 ? null : randomBytes(random, random.nextInt(24));
        delta.add(new byte[][] {key, value});
        oracle.put(ByteBuffer.wrap(key), Optional.ofNullable(value)); // oldest first: last wins
      }
      records += size;
      newestFirst.add(0, writeDelta(dir, d, delta));
    }
    DeltaChain chain =
        hash == null
            ? DeltaChain.read(fs, newestFirst, codec)
            : DeltaChain.read(fs, newestFirst, codec, hash);
    assertThat(chain.records()).isEqualTo(records);

    Map<ByteBuffer, byte[]> live = new HashMap<>();
    chain.forEachLiveNewest(
        (data, keyOffset, keyLength, valueOffset, valueLength) -> {
          ByteBuffer key =
              ByteBuffer.wrap(Arrays.copyOfRange(data, keyOffset, keyOffset + keyLength));
          byte[] previous =
              live.put(key, Arrays.copyOfRange(data, valueOffset, valueOffset + valueLength));
          assertThat(previous).as("a key handed over twice").isNull();
        });
    Map<ByteBuffer, byte[]> expected = new HashMap<>();
    oracle.forEach((k, v) -> v.ifPresent(bytes -> expected.put(k, bytes)));
    assertThat(live).hasSameSizeAs(expected);
    expected.forEach((k, v) -> assertThat(live.get(k)).as("value of a key").isEqualTo(v));

    for (ByteBuffer key : oracle.keySet()) {
      assertThat(chain.containsKey(key.array(), 0, key.array().length)).isTrue();
    }
    // a key outside the range, at an offset in a larger array
    byte[] padded = new byte[40];
    byte[] absent = key(keyRange + 1);
    System.arraycopy(absent, 0, padded, 3, absent.length);
    assertThat(chain.containsKey(padded, 3, absent.length)).isFalse();
  }

  /** Variable-length keys: 0 is empty, and a key's bytes start with those of its tenth. */
  private static byte[] key(int k) {
    if (k == 0) {
      return new byte[0];
    }
    byte[] prefix = key(k / 10);
    byte[] key = Arrays.copyOf(prefix, prefix.length + 1);
    key[prefix.length] = (byte) (k % 10);
    return key;
  }

  private static byte[] randomBytes(Random random, int length) {
    byte[] bytes = new byte[length];
    random.nextBytes(bytes);
    return bytes;
  }

  private org.apache.hadoop.fs.Path writeDelta(Path dir, int version, List<byte[][]> entries)
      throws IOException {
    org.apache.hadoop.fs.Path file =
        new org.apache.hadoop.fs.Path(dir.resolve(version + ".delta").toUri());
    try (DataOutputStream out =
        new DataOutputStream(codec.compressedOutputStream(fs.create(file, false)))) {
      for (byte[][] entry : entries) {
        out.writeInt(entry[0].length);
        out.write(entry[0]);
        if (entry[1] == null) {
          out.writeInt(REMOVE);
        } else {
          out.writeInt(entry[1].length);
          out.write(entry[1]);
        }
      }
      out.writeInt(-1);
    }
    return file;
  }

  private static FileSystem localFs() {
    try {
      return FileSystem.getLocal(SparkTestSession.get().sparkContext().hadoopConfiguration());
    } catch (IOException e) {
      throw new IllegalStateException(e);
    }
  }
}
