package io.stateshift.spark.state;

import io.stateshift.checkpoint.StoreSpec;
import io.stateshift.spark.line.RocksDbCalls;
import io.stateshift.spark.line.StoredCodec;
import org.apache.spark.sql.catalyst.expressions.UnsafeRow;

/**
 * Spark's RocksDB encoding of one store, with the line's own encoders ({@link RocksDbCalls#codec}):
 * the bytes its puts would store, as the read side of the SST paths encodes records, and the rows
 * behind stored bytes, as the file exchanges place and edit the entries they move.
 */
final class RocksDbEncoding {
  private final StoredCodec codec;

  RocksDbEncoding(StoreSpec spec) {
    this.codec = RocksDbCalls.codec(spec);
  }

  byte[] record(int target, UnsafeRow key, UnsafeRow value) {
    return StateRecords.pack(target, key(key), value(value));
  }

  /** The bytes RocksDB stores for {@code key}. */
  byte[] key(UnsafeRow key) {
    return codec.encodeKey().apply(key);
  }

  /** The bytes RocksDB stores for {@code value}. */
  byte[] value(UnsafeRow value) {
    return codec.encodeValue().apply(value);
  }

  /** The key row behind the stored bytes {@code key} (exactly sized). */
  UnsafeRow decodeKey(byte[] key) {
    return codec.decodeKey().apply(key);
  }

  /** The value row behind the stored bytes {@code value} (exactly sized). */
  UnsafeRow decodeValue(byte[] value) {
    return codec.decodeValue().apply(value);
  }

  /** See {@link StoredCodec#keyRowAtFixedOffset}. */
  boolean keyRowAtFixedOffset() {
    return codec.keyRowAtFixedOffset();
  }
}
