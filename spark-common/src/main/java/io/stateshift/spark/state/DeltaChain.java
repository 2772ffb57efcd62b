package io.stateshift.spark.state;

import io.stateshift.checkpoint.PreparedManifest;
import io.stateshift.checkpoint.StateFileDamage;
import java.io.EOFException;
import java.io.IOException;
import java.io.InputStream;
import java.util.Arrays;
import java.util.List;
import org.apache.hadoop.fs.FileStatus;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;
import org.apache.spark.io.CompressionCodec;
import org.apache.spark.unsafe.Platform;
import org.apache.spark.unsafe.hash.Murmur3_x86_32;

/**
 * The delta files of one HDFS-backed partition's version chain, decompressed whole, with the newest
 * entry of each key picked out: the one a load of the version would keep.
 *
 * <p>A delta is {@code [int keyLength][key][int valueLength][value]} records (value length -1
 * removes the key) ended by a key length of -1; within a delta the last record of a key wins, and a
 * newer delta wins over an older one. Records are numbered in "newest first" order (deltas newest
 * first, each walked backwards), so a key's newest entry is its lowest-numbered record.
 *
 * <p>Why not one hash set of the keys seen: at a few hundred thousand keys per partition its table
 * outgrows the CPU caches, and each new key cost a cache miss (half of the read tasks' time). Here
 * the records are first scattered by the top bits of their key hash into buckets of about {@value
 * #ENTRIES_PER_BUCKET} (a radix partition, written sequentially per bucket); each bucket is then
 * deduplicated in its own small slice of the table, which stays in cache. Keys are compared byte by
 * byte only when their 32-bit hashes match.
 *
 * <p>Memory: the decompressed deltas (one array each, no object per record), 8 bytes and a bit per
 * record, and the table, 2 to 4 slots of 8 bytes per record; while it is built, 28 bytes more per
 * record.
 */
final class DeltaChain {
  private static final int END = -1;
  private static final int REMOVED = -1;
  private static final int SEED = 0x5eed_5eed; // not Spark's 42: independent of the placement
  private static final int ENTRIES_PER_BUCKET = 2048;
  private static final int MAX_BUCKET_BITS = 16;

  /** A hash of a key's bytes; tests swap in one that collides. */
  interface KeyHash {
    int hash(byte[] data, int offset, int length);
  }

  private final KeyHash keyHash;

  /** Decompressed deltas, newest first. */
  private final byte[][] deltas;

  /** Their files, in the same order. */
  private final List<Path> files;

  /** Per record, in newest-first order: its delta in the high 32 bits, its offset in the low. */
  private final long[] records;

  private final int bucketBits;
  private final int segmentMask;

  /**
   * One open-addressing segment of {@code segmentMask + 1} slots per bucket; a slot holds a key
   * hash in the high 32 bits and record number + 1 in the low (0: empty).
   */
  private final long[] table;

  /** Bit per record: the newest entry of its key. */
  private final long[] newest;

  private DeltaChain(
      List<Path> files,
      byte[][] deltas,
      long[] records,
      int[] hashes,
      int[] keyLengths,
      KeyHash keyHash) {
    this.keyHash = keyHash;
    this.files = List.copyOf(files);
    this.deltas = deltas;
    this.records = records;
    int n = records.length;
    this.bucketBits = bucketBits(n);
    int buckets = 1 << bucketBits;

    // Radix partition: record numbers with their hashes, grouped by bucket, each group still in
    // newest-first order (a stable counting sort).
    int[] start = new int[buckets + 1];
    for (int hash : hashes) {
      start[bucketOf(hash) + 1]++;
    }
    int largest = 0;
    for (int b = 0; b < buckets; b++) {
      largest = Math.max(largest, start[b + 1]);
      start[b + 1] += start[b];
    }
    // Each record's place in its delta and its key's length travel with it, so that the pass
    // over a bucket reads them in sequence: looked up by record number, they were a cache miss
    // per record (over a third of a read task's CPU), and a new key needs nothing else.
    long[] grouped = new long[n];
    long[] groupedPlace = new long[n];
    int[] groupedKeyLength = new int[n];
    int[] next = Arrays.copyOf(start, buckets);
    for (int r = 0; r < n; r++) {
      int at = next[bucketOf(hashes[r])]++;
      grouped[at] = ((long) hashes[r] << 32) | r;
      groupedPlace[at] = records[r];
      groupedKeyLength[at] = keyLengths[r];
    }

    // At most half full: short probe runs.
    int segment = Integer.highestOneBit(Math.max(4, largest * 2 - 1)) << 1;
    this.segmentMask = segment - 1;
    this.table = new long[buckets * segment];
    this.newest = new long[(n + 63) >>> 6];
    for (int b = 0; b < buckets; b++) {
      for (int i = start[b]; i < start[b + 1]; i++) {
        int hash = (int) (grouped[i] >>> 32);
        int record = (int) grouped[i];
        int slot =
            slotOf(
                b,
                hash,
                deltas[(int) (groupedPlace[i] >>> 32)],
                (int) groupedPlace[i] + 4,
                groupedKeyLength[i]);
        if (table[slot] == 0) {
          table[slot] = ((long) hash << 32) | (record + 1L);
          newest[record >>> 6] |= 1L << record;
        }
      }
    }
  }

  /** Reads and indexes {@code deltasNewestFirst}; an empty list gives an empty chain. */
  static DeltaChain read(FileSystem fs, List<Path> deltasNewestFirst, CompressionCodec codec)
      throws IOException {
    return read(fs, deltasNewestFirst, codec, DeltaChain::murmur3);
  }

  static DeltaChain read(
      FileSystem fs, List<Path> deltasNewestFirst, CompressionCodec codec, KeyHash keyHash)
      throws IOException {
    return read(fs, deltasNewestFirst, null, codec, keyHash);
  }

  /** As {@link #read}, for files a listing returned: no request for their status. */
  static DeltaChain readListed(
      FileSystem fs, List<FileStatus> deltasNewestFirst, CompressionCodec codec)
      throws IOException {
    return read(
        fs,
        deltasNewestFirst.stream().map(FileStatus::getPath).toList(),
        deltasNewestFirst,
        codec,
        DeltaChain::murmur3);
  }

  /**
   * As {@link #read}, for RocksDB's changelog files under state checkpoint format v2 (its third
   * changelog format): the first format's records after two strings, the format ({@code "v3"}) and
   * the lineage of the version, which are skipped.
   */
  static DeltaChain readWithLineage(
      FileSystem fs, List<Path> changelogsNewestFirst, CompressionCodec codec) throws IOException {
    return read(fs, changelogsNewestFirst, null, codec, DeltaChain::murmur3, LINEAGE_FORMAT);
  }

  static final String LINEAGE_FORMAT = "v3";

  private static DeltaChain read(
      FileSystem fs,
      List<Path> deltasNewestFirst,
      List<FileStatus> listed,
      CompressionCodec codec,
      KeyHash keyHash)
      throws IOException {
    return read(fs, deltasNewestFirst, listed, codec, keyHash, null);
  }

  private static DeltaChain read(
      FileSystem fs,
      List<Path> deltasNewestFirst,
      List<FileStatus> listed,
      CompressionCodec codec,
      KeyHash keyHash,
      String format)
      throws IOException {
    byte[][] deltas = new byte[deltasNewestFirst.size()][];
    int[][] offsets = new int[deltas.length][];
    int total = 0;
    for (int d = 0; d < deltas.length; d++) {
      Path file = deltasNewestFirst.get(d);
      deltas[d] = decompress(fs, listed != null ? listed.get(d) : fs.getFileStatus(file), codec);
      if (format != null) {
        deltas[d] = withoutHeader(deltas[d], format, file);
      }
      try {
        offsets[d] = recordOffsets(deltas[d], file);
      } catch (IOException e) {
        throw StateFileDamage.classify(file, e);
      }
      total = Math.addExact(total, offsets[d].length);
    }
    long[] records = new long[total];
    int[] hashes = new int[total];
    int[] keyLengths = new int[total];
    int r = 0;
    for (int d = 0; d < deltas.length; d++) {
      byte[] delta = deltas[d];
      for (int i = offsets[d].length - 1; i >= 0; i--, r++) {
        int offset = offsets[d][i];
        records[r] = ((long) d << 32) | offset;
        keyLengths[r] = intAt(delta, offset);
        hashes[r] = keyHash.hash(delta, offset + 4, keyLengths[r]);
      }
    }
    return new DeltaChain(deltasNewestFirst, deltas, records, hashes, keyLengths, keyHash);
  }

  /** The file of a delta array that {@link #forEachLiveNewest} handed over; null if none. */
  Path fileOf(byte[] data) {
    for (int d = 0; d < deltas.length; d++) {
      if (deltas[d] == data) {
        return files.get(d);
      }
    }
    return null;
  }

  /** How many records the deltas hold, older entries of a key included. */
  int records() {
    return records.length;
  }

  /** Whether any delta of the chain has an entry (a value or a removal) for this key. */
  boolean containsKey(byte[] key, int offset, int length) {
    if (records.length == 0) {
      return false;
    }
    int hash = keyHash.hash(key, offset, length);
    return table[slotOf(bucketOf(hash), hash, key, offset, length)] != 0;
  }

  /** What receives the live entries: an array and the offsets of a key and its value in it. */
  interface EntryConsumer {
    void accept(byte[] data, int keyOffset, int keyLength, int valueOffset, int valueLength)
        throws IOException;
  }

  /**
   * Hands over the newest entry of every key that it does not remove, in record order (which reads
   * each delta array front to back, in step with the records' numbering).
   */
  void forEachLiveNewest(EntryConsumer consumer) throws IOException {
    for (int r = 0; r < records.length; r++) {
      if ((newest[r >>> 6] & (1L << r)) == 0) {
        continue;
      }
      byte[] delta = deltas[deltaOf(r)];
      int keyOffset = keyOffset(r);
      int keyLength = intAt(delta, keyOffset - 4);
      int valueOffset = keyOffset + keyLength + 4;
      int valueLength = intAt(delta, valueOffset - 4);
      if (valueLength != REMOVED) {
        consumer.accept(delta, keyOffset, keyLength, valueOffset, valueLength);
      }
    }
  }

  /**
   * Hands over the newest entry of every key, removals included (value length -1), in record order:
   * the changes the chain's deltas make, as one put or removal per key.
   */
  void forEachNewest(EntryConsumer consumer) throws IOException {
    for (int r = 0; r < records.length; r++) {
      if ((newest[r >>> 6] & (1L << r)) == 0) {
        continue;
      }
      byte[] delta = deltas[deltaOf(r)];
      int keyOffset = keyOffset(r);
      int keyLength = intAt(delta, keyOffset - 4);
      int valueOffset = keyOffset + keyLength + 4;
      consumer.accept(delta, keyOffset, keyLength, valueOffset, intAt(delta, valueOffset - 4));
    }
  }

  /** The slot in bucket {@code bucket}'s segment holding the key, or the empty one for it. */
  private int slotOf(int bucket, int hash, byte[] key, int offset, int length) {
    int base = bucket * (segmentMask + 1);
    int i = hash & segmentMask;
    while (true) {
      long slot = table[base + i];
      if (slot == 0) {
        return base + i;
      }
      if ((int) (slot >>> 32) == hash) {
        int record = (int) slot - 1;
        byte[] delta = deltas[deltaOf(record)];
        int keyOffset = keyOffset(record);
        if (Arrays.equals(
            delta,
            keyOffset,
            keyOffset + intAt(delta, keyOffset - 4),
            key,
            offset,
            offset + length)) {
          return base + i;
        }
      }
      i = (i + 1) & segmentMask;
    }
  }

  private int bucketOf(int hash) {
    return bucketBits == 0 ? 0 : hash >>> (32 - bucketBits);
  }

  private int deltaOf(int record) {
    return (int) (records[record] >>> 32);
  }

  private int keyOffset(int record) {
    return (int) records[record] + 4;
  }

  private static int bucketBits(int records) {
    int bits = 0;
    while (bits < MAX_BUCKET_BITS && (long) ENTRIES_PER_BUCKET << bits < records) {
      bits++;
    }
    return bits;
  }

  private static int murmur3(byte[] data, int offset, int length) {
    return Murmur3_x86_32.hashUnsafeBytes2(data, Platform.BYTE_ARRAY_OFFSET + offset, length, SEED);
  }

  private static int intAt(byte[] data, int offset) {
    return (int) HdfsFileExchange.BIG_ENDIAN_INT.get(data, offset);
  }

  /**
   * The whole decompressed stream of {@code file}. Content that does not decode is reported as
   * damage to the file ({@link StateFileDamage}), an I/O error of the storage as it was.
   */
  private static byte[] decompress(FileSystem fs, FileStatus status, CompressionCodec codec)
      throws IOException {
    Path file = status.getPath();
    long compressed = status.getLen();
    byte[] data =
        new byte[(int) Math.min(Integer.MAX_VALUE - 8, Math.max(1 << 16, compressed * 4))];
    int length = 0;
    boolean tooLarge = false;
    // a missing file or a failed open is no damage to it
    InputStream raw = WholeFileReads.open(fs, status);
    try (raw;
        InputStream in = codec.compressedInputStream(StateFileDamage.marked(raw))) {
      while (true) {
        if (length == data.length) {
          if (length == Integer.MAX_VALUE - 8) {
            tooLarge = true;
            break;
          }
          data = Arrays.copyOf(data, (int) Math.min(Integer.MAX_VALUE - 8, 2L * length));
        }
        int read = in.read(data, length, data.length - length);
        if (read < 0) {
          break;
        }
        length += read;
      }
    } catch (EOFException e) {
      throw StateFileDamage.classify(file, HdfsFileExchange.truncated(file, e));
    } catch (IOException | RuntimeException e) {
      throw StateFileDamage.classify(file, e);
    }
    if (tooLarge) {
      throw new IOException(
          file
              + " holds more than 2 GB once decompressed; load this "
              + "version with Spark and let it write a snapshot first");
    }
    return length == data.length ? data : Arrays.copyOf(data, length);
  }

  /** Where each record of a decompressed delta starts, checking every length against its end. */
  /** The records after a changelog's format and lineage strings (Java's modified UTF-8). */
  private static byte[] withoutHeader(byte[] data, String format, Path file) throws IOException {
    int at = 0;
    for (int i = 0; i < 2; i++) {
      if (at + 2 > data.length) {
        throw StateFileDamage.classify(file, HdfsFileExchange.truncated(file, null));
      }
      int length = (data[at] & 0xff) << 8 | (data[at + 1] & 0xff);
      if (at + 2 + length > data.length) {
        throw StateFileDamage.classify(file, HdfsFileExchange.truncated(file, null));
      }
      String text = new String(data, at + 2, length, java.nio.charset.StandardCharsets.UTF_8);
      if (i == 0 && !text.equals(format)) {
        throw new PreparedManifest.Rejected(
            "the changelog file "
                + file
                + " is in RocksDB's changelog format "
                + (text.length() > 8 ? "1" : text)
                + ", not "
                + format);
      }
      at += 2 + length;
    }
    return Arrays.copyOfRange(data, at, data.length);
  }

  private static int[] recordOffsets(byte[] data, Path file) throws IOException {
    int[] offsets = new int[Math.max(16, data.length / 64)];
    int count = 0;
    int at = 0;
    while (true) {
      if (at + 4 > data.length) {
        throw HdfsFileExchange.truncated(file, null);
      }
      int keyLength = intAt(data, at);
      if (keyLength == END) {
        return Arrays.copyOf(offsets, count);
      }
      if (keyLength < 0) {
        throw new IOException("key length " + keyLength + " in " + file);
      }
      int valueAt = at + 4 + keyLength;
      if (valueAt < 0 || valueAt + 4 > data.length) {
        throw HdfsFileExchange.truncated(file, null);
      }
      int valueLength = intAt(data, valueAt);
      if (valueLength < REMOVED) {
        throw new IOException("value length " + valueLength + " in " + file);
      }
      int nextAt = valueAt + 4 + Math.max(0, valueLength);
      if (nextAt < 0 || nextAt > data.length) {
        throw HdfsFileExchange.truncated(file, null);
      }
      if (count == offsets.length) {
        offsets = Arrays.copyOf(offsets, count * 2);
      }
      offsets[count++] = at;
      at = nextAt;
    }
  }
}
