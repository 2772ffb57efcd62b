package io.stateshift.spark.state;

import io.stateshift.checkpoint.PlacementCheck;
import io.stateshift.checkpoint.StoreSpec;
import io.stateshift.checkpoint.spi.Redistribution;
import io.stateshift.config.StateShiftConf;
import io.stateshift.spark.state.StateRedistributionJob.ReadOutcome;
import io.stateshift.spark.state.StateRedistributionJob.StagedFile;
import java.io.File;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.UUID;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.LocalFileSystem;
import org.apache.spark.sql.catalyst.expressions.UnsafeRow;
import org.apache.spark.sql.execution.streaming.state.KeyStateEncoderSpec;
import org.apache.spark.sql.execution.streaming.state.NoPrefixKeyStateEncoder;
import org.apache.spark.sql.execution.streaming.state.ReadStateStore;
import org.apache.spark.sql.execution.streaming.state.RocksDB;
import org.apache.spark.sql.execution.streaming.state.RocksDBKeyStateEncoder;
import org.apache.spark.sql.execution.streaming.state.RocksDBStateEncoder;
import org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider;
import org.apache.spark.sql.execution.streaming.state.StateStoreConf;
import org.apache.spark.sql.execution.streaming.state.StateStoreId;
import org.apache.spark.sql.execution.streaming.state.StateStoreProvider;
import org.apache.spark.sql.execution.streaming.state.UnsafeRowDataEncoder;
import org.apache.spark.unsafe.Platform;
import org.rocksdb.DirectSlice;
import org.rocksdb.EnvOptions;
import org.rocksdb.IngestExternalFileOptions;
import org.rocksdb.Options;
import org.rocksdb.ReadOptions;
import org.rocksdb.RocksDBException;
import org.rocksdb.RocksIterator;
import org.rocksdb.SstFileWriter;

/**
 * RocksDB to RocksDB without Spark's shuffle and without decoding a single value.
 *
 * <p>For the same key and value schema, the bytes Spark's RocksDB encoders store are the same in
 * the old and the new partition, so they are moved as they are: each read task loads one old
 * partition through Spark's provider, walks the native database in key order, decodes only the key
 * (an UnsafeRow pointed at the raw bytes) to compute its new partition with Spark's hash, and
 * appends key and value bytes to one SST file per new partition. A filtered subsequence of a sorted
 * walk is sorted, so no sort is needed. The files are staged on the checkpoint's file system; each
 * write task then ingests every file of its partition in one call into the empty store Spark's
 * provider opened (RocksDB gives overlapping files their own sequence numbers; keys are unique
 * across them), and Spark's own commit snapshots and uploads the store.
 *
 * <p>Applies when both sides are RocksDB with the UnsafeRow encoding and no row checksums (what
 * {@link RocksDbSnapshotWriter.Mode#SST} requires), default column family only, and at most {@link
 * #MAX_FILES_PER_PARTITION} old partitions (each becomes one file, and overlapping files land in
 * RocksDB's level 0, where too many would stall writes). Otherwise the job falls back to the
 * shuffle path.
 */
final class RocksDbSstExchange {
  /** Old partitions above this use the shuffle path (one sorted SST file per new partition). */
  static final int MAX_FILES_PER_PARTITION = 16;

  /**
   * Spark conf to force the shuffle path, for comparison: {@code shuffle}; default {@code files}.
   */
  static final String EXCHANGE_CONF = StateShiftConf.ROCKSDB_EXCHANGE.key();

  /**
   * Whether a new partition's ingested files are compacted into one (on unless {@code
   * spark.stateshift.rocksdb.compactAfterIngest} is false).
   */
  static final boolean COMPACT_AFTER_INGEST = StateShiftConf.ROCKSDB_COMPACT_AFTER_INGEST.inTask();

  private RocksDbSstExchange() {}

  /** The key decoder for one store, to compute the new partition from the stored key bytes. */
  static RocksDBKeyStateEncoder keyDecoder(StoreSpec spec) {
    KeyStateEncoderSpec keySpec = StateStores.keyEncoderSpec(spec);
    UnsafeRowDataEncoder data = new UnsafeRowDataEncoder(keySpec, spec.valueSchema());
    return RocksDBStateEncoder.getKeyEncoder(data, keySpec, false);
  }

  /**
   * Read side: walks {@code store} (a loaded RocksDB read store) and writes one SST file per new
   * partition that gets at least one key, staged under the task's exchange folder.
   */
  static ReadOutcome split(SplitTask task, ReadStateStore store) {
    RocksDB db = ((RocksDBStateStoreProvider.RocksDBStateStore) store).dbInstance();
    return split(task, RocksDbInternals.nativeDb(db), db.rocksDbOptions(), db.localRootDir());
  }

  /** The same, from a snapshot opened read-only, with the task's shared options. */
  static ReadOutcome split(SplitTask task, RocksDbSnapshotReader snapshot, RocksDbTaskScope scope) {
    return split(task, snapshot.db(), scope.options(), scope.localRootDir());
  }

  /**
   * Whether RocksDB reports damage to its files (a block checksum mismatch, a bad magic number, a
   * truncated block): the status code RocksDB gives every such error.
   */
  static boolean isCorruption(Throwable e) {
    for (Throwable t = e; t != null; t = t.getCause()) {
      if (t instanceof RocksDBException r
          && r.getStatus() != null
          && r.getStatus().getCode() == org.rocksdb.Status.Code.Corruption) {
        return true;
      }
    }
    return false;
  }

  private static ReadOutcome split(
      SplitTask task, org.rocksdb.RocksDB db, Options options, File localRoot) {
    StoreSpec spec = task.spec();
    int oldPartition = task.oldPartition();
    int newPartitions = task.newPartitions();
    int firstTarget = task.firstTarget();
    PlacementCheck check = task.check();
    String exchangeDir = task.exchangeDir();
    TaskTimer timer = task.timer();
    RocksDBKeyStateEncoder keys = keyDecoder(spec);
    org.apache.hadoop.fs.Path stagingDir = new org.apache.hadoop.fs.Path(exchangeDir);
    FileSystem fs;
    try {
      fs = stagingDir.getFileSystem(task.hadoopConf());
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
    // On a local checkpoint the SST files are written in place; otherwise locally, then uploaded.
    boolean localStaging = fs instanceof LocalFileSystem;
    File localDir =
        localStaging
            ? ((LocalFileSystem) fs).pathToFile(stagingDir)
            : new File(localRoot, "stateshift-exchange-" + UUID.randomUUID());
    if (!localDir.mkdirs() && !localDir.isDirectory()) {
      throw new UncheckedIOException(new IOException("Cannot create " + localDir));
    }
    String fileStem = task.newFileStem();
    SstFileWriter[] writers = new SstFileWriter[newPartitions];
    File[] files = new File[newPartitions];
    long[] rows = new long[newPartitions];
    long[] bytes = new long[newPartitions];
    long totalRows = 0;
    long totalBytes = 0;
    List<StagedFile> staged = new ArrayList<>();
    try (EnvOptions env = new EnvOptions();
        ReadOptions scan = scanOptions();
        RocksIterator it = db.newIterator(scan);
        RawEntry entry = new RawEntry(keys, spec.keySchema().length())) {
      try {
        for (it.seekToFirst(); it.isValid(); it.next()) {
          UnsafeRow keyRow = entry.read(it);
          int hash = task.placement().hash(keyRow);
          if (check != null && check.misplaced(hash)) {
            check.report(task.source());
          }
          int p = StateStores.KeyPlacement.pmod(hash, newPartitions);
          if (writers[p] == null) {
            files[p] = new File(localDir, "to-" + (firstTarget + p) + "-from-" + fileStem + ".sst");
            writers[p] = new SstFileWriter(env, options);
            writers[p].open(files[p].getAbsolutePath());
          }
          rows[p]++;
          bytes[p] += entry.length();
          entry.writeTo(writers[p]);
        }
        it.status();
        timer.lap("iterate+sst-write");
        for (int p = 0; p < newPartitions; p++) {
          if (writers[p] != null) {
            writers[p].finish();
            totalRows += rows[p];
            totalBytes += bytes[p];
          }
        }
        timer.lap("sst-finish");
      } finally {
        for (SstFileWriter writer : writers) {
          if (writer != null) {
            writer.close();
          }
        }
      }
      for (int p = 0; p < newPartitions; p++) {
        if (files[p] == null) {
          continue;
        }
        org.apache.hadoop.fs.Path target =
            new org.apache.hadoop.fs.Path(stagingDir, files[p].getName());
        long fileBytes = files[p].length();
        if (!localStaging) {
          fs.copyFromLocalFile(true, true, new org.apache.hadoop.fs.Path(files[p].toURI()), target);
        }
        staged.add(
            new StagedFile(firstTarget + p, target.toString(), rows[p], bytes[p], fileBytes));
      }
      timer.lap("stage");
    } catch (RocksDBException e) {
      throw new IllegalStateException(
          "Cannot split old partition "
              + oldPartition
              + " of store "
              + spec.storeName()
              + " into SST files: "
              + e.getMessage(),
          e);
    } catch (IOException e) {
      throw new UncheckedIOException(
          "Cannot stage SST files in " + exchangeDir + ": " + e.getMessage(), e);
    } finally {
      if (!localStaging) {
        RocksDbTaskScope.deleteRecursively(localDir);
      }
    }
    return new ReadOutcome(
        new Redistribution.PartitionCount(spec.slot(), oldPartition, totalRows, totalBytes, null),
        staged);
  }

  /**
   * The entry under a RocksDB iterator, copied into reusable Java arrays (one JNI copy each) and
   * handed to the SST writer through two reusable native slices over direct buffers. This path
   * makes no JNI lookup of a buffer per call: the {@code ByteBuffer} variants of the iterator's and
   * the writer's calls resolve each buffer's address and capacity on every call (eight lookups per
   * entry, a fifth of a walk's CPU), and the {@code byte[]} variant of the writer's put copies both
   * arrays into native memory. The key array also backs the UnsafeRow that is hashed.
   */
  static final class RawEntry implements AutoCloseable {
    private final RocksDBKeyStateEncoder keys;
    private final UnsafeRow keyRow;
    private final Slot key = new Slot(256);
    private final Slot value = new Slot(1024);

    /** Bytes before the UnsafeRow in a stored key (Spark's encoding version); -1 until known. */
    private int rowOffset = -1;

    RawEntry(RocksDBKeyStateEncoder keys, int keyFields) {
      this.keys = keys;
      this.keyRow = new UnsafeRow(keyFields);
    }

    /** Copies the iterator's entry and returns its key as a row (valid until the next read). */
    UnsafeRow read(RocksIterator it) {
      int keyLength = key.read(it, true);
      value.read(it, false);
      if (!(keys instanceof NoPrefixKeyStateEncoder)) {
        return keys.decodeKey(Arrays.copyOf(key.bytes, keyLength));
      }
      if (rowOffset < 0) {
        // Without a key prefix the row starts at the same offset in every stored key: Spark's
        // decoder tells it once, on an exactly sized copy.
        UnsafeRow decoded = keys.decodeKey(Arrays.copyOf(key.bytes, keyLength));
        rowOffset = (int) (decoded.getBaseOffset() - Platform.BYTE_ARRAY_OFFSET);
      }
      keyRow.pointTo(key.bytes, Platform.BYTE_ARRAY_OFFSET + rowOffset, keyLength - rowOffset);
      return keyRow;
    }

    /** Key and value bytes of the entry last read. */
    int length() {
      return key.length + value.length;
    }

    /** Appends the entry last read. */
    void writeTo(SstFileWriter writer) throws RocksDBException {
      writer.put(key.toNative(), value.toNative());
    }

    @Override
    public void close() {
      key.close();
      value.close();
    }
  }

  /** One side of an entry: a Java array, and a native slice over a direct copy of it. */
  static final class Slot implements AutoCloseable {
    byte[] bytes;
    int length;

    /** Kept referenced: the slice and {@link #address} point into it. */
    private ByteBuffer buffer;

    private long address;
    private DirectSlice slice;

    /** The length the native slice was last given, so that it is set only on a change. */
    private int sliceLength = -1;

    Slot(int capacity) {
      allocate(capacity);
    }

    int read(RocksIterator it, boolean isKey) {
      length = isKey ? it.key(bytes, 0, bytes.length) : it.value(bytes, 0, bytes.length);
      if (length > bytes.length) {
        close();
        allocate(Math.max(length, bytes.length * 2));
        length = isKey ? it.key(bytes, 0, bytes.length) : it.value(bytes, 0, bytes.length);
      }
      return length;
    }

    DirectSlice toNative() {
      // Eight bytes at a time: entries are short, and ByteBuffer's bulk put (a call into the
      // VM per copy) took a tenth of a walk's CPU.
      int i = 0;
      for (; i + 8 <= length; i += 8) {
        Platform.putLong(
            null, address + i, Platform.getLong(bytes, Platform.BYTE_ARRAY_OFFSET + i));
      }
      for (; i < length; i++) {
        Platform.putByte(null, address + i, bytes[i]);
      }
      if (length != sliceLength) {
        slice.setLength(length);
        sliceLength = length;
      }
      return slice;
    }

    private void allocate(int capacity) {
      bytes = new byte[capacity];
      buffer = ByteBuffer.allocateDirect(capacity);
      address = Platform.getDirectBufferAddress(buffer);
      slice = new DirectSlice(buffer, capacity);
      sliceLength = capacity;
    }

    @Override
    public void close() {
      slice.close();
    }
  }

  /**
   * Options for the one pass over an old store: its blocks are read once, so they bypass the block
   * cache (filling Spark's small per-store cache only evicts blocks that are never read again), and
   * the files are read ahead in large chunks.
   */
  static ReadOptions scanOptions() {
    return new ReadOptions().setFillCache(false).setReadaheadSize(4L << 20);
  }

  /**
   * Write side: writes version {@code batchId + 1} of the new partition under {@code stateRoot}
   * from {@code files}, in one ingestion: directly in Spark's snapshot format with the task's
   * shared options ({@link RocksDbDirectCommit}) when it applies, else through Spark's provider,
   * which opens the store empty and commits it. The staged files stay where they are (a retried
   * task finds them again); the job deletes them when every partition is written.
   */
  static RocksDbSnapshotWriter.Written ingest(
      String stateRoot,
      StoreSpec spec,
      int partition,
      StateStoreConf storeConf,
      Configuration hadoopConf,
      long batchId,
      List<StagedFile> files,
      RocksDbTaskScope scope) {
    TaskTimer timer = new TaskTimer("write " + spec.storeName() + "/" + partition);
    long rows = files.stream().mapToLong(StagedFile::rows).sum();
    long bytes = files.stream().mapToLong(StagedFile::bytes).sum();
    if (scope != null && RocksDbDirectCommit.applies(storeConf)) {
      List<String> local = new ArrayList<>();
      try {
        for (StagedFile file : files) {
          local.add(localCopy(file, scope.localRootDir(), hadoopConf));
        }
        timer.lap("fetch");
        RocksDbDirectCommit.commit(
            scope,
            new StateStoreId(stateRoot, spec.operatorId(), partition, spec.storeName()),
            hadoopConf,
            batchId + 1,
            local,
            rows,
            local.size() > 1 && COMPACT_AFTER_INGEST,
            timer);
        return new RocksDbSnapshotWriter.Written(rows, bytes, null);
      } finally {
        local.forEach(path -> new File(path).delete()); // gone unless ingestion failed
        timer.report();
      }
    }
    StateStoreProvider provider =
        StateStores.open(stateRoot, spec, partition, storeConf, hadoopConf);
    try {
      return StateStores.writeNewVersion(
          provider,
          batchId,
          store -> {
            timer.lap("open");
            RocksDB db = ((RocksDBStateStoreProvider.RocksDBStateStore) store).dbInstance();
            List<String> local = new ArrayList<>();
            for (StagedFile file : files) {
              local.add(localCopy(file, db.localRootDir(), hadoopConf));
            }
            timer.lap("fetch");
            if (!local.isEmpty()) {
              try (IngestExternalFileOptions options = new IngestExternalFileOptions()) {
                options.setMoveFiles(true); // links of our own local copies, in the store's folder
                RocksDbInternals.nativeDb(db).ingestExternalFile(local, options);
                if (local.size() > 1 && COMPACT_AFTER_INGEST) {
                  // One file instead of one per old partition: Spark's commit uploads, and the
                  // switch moves, every file, and reads of the restarted query merge fewer levels.
                  timer.lap("ingest");
                  CompactionThreads.forEveryCore();
                  RocksDbInternals.nativeDb(db).compactRange();
                  timer.lap("compact");
                }
              } catch (RocksDBException e) {
                throw new IllegalStateException(
                    "Cannot ingest "
                        + local.size()
                        + " SST files into "
                        + "partition "
                        + partition
                        + " of store "
                        + spec.storeName()
                        + ": "
                        + e.getMessage(),
                    e);
              } finally {
                local.forEach(path -> new File(path).delete()); // gone unless ingestion failed
              }
            }
            timer.lap("ingest");
            RocksDbInternals.setKeysOnWritingVersion(db, rows);
            store.commit();
            timer.lap("commit");
            if (TaskTimer.ENABLED && db.metricsOpt().isDefined()) {
              timer.note("spark-commit", db.metricsOpt().get().lastCommitLatencyMs().toString());
            }
            return new RocksDbSnapshotWriter.Written(rows, bytes, null)
                .withCheckpointIdOf(store, storeConf);
          });
    } finally {
      timer.lap("close");
      timer.report();
    }
  }

  /**
   * A file of the store's own local folder with the staged file's content: a hard link when the
   * staged file is on the same local disk, else a copy (downloaded from the checkpoint's file
   * system). Ingestion consumes this file; the staged one stays for a task retry.
   */
  private static String localCopy(StagedFile file, File localDir, Configuration hadoopConf) {
    File local = new File(localDir, "stateshift-ingest-" + UUID.randomUUID() + ".sst");
    org.apache.hadoop.fs.Path staged = new org.apache.hadoop.fs.Path(file.path());
    try {
      FileSystem fs = staged.getFileSystem(hadoopConf);
      if (fs instanceof LocalFileSystem localFs) {
        RocksDbTaskScope.linkOrCopy(localFs.pathToFile(staged).toPath(), local.toPath());
      } else {
        fs.copyToLocalFile(false, staged, new org.apache.hadoop.fs.Path(local.toURI()), true);
      }
    } catch (IOException e) {
      throw new UncheckedIOException(
          "Cannot fetch the staged SST file " + staged + ": " + e.getMessage(), e);
    }
    file.checkLength(local.length());
    return local.getAbsolutePath();
  }
}
