package io.stateshift.spark.state;

import java.io.Serializable;
import java.util.Arrays;
import java.util.Comparator;
import org.apache.spark.Partitioner;
import org.apache.spark.sql.catalyst.expressions.UnsafeRow;
import org.apache.spark.unsafe.Platform;

/**
 * One state entry as it travels through the shuffle, in one byte array: {@code
 * [target:int][keyLength:int][key bytes][value bytes]}. {@code target} is the (store, new
 * partition) the entry goes to; key and value are either UnsafeRow bytes or, for the RocksDB fast
 * path, the bytes Spark's RocksDB encoders produce. The two ints are big-endian.
 */
final class StateRecords {
  static final int HEADER = 8;

  private StateRecords() {}

  static byte[] pack(int target, UnsafeRow key, UnsafeRow value) {
    int keySize = key.getSizeInBytes();
    byte[] record = new byte[HEADER + keySize + value.getSizeInBytes()];
    writeHeader(record, target, keySize);
    key.writeToMemory(record, Platform.BYTE_ARRAY_OFFSET + HEADER);
    value.writeToMemory(record, Platform.BYTE_ARRAY_OFFSET + HEADER + keySize);
    return record;
  }

  static byte[] pack(int target, byte[] key, byte[] value) {
    byte[] record = new byte[HEADER + key.length + value.length];
    writeHeader(record, target, key.length);
    System.arraycopy(key, 0, record, HEADER, key.length);
    System.arraycopy(value, 0, record, HEADER + key.length, value.length);
    return record;
  }

  /**
   * A record of a stored key and value, each one version byte and a row ({@code
   * StateReadSide#plainRowVersion}), with {@code version} as that byte of both.
   */
  static byte[] packStored(int target, byte[] key, byte[] value, byte version) {
    byte[] record = pack(target, key, value);
    record[HEADER] = version;
    record[HEADER + key.length] = version;
    return record;
  }

  static int target(byte[] record) {
    return readInt(record, 0);
  }

  static int keyLength(byte[] record) {
    return readInt(record, 4);
  }

  static int valueOffset(byte[] record) {
    return HEADER + keyLength(record);
  }

  static int valueLength(byte[] record) {
    return record.length - valueOffset(record);
  }

  private static void writeHeader(byte[] record, int target, int keyLength) {
    writeInt(record, 0, target);
    writeInt(record, 4, keyLength);
  }

  private static void writeInt(byte[] b, int at, int v) {
    b[at] = (byte) (v >>> 24);
    b[at + 1] = (byte) (v >>> 16);
    b[at + 2] = (byte) (v >>> 8);
    b[at + 3] = (byte) v;
  }

  private static int readInt(byte[] b, int at) {
    return (b[at] & 0xff) << 24
        | (b[at + 1] & 0xff) << 16
        | (b[at + 2] & 0xff) << 8
        | (b[at + 3] & 0xff);
  }

  /**
   * Orders records by their key bytes compared as unsigned bytes: RocksDB's default (bytewise)
   * comparator, which Spark's state stores use, so a sorted partition can go into an SST file.
   */
  static final class KeyBytesOrder implements Comparator<byte[]>, Serializable {
    @Override
    public int compare(byte[] a, byte[] b) {
      return Arrays.compareUnsigned(
          a, HEADER, HEADER + keyLength(a), b, HEADER, HEADER + keyLength(b));
    }
  }

  /**
   * Sends each record to the shuffle partition of its target in the header: target {@code t} to
   * partition {@code t / targetsPerPartition}, so that one task may write several targets.
   */
  static final class TargetPartitioner extends Partitioner {
    private final int targets;
    private final int targetsPerPartition;

    TargetPartitioner(int targets) {
      this(targets, 1);
    }

    TargetPartitioner(int targets, int targetsPerPartition) {
      this.targets = targets;
      this.targetsPerPartition = Math.max(1, targetsPerPartition);
    }

    @Override
    public int numPartitions() {
      return (targets + targetsPerPartition - 1) / targetsPerPartition;
    }

    @Override
    public int getPartition(Object record) {
      return target((byte[]) record) / targetsPerPartition;
    }

    @Override
    public boolean equals(Object other) {
      return other instanceof TargetPartitioner t
          && t.targets == targets
          && t.targetsPerPartition == targetsPerPartition;
    }

    @Override
    public int hashCode() {
      return targets * 31 + targetsPerPartition;
    }
  }
}
