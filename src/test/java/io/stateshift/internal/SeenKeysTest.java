package io.stateshift.internal;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Random;
import java.util.Set;
import org.junit.jupiter.api.Test;

/** The HDFS exchange's set of keys seen, against {@code java.util.HashSet} as the oracle. */
class SeenKeysTest {

  @Test
  void agreesWithAHashSetThroughGrowthAndRepeats() {
    assertAgreesWithHashSet(new SeenKeys(), 200_000, 20);
  }

  @Test
  void keysWhoseHashesCollideStayApart() {
    // every key hashes alike (0, on purpose: the empty slot is 0 too), or to one of two
    // values: only the bytes tell them apart
    assertAgreesWithHashSet(new SeenKeys(key -> 0), 2_000, 3);
    assertAgreesWithHashSet(new SeenKeys(key -> key.length % 2), 2_000, 5);
  }

  @Test
  void keysThatArePrefixesOfEachOtherOrEmptyAreDistinct() {
    SeenKeys seen = new SeenKeys();
    assertThat(seen.add(new byte[0])).isTrue();
    assertThat(seen.add(new byte[] {0})).isTrue();
    assertThat(seen.add(new byte[] {0, 0})).isTrue();
    assertThat(seen.add(new byte[] {0})).isFalse();
    assertThat(seen.contains(new byte[0])).isTrue();
    assertThat(seen.contains(new byte[] {0, 0, 0})).isFalse();
    assertThat(seen.size()).isEqualTo(3);
  }

  /** Random keys of 0-12 bytes (many repeats), added and looked up in both sets. */
  private static void assertAgreesWithHashSet(SeenKeys seen, int operations, int seed) {
    Random random = new Random(seed);
    Set<ByteBuffer> oracle = new HashSet<>();
    List<byte[]> added = new ArrayList<>();
    for (int i = 0; i < operations; i++) {
      byte[] key = new byte[random.nextInt(13)];
      random.nextBytes(key);
      if (key.length > 0) {
        key[0] = (byte) (key[0] & 0x0f); // small alphabet at the front: real repeats
      }
      if (random.nextBoolean()) {
        assertThat(seen.add(key)).as("add #%d", i).isEqualTo(oracle.add(ByteBuffer.wrap(key)));
        added.add(key);
      } else {
        assertThat(seen.contains(key)).as("contains #%d", i)
            .isEqualTo(oracle.contains(ByteBuffer.wrap(key)));
      }
      assertThat(seen.size()).isEqualTo(oracle.size());
    }
    for (byte[] key : added) {
      assertThat(seen.contains(key.clone())).isTrue(); // by bytes, not by reference
    }
  }
}
