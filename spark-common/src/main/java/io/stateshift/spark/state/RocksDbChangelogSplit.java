package io.stateshift.spark.state;

import io.stateshift.checkpoint.StateFileDamage;
import io.stateshift.checkpoint.spi.Redistribution;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.apache.hadoop.fs.FileStatus;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;
import org.apache.spark.io.CompressionCodec;
import org.apache.spark.sql.catalyst.expressions.UnsafeRow;
import org.apache.spark.sql.execution.streaming.state.StateStoreId;
import org.rocksdb.RocksIterator;

/**
 * The RocksDB file exchange's read side for a version that has no snapshot of its own: with
 * changelog checkpointing, Spark uploads a snapshot only every few versions and logs every
 * version's puts and deletes in {@code <version>.changelog} (the HDFS-backed delta format). Spark's
 * provider rebuilds such a version by writing each logged change into a fresh RocksDB instance;
 * here the changelogs since the newest snapshot are indexed in memory ({@link DeltaChain}, newest
 * entry per key), the snapshot is opened read-only ({@link RocksDbSnapshotReader}) and walked once,
 * leaving out the keys the changelogs changed, and every live entry is staged in its stored
 * encoding as sorted runs ({@link RocksDbRunStaging}) for the usual write side, less what an edit
 * leaves out ({@link RocksDbSstExchange.StoredEdit}). Nothing is written into a RocksDB instance on
 * the read side.
 */
final class RocksDbChangelogSplit {
  /** Versions split this way in this JVM (local mode runs its tasks here): tests read it. */
  static final java.util.concurrent.atomic.LongAdder SPLITS =
      new java.util.concurrent.atomic.LongAdder();

  private RocksDbChangelogSplit() {}

  /**
   * Splits {@code version} of {@code store} from its newest older snapshot (if any) and the
   * changelogs after it; null when a changelog of that range is missing (the provider then loads
   * the version, as Spark would).
   */
  static StateRedistributionJob.ReadOutcome split(
      SplitTask task,
      RocksDbTaskScope scope,
      StateStoreId store,
      long version,
      CompressionCodec codec,
      String checkpointRoot) {
    Path dir = store.storeCheckpointLocation();
    TaskTimer timer = task.timer();
    RocksDbRunStaging staging = null;
    try {
      FileSystem fs = dir.getFileSystem(task.hadoopConf());
      Map<String, FileStatus> files = new HashMap<>();
      if (task.listedFiles() != null) { // the driver's listing: no request per file
        task.listedFiles().forEach((name, f) -> files.put(name, f.status(fs, new Path(dir, name))));
      } else {
        for (FileStatus status : fs.listStatus(dir)) {
          files.put(status.getPath().getName(), status);
        }
      }
      long snapshot = 0;
      for (long v = version; v > 0 && snapshot == 0; v--) {
        if (files.containsKey(v + ".zip")) {
          snapshot = v;
        }
      }
      List<FileStatus> changelogs = new ArrayList<>();
      for (long v = version; v > snapshot; v--) {
        FileStatus changelog = files.get(v + ".changelog");
        if (changelog == null) {
          return null;
        }
        changelogs.add(changelog);
      }
      timer.lap("list");
      DeltaChain chain = DeltaChain.readListed(fs, changelogs, codec);
      timer.lap("read-changelogs");
      Path stagingDir = new Path(task.exchangeDir());
      staging =
          RocksDbRunStaging.forStoredEntries(
              task, stagingDir.getFileSystem(task.hadoopConf()), stagingDir);
      Emitter emit = new Emitter(task, staging);
      chain.forEachLiveNewest(emit::accept);
      if (snapshot > 0) {
        RocksDbSnapshotReader reader =
            RocksDbSnapshotReader.open(
                scope,
                store,
                snapshot,
                ScalaBridge.none(),
                task.hadoopConf(),
                timer,
                task.listedFiles());
        if (reader == null) {
          staging.abandon(); // column families: the provider's load knows their prefixes
          return null;
        }
        try (reader;
            RocksIterator it = reader.db().newIterator(RocksDbSstExchange.scanOptions())) {
          for (it.seekToFirst(); it.isValid(); it.next()) {
            byte[] key = it.key();
            if (!chain.containsKey(key, 0, key.length)) {
              byte[] value = it.value();
              emit.accept(key, 0, key.length, 0, value.length, value);
            }
          }
          it.status();
        }
      }
      timer.lap("split");
      List<StateRedistributionJob.StagedFile> staged = staging.finish();
      timer.lap("stage");
      SPLITS.increment();
      return new StateRedistributionJob.ReadOutcome(
          new Redistribution.PartitionCount(
              task.spec().slot(), task.oldPartition(), emit.rows, emit.bytes, null),
          staged,
          List.of(),
          emit.edit == null ? 0 : emit.edit.leftOut);
    } catch (StateFileDamage.DamagedFile e) {
      abandon(staging);
      throw StateFileDamage.refusal(checkpointRoot, e);
    } catch (IOException e) {
      abandon(staging);
      throw new UncheckedIOException(
          "Cannot split version " + version + " of " + dir + ": " + e.getMessage(), e);
    } catch (org.rocksdb.RocksDBException e) {
      abandon(staging);
      throw new IllegalStateException(
          "Cannot read the snapshot of " + dir + " before version " + version + ": " + e, e);
    } catch (RuntimeException e) {
      abandon(staging);
      throw e;
    }
  }

  private static void abandon(RocksDbRunStaging staging) {
    if (staging != null) {
      staging.abandon();
    }
  }

  /**
   * Sends each live entry the edit keeps, in its stored encoding, to the new partition of its key
   * row; counts every live entry.
   */
  private static final class Emitter {
    private final SplitTask task;
    private final RocksDbRunStaging staging;
    private final RocksDbEncoding keys;
    final RocksDbSstExchange.StoredEdit edit;
    long rows;
    long bytes;

    Emitter(SplitTask task, RocksDbRunStaging staging) {
      this.task = task;
      this.staging = staging;
      this.keys = new RocksDbEncoding(task.spec());
      this.edit = RocksDbSstExchange.StoredEdit.of(task);
    }

    /** The {@link DeltaChain.EntryConsumer} shape, with the value's array last when it differs. */
    void accept(byte[] data, int keyOffset, int keyLength, int valueOffset, int valueLength)
        throws IOException {
      accept(data, keyOffset, keyLength, valueOffset, valueLength, data);
    }

    void accept(
        byte[] keyData,
        int keyOffset,
        int keyLength,
        int valueOffset,
        int valueLength,
        byte[] valueData)
        throws IOException {
      UnsafeRow row = keys.decodeKey(Arrays.copyOfRange(keyData, keyOffset, keyOffset + keyLength));
      int hash = task.placement().hash(row);
      if (task.check() != null && task.check().misplaced(hash)) {
        task.check().report(task.source());
      }
      rows++;
      bytes += keyLength + valueLength;
      int p = StateStores.KeyPlacement.pmod(hash, task.newPartitions());
      if (edit == null) {
        staging.append(p, keyData, keyOffset, keyLength, valueData, valueOffset, valueLength);
      } else if (edit.keeps(row, valueData, valueOffset, valueLength)) {
        byte[] rewritten = edit.rewritten();
        if (rewritten == null) {
          staging.append(p, keyData, keyOffset, keyLength, valueData, valueOffset, valueLength);
        } else {
          staging.append(p, keyData, keyOffset, keyLength, rewritten, 0, rewritten.length);
        }
      }
    }
  }
}
