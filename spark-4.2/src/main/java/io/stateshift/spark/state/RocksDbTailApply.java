package io.stateshift.spark.state;

import io.stateshift.checkpoint.PreparedManifest;
import java.io.File;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import org.apache.hadoop.conf.Configuration;
import org.apache.spark.sql.execution.streaming.state.RocksDBCheckpointMetadata;
import org.apache.spark.sql.execution.streaming.state.StateStoreId;
import org.rocksdb.Checkpoint;
import org.rocksdb.FlushOptions;
import org.rocksdb.RocksDBException;
import org.rocksdb.WriteBatch;
import org.rocksdb.WriteOptions;

/**
 * One new RocksDB partition from its prepared version and the tail: the prepared version is fetched
 * ({@link RocksDbSnapshotReader#fetch}: linked on a local checkpoint, else downloaded by Spark's
 * file manager) and opened, the newest entry of each key the tail changed is applied (a put or a
 * delete, in the stored encoding, as the changelog holds it), and the result is uploaded as a new
 * version of the staged partition ({@link RocksDbDirectCommit#upload}). Only the tail's keys are
 * decoded and written; the prepared SST files are carried over as they are.
 */
final class RocksDbTailApply {
  private RocksDbTailApply() {}

  /**
   * Applies {@code tail} (key to value, null for a removal) to version {@code preparedVersion} of
   * {@code prepared} and uploads the result as {@code version} of {@code store}.
   *
   * @param preparedRows the keys the manifest recorded for the prepared version
   * @return the keys of the new version
   */
  static long apply(
      RocksDbTaskScope scope,
      StateStoreId prepared,
      long preparedVersion,
      long preparedRows,
      StateStoreId store,
      long version,
      Map<ByteBuffer, byte[]> tail,
      Configuration hadoopConf,
      TaskTimer timer) {
    File dir = scope.newLocalDir("prepared-" + preparedVersion);
    File checkpoint = new File(scope.localRootDir(), "tail-" + version + "-" + UUID.randomUUID());
    try {
      RocksDBCheckpointMetadata metadata;
      try {
        // the prepared SST files are linked on a local checkpoint: RocksDB never rewrites one
        metadata =
            RocksDbSnapshotReader.fetch(
                scope, prepared, preparedVersion, ScalaBridge.none(), dir, hadoopConf, null);
      } catch (RuntimeException e) {
        throw new PreparedManifest.Rejected(
            "the prepared version "
                + preparedVersion
                + " in "
                + prepared.storeCheckpointLocation()
                + " cannot be read: "
                + e.getMessage(),
            e);
      }
      timer.lap("download");
      if (metadata.numKeys() != preparedRows) {
        throw new PreparedManifest.Rejected(
            "the prepared version "
                + preparedVersion
                + " in "
                + prepared.storeCheckpointLocation()
                + " holds "
                + metadata.numKeys()
                + " keys, its manifest recorded "
                + preparedRows);
      }
      long rows = preparedRows;
      boolean anySst;
      try (org.rocksdb.RocksDB db =
              org.rocksdb.RocksDB.open(scope.options(), dir.getAbsolutePath());
          WriteOptions write = new WriteOptions().setDisableWAL(true)) {
        timer.lap("open");
        // in key order, looked up in one call and written in one batch: each change's lookup
        // and write then walk the files in one direction, with no round trip per key
        List<Map.Entry<ByteBuffer, byte[]>> changes = new ArrayList<>(tail.entrySet());
        changes.sort((a, b) -> Arrays.compareUnsigned(a.getKey().array(), b.getKey().array()));
        List<byte[]> keys = new ArrayList<>(changes.size());
        changes.forEach(change -> keys.add(change.getKey().array()));
        List<byte[]> before = db.multiGetAsList(keys);
        try (WriteBatch batch = new WriteBatch()) {
          for (int i = 0; i < keys.size(); i++) {
            byte[] key = keys.get(i);
            boolean existed = before.get(i) != null;
            byte[] value = changes.get(i).getValue();
            if (value != null) {
              batch.put(key, value);
              rows += existed ? 0 : 1;
            } else if (existed) {
              batch.delete(key);
              rows--;
            }
          }
          db.write(write, batch);
        }
        timer.lap("apply");
        try (FlushOptions flush = new FlushOptions().setWaitForFlush(true)) {
          db.flush(flush);
        }
        // a clean folder of the live files only, as Spark's commit takes it
        try (Checkpoint links = Checkpoint.create(db)) {
          links.createCheckpoint(checkpoint.getAbsolutePath());
        }
        timer.lap("checkpoint");
      } catch (RocksDBException e) {
        throw new IllegalStateException(
            "Cannot apply the tail to the prepared version "
                + preparedVersion
                + " of "
                + store
                + " in "
                + dir
                + ": "
                + e.getMessage(),
            e);
      }
      File[] ssts = checkpoint.listFiles((d, name) -> name.endsWith(".sst"));
      anySst = ssts != null && ssts.length > 0;
      RocksDbDirectCommit.upload(scope, store, hadoopConf, checkpoint, version, rows, !anySst);
      timer.lap("upload");
      return rows;
    } finally {
      RocksDbTaskScope.deleteRecursively(checkpoint);
      RocksDbTaskScope.deleteRecursively(dir);
    }
  }
}
