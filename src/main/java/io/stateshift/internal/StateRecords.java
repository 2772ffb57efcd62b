package io.stateshift.internal;

import java.nio.ByteBuffer;
import org.apache.spark.sql.catalyst.expressions.UnsafeRow;

/** One state entry as it travels through the shuffle: [keyLength][key bytes][value bytes]. */
final class StateRecords {
  private StateRecords() {}

  static byte[] pack(UnsafeRow key, UnsafeRow value) {
    int keySize = key.getSizeInBytes();
    int valueSize = value.getSizeInBytes();
    byte[] record = new byte[4 + keySize + valueSize];
    ByteBuffer.wrap(record).putInt(keySize);
    key.writeToMemory(record, org.apache.spark.unsafe.Platform.BYTE_ARRAY_OFFSET + 4);
    value.writeToMemory(record, org.apache.spark.unsafe.Platform.BYTE_ARRAY_OFFSET + 4 + keySize);
    return record;
  }

  static int keyLength(byte[] record) {
    return ByteBuffer.wrap(record).getInt(0);
  }
}
