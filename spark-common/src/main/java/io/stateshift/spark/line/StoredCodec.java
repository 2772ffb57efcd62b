package io.stateshift.spark.line;

import java.util.function.Function;
import org.apache.spark.sql.catalyst.expressions.UnsafeRow;

/**
 * A store's keys and values as the line's Spark RocksDB encoders store them ({@link
 * RocksDbCalls#codec}): a row to its stored bytes and back (the bytes exactly sized), and whether a
 * stored key is the key row behind a header of the same length in every key (no prefix key
 * columns), so that a row can be pointed at the stored bytes.
 */
public record StoredCodec(
    Function<UnsafeRow, byte[]> encodeKey,
    Function<UnsafeRow, byte[]> encodeValue,
    Function<byte[], UnsafeRow> decodeKey,
    Function<byte[], UnsafeRow> decodeValue,
    boolean keyRowAtFixedOffset) {}
