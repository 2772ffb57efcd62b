package io.stateshift.spark.state;

import io.stateshift.checkpoint.Checkpoint;
import io.stateshift.checkpoint.CheckpointFiles;
import io.stateshift.checkpoint.StateLayout;
import io.stateshift.checkpoint.StoreSpec;
import java.io.DataInputStream;
import java.io.IOException;
import java.io.UncheckedIOException;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;
import org.apache.spark.io.CompressionCodec;
import org.apache.spark.sql.SparkSession;

/**
 * The puts and removals a checkpoint's logs record for a range of state versions (the HDFS-backed
 * store's delta files, RocksDB's changelog files: one record format), over every store and
 * partition: what a tail between a prepared batch and the last one changes.
 */
public final class DeltaChanges {
  private DeltaChanges() {}

  /**
   * Puts, removals and merges (list appends, on a store with column families) recorded by the delta
   * or changelog files of versions {@code first..last}.
   */
  public record Counts(long puts, long removals, long merges) {}

  public static Counts of(
      SparkSession spark, java.nio.file.Path checkpoint, long firstVersion, long lastVersion) {
    CheckpointFiles files =
        CheckpointFiles.at(checkpoint.toString(), spark.sessionState().newHadoopConf());
    StateLayout layout = StateLayout.read(spark, Checkpoint.load(files), true);
    CompressionCodec codec =
        HdfsFileExchange.codec(StateStores.storeConf(layout.storeConf()).compressionCodec());
    FileSystem fs = files.fs();
    long[] counts = new long[3];
    byte[][] entry = new byte[2][];
    io.stateshift.checkpoint.TailFiles logs =
        io.stateshift.checkpoint.TailFiles.of(layout, firstVersion, lastVersion);
    for (StoreSpec spec : layout.stores()) {
      for (int p = 0; p < layout.partitions(); p++) {
        for (long v = firstVersion; v <= lastVersion; v++) {
          Path delta = new Path(files.path(spec.dir(p)), logs.name(spec, p, v));
          try {
            if (spec.hasColumnFamilies()) {
              ColumnFamilyTail.forEachRecord(
                  fs,
                  delta,
                  codec,
                  (type, key, value) ->
                      counts[
                          type == ColumnFamilyTail.PUT
                              ? 0
                              : type == ColumnFamilyTail.MERGE ? 2 : 1]++);
              continue;
            }
            try (DataInputStream in = HdfsFileExchange.decoding(fs.open(delta), codec, delta)) {
              if (layout.checkpointIdsEnabled()) { // format v2: the format, then the lineage
                in.readUTF();
                in.readUTF();
              }
              while (HdfsFileExchange.nextEntry(in, delta, entry)) {
                counts[entry[1] == null ? 1 : 0]++;
              }
            }
          } catch (IOException e) {
            throw new UncheckedIOException(e);
          }
        }
      }
    }
    return new Counts(counts[0], counts[1], counts[2]);
  }
}
