package io.stateshift.internal;

import java.util.Arrays;
import java.util.function.ToIntFunction;
import org.apache.spark.unsafe.Platform;
import org.apache.spark.unsafe.hash.Murmur3_x86_32;

/**
 * A set of key byte arrays for the HDFS exchange's walk of a version chain (the keys seen so far,
 * so that older versions of them are skipped). Open addressing with linear probing over one
 * {@code long} per slot, the key's 32-bit hash and its index in an append-only list of the keys:
 * a probe for a new key reads only that array (one cache miss, where a {@code HashSet} of wrapped
 * keys took several: slot, node, wrapper, array), and key bytes are compared only when hashes
 * match. About 56 fewer bytes per key than the {@code HashSet}, too.
 */
final class SeenKeys {
  private static final long EMPTY = 0;
  private static final int SEED = 0x5eed_5eed; // not Spark's 42: independent of the placement

  private final ToIntFunction<byte[]> hasher;
  /** Per slot: hash in the high 32 bits, index + 1 in the low 32 (never 0 when used). */
  private long[] slots;
  private byte[][] keys;
  private int size;

  SeenKeys() {
    this(SeenKeys::murmur3);
  }

  /** With another hash function: tests force collisions with it. */
  SeenKeys(ToIntFunction<byte[]> hasher) {
    this.hasher = hasher;
    this.slots = new long[1 << 10];
    this.keys = new byte[1 << 9][];
  }

  int size() {
    return size;
  }

  boolean contains(byte[] key) {
    return slots[slotOf(key, hasher.applyAsInt(key))] != EMPTY;
  }

  /** Adds {@code key} (kept by reference, not copied); false if it was already there. */
  boolean add(byte[] key) {
    int hash = hasher.applyAsInt(key);
    int slot = slotOf(key, hash);
    if (slots[slot] != EMPTY) {
      return false;
    }
    if (size == keys.length) {
      keys = Arrays.copyOf(keys, size << 1);
    }
    keys[size] = key;
    slots[slot] = ((long) hash << 32) | (size + 1L);
    if (++size > slots.length >> 1) { // at most half full: short probe runs
      grow();
    }
    return true;
  }

  /** The slot holding {@code key}, or else the empty slot where it belongs. */
  private int slotOf(byte[] key, int hash) {
    int mask = slots.length - 1;
    int slot = spread(hash) & mask;
    while (slots[slot] != EMPTY && !matches(slots[slot], hash, key)) {
      slot = (slot + 1) & mask;
    }
    return slot;
  }

  private boolean matches(long entry, int hash, byte[] key) {
    return (int) (entry >>> 32) == hash && Arrays.equals(keys[(int) entry - 1], key);
  }

  private void grow() {
    long[] old = slots;
    slots = new long[old.length << 1];
    int mask = slots.length - 1;
    for (long entry : old) {
      if (entry != EMPTY) {
        int slot = spread((int) (entry >>> 32)) & mask;
        while (slots[slot] != EMPTY) {
          slot = (slot + 1) & mask;
        }
        slots[slot] = entry;
      }
    }
  }

  /** Mixes the high bits into the low ones that pick the slot. */
  private static int spread(int hash) {
    return hash ^ (hash >>> 16);
  }

  private static int murmur3(byte[] key) {
    return Murmur3_x86_32.hashUnsafeBytes2(key, Platform.BYTE_ARRAY_OFFSET, key.length, SEED);
  }
}
