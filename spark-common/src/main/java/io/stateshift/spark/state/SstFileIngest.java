package io.stateshift.spark.state;

import java.io.File;
import java.nio.ByteBuffer;
import java.util.Iterator;
import java.util.List;
import java.util.UUID;
import org.rocksdb.EnvOptions;
import org.rocksdb.IngestExternalFileOptions;
import org.rocksdb.Options;
import org.rocksdb.RocksDBException;
import org.rocksdb.SstFileWriter;

/**
 * The write of the SST ingestion path on every line: records packed by {@link StateRecords},
 * already sorted by key bytes, written as one SST file in the store's local folder and ingested
 * into its native database. Each line's writer supplies the database, its options and the folder
 * from its own Spark's RocksDB class.
 */
final class SstFileIngest {
  private SstFileIngest() {}

  /** What one ingestion wrote: entries, and key plus value bytes. */
  record Ingested(long rows, long bytes) {}

  static Ingested ingest(
      org.rocksdb.RocksDB nativeDb,
      Options options,
      File localDir,
      Iterator<byte[]> records,
      TaskTimer timer) {
    File sst = new File(localDir, "stateshift-" + UUID.randomUUID() + ".sst");
    long rows = 0;
    long bytes = 0;
    try {
      try (EnvOptions env = new EnvOptions();
          SstFileWriter writer = new SstFileWriter(env, options)) {
        writer.open(sst.getAbsolutePath());
        ByteBuffer key = ByteBuffer.allocateDirect(1 << 12);
        ByteBuffer value = ByteBuffer.allocateDirect(1 << 12);
        while (records.hasNext()) {
          byte[] record = records.next();
          int keyLength = StateRecords.keyLength(record);
          int valueOffset = StateRecords.HEADER + keyLength;
          int valueLength = record.length - valueOffset;
          key = fill(key, record, StateRecords.HEADER, keyLength);
          value = fill(value, record, valueOffset, valueLength);
          writer.put(key, value);
          rows++;
          bytes += keyLength + valueLength;
        }
        writer.finish();
      }
      timer.lap("shuffle-read+sst-write");
      try (IngestExternalFileOptions ingest = new IngestExternalFileOptions()) {
        ingest.setMoveFiles(true); // a hard link: the file is in the store's local folder
        nativeDb.ingestExternalFile(List.of(sst.getAbsolutePath()), ingest);
      }
      timer.lap("ingest");
    } catch (RocksDBException e) {
      throw new IllegalStateException(
          "Cannot build or ingest the SST file " + sst + ": " + e.getMessage(), e);
    } finally {
      sst.delete(); // moved into the store by now, unless ingestion failed
    }
    return new Ingested(rows, bytes);
  }

  /** Copies {@code length} bytes into a direct buffer (grown if needed), ready to be read. */
  private static ByteBuffer fill(ByteBuffer buffer, byte[] from, int offset, int length) {
    ByteBuffer target = buffer;
    if (target.capacity() < length) {
      target = ByteBuffer.allocateDirect(Integer.highestOneBit(length) << 1);
    }
    target.clear();
    target.put(from, offset, length);
    target.flip();
    return target;
  }
}
