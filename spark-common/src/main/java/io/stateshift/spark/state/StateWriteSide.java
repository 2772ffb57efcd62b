package io.stateshift.spark.state;

import io.stateshift.checkpoint.StoreSpec;
import io.stateshift.checkpoint.spi.Redistribution.PartitionCount;
import java.io.IOException;
import java.io.Serializable;
import java.io.UncheckedIOException;
import java.util.Iterator;
import java.util.List;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.Path;
import org.apache.spark.sql.execution.streaming.state.StateStoreConf;
import scala.Tuple2;

/**
 * The write side of the shuffle and of the in-place rewrite: runs in a task per new (store,
 * partition) and writes the records given for it into the staging area, as the new partition's
 * store keeps them: a snapshot written directly (HDFS-backed), column families through the
 * provider's puts, or RocksDB as one SST file (records sorted by their key bytes) or the provider's
 * puts.
 */
final class StateWriteSide implements Serializable {
  private final RedistributionContext ctx;

  StateWriteSide(RedistributionContext ctx) {
    this.ctx = ctx;
  }

  Iterator<PartitionCount> write(int target, Iterator<Tuple2<byte[], Object>> shuffled) {
    ctx.beginTask();
    StoreSpec spec = ctx.writeSpec(target / ctx.newPartitions);
    int partition = target % ctx.newPartitions;
    ctx.beginTarget(target);
    Iterator<byte[]> records =
        new Iterator<>() {
          @Override
          public boolean hasNext() {
            return shuffled.hasNext();
          }

          @Override
          public byte[] next() {
            return shuffled.next()._1();
          }
        };
    String stateRoot = ctx.stagedStateRoot();
    PartitionCount count;
    if (!ctx.writeRocksDb) {
      count = writeHdfsSnapshot(spec, partition, records);
    } else {
      RocksDbSnapshotWriter.Written written =
          rocksDbWriter(spec)
              .write(
                  stateRoot,
                  spec,
                  partition,
                  ctx.writeStoreConf,
                  ctx.hadoopConf(),
                  ctx.writeBatchId,
                  records);
      count =
          new PartitionCount(
              spec.slot(), partition, written.rows(), written.bytes(), written.checkpointId());
    }
    return List.of(count).iterator();
  }

  /** How a RocksDB new partition is written from its records. */
  private interface RocksDbWriter {
    RocksDbSnapshotWriter.Written write(
        String stateRoot,
        StoreSpec spec,
        int partition,
        StateStoreConf storeConf,
        Configuration hadoopConf,
        long batchId,
        Iterator<byte[]> records);
  }

  /**
   * Column families through the provider's puts ({@link ColumnFamilyStates}); else one SST file
   * from records sorted by their key bytes, or the provider's puts, as the job's mode says.
   */
  private RocksDbWriter rocksDbWriter(StoreSpec spec) {
    if (spec.hasColumnFamilies()) {
      return ColumnFamilyStates::write;
    }
    return ctx.rocksDbMode == RocksDbSnapshotWriter.Mode.SST
        ? RocksDbSnapshotWriter::writeSorted
        : RocksDbSnapshotWriter::writeWithPuts;
  }

  /**
   * The HDFS-backed store's snapshot format is simple enough to write directly: a compressed stream
   * of [keyLength][key][valueLength][value] records ended by -1.
   */
  private PartitionCount writeHdfsSnapshot(
      StoreSpec spec, int partition, Iterator<byte[]> records) {
    Path file = ctx.snapshotFile(spec, partition);
    long rows = 0;
    long bytes = 0;
    try (HdfsFileExchange.SnapshotWriter out =
        new HdfsFileExchange.SnapshotWriter(
            file.getFileSystem(ctx.hadoopConf()),
            file,
            HdfsFileExchange.codec(ctx.compressionCodec))) {
      while (records.hasNext()) {
        byte[] record = records.next();
        int keyLength = StateRecords.keyLength(record);
        int valueOffset = StateRecords.valueOffset(record);
        int valueLength = record.length - valueOffset;
        out.append(record, StateRecords.HEADER, keyLength, record, valueOffset, valueLength);
        rows++;
        bytes += keyLength + valueLength;
      }
    } catch (IOException e) {
      throw new UncheckedIOException("Cannot write " + file + ": " + e.getMessage(), e);
    }
    return new PartitionCount(spec.slot(), partition, rows, bytes, null);
  }
}
