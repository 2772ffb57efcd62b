package io.stateshift.spark.state;

import io.stateshift.checkpoint.PlacementCheck;
import io.stateshift.checkpoint.StoreSpec;
import io.stateshift.checkpoint.spi.Redistribution;
import io.stateshift.config.StateShiftConf;
import io.stateshift.protocol.FailPoints;
import io.stateshift.spark.line.RocksDbCalls;
import io.stateshift.spark.line.StateCalls;
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
import org.apache.spark.sql.execution.streaming.state.ReadStateStore;
import org.apache.spark.sql.execution.streaming.state.RocksDB;
import org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider;
import org.apache.spark.sql.execution.streaming.state.StateStoreConf;
import org.apache.spark.sql.execution.streaming.state.StateStoreId;
import org.apache.spark.sql.execution.streaming.state.StateStoreProvider;
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
 * the old and the new partition, so they are moved as they are: each read task walks one old
 * partition's native database in key order, decodes only the key (an UnsafeRow pointed at the raw
 * bytes) to compute its new partition with Spark's hash, and appends key and value bytes to that
 * new partition's sorted run; a filtered subsequence of a sorted walk is sorted, so no sort is
 * needed. The runs of one old partition go to one staged file on the checkpoint's file system
 * ({@link SortedRuns}), whatever the number of new partitions. Each write task merges the runs of
 * its new partition, one per old partition, in one k-way pass into one sorted SST file, which it
 * ingests into an empty store and commits in Spark's snapshot format: one file per new partition,
 * nothing left to compact, at any number of old and new partitions.
 *
 * <p>An edit ({@link EntryEdit}) is applied on the way: a value is decoded (a row pointed at its
 * stored bytes) only to be tested and rewritten, an entry left out is counted and not appended
 * ({@link StoredEdit}); the kept entries stay in key order.
 *
 * <p>Applies when both sides are RocksDB with the UnsafeRow encoding and no row checksums (what
 * {@link RocksDbSnapshotWriter.Mode#SST} requires) and the default column family only. Otherwise
 * the job falls back to the shuffle path.
 */
final class RocksDbSstExchange {
  /**
   * Spark conf to force the shuffle path, for comparison: {@code shuffle}; default {@code files}.
   */
  static final String EXCHANGE_CONF = StateShiftConf.ROCKSDB_EXCHANGE.key();

  private RocksDbSstExchange() {}

  /**
   * Read side: walks {@code store} (a loaded RocksDB read store) and writes one SST file per new
   * partition that gets at least one key, staged under the task's exchange folder.
   */
  static ReadOutcome split(SplitTask task, ReadStateStore store) {
    RocksDB db = ((RocksDBStateStoreProvider.RocksDBStateStore) store).dbInstance();
    return split(
        task,
        RocksDbInternals.nativeDb(db),
        RocksDbCalls.rocksDbOptions(db),
        StateCalls.localRootDir(db));
  }

  /** The native database under a loaded RocksDB read store. */
  static org.rocksdb.RocksDB nativeDb(ReadStateStore store) {
    return RocksDbInternals.nativeDb(
        ((RocksDBStateStoreProvider.RocksDBStateStore) store).dbInstance());
  }

  /** The same, from a snapshot opened read-only, with the task's shared options. */
  static ReadOutcome split(SplitTask task, RocksDbSnapshotReader snapshot, RocksDbTaskScope scope) {
    return split(task, snapshot.db(), scope.options(), scope.localRootDir());
  }

  /**
   * Read side of a split into a multiple of the old count ({@code newPartitions = k x
   * oldPartitions}), which needs no write side: Spark places a key by {@code pmod(hash, n)}, so a
   * key of old partition p goes to one of the k new partitions p, p + old, ..., p + (k - 1) old,
   * and no other old partition sends keys there. The task walks {@code db} once in key order and
   * puts each entry straight into the SST file of its new partition (a filtered subsequence of a
   * sorted walk is sorted), then commits each of the k partitions as version {@code version} under
   * {@code newStateRoot} ({@link RocksDbDirectCommit}, an empty one where no key went): no staged
   * runs, no second stage; the outcome holds the counts of both sides. Every key's old partition is
   * checked as on the exchange's path; a misplaced key stops the task, so this takes a check that
   * refuses ({@code task.check()}). At the old count ({@code k = 1}) this rewrites each partition
   * where it is, with the task's edit.
   */
  static ReadOutcome splitToMultiple(
      SplitTask task,
      org.rocksdb.RocksDB db,
      RocksDbTaskScope scope,
      int oldPartitions,
      String newStateRoot,
      long version,
      int lastTarget) {
    StoreSpec spec = task.spec();
    int oldPartition = task.oldPartition();
    int newPartitions = task.newPartitions();
    int ways = newPartitions / oldPartitions;
    PlacementCheck check = task.check();
    TaskTimer timer = task.timer();
    SstFileWriter[] writers = new SstFileWriter[ways];
    File[] files = new File[ways];
    long[] rows = new long[ways];
    long[] bytes = new long[ways];
    long totalRows = 0;
    long totalBytes = 0;
    StoredEdit edit = StoredEdit.of(task);
    try {
      try (EnvOptions env = new EnvOptions();
          ReadOptions scan = scanOptions();
          RocksIterator it = db.newIterator(scan);
          RawEntry entry = new RawEntry(new RocksDbEncoding(spec), spec.keySchema().length())) {
        for (it.seekToFirst(); it.isValid(); it.next()) {
          UnsafeRow keyRow = entry.read(it);
          int hash = task.placement().hash(keyRow);
          if (check.misplaced(hash)) {
            check.report(task.source());
            throw new IllegalStateException("a misplaced key in " + task.source());
          }
          totalRows++;
          totalBytes += entry.length();
          if (!entry.keptBy(edit, keyRow)) {
            continue;
          }
          int way =
              (StateStores.KeyPlacement.pmod(hash, newPartitions) - oldPartition) / oldPartitions;
          if (writers[way] == null) {
            files[way] =
                new File(scope.localRootDir(), "stateshift-split-" + UUID.randomUUID() + ".sst");
            writers[way] = new SstFileWriter(env, scope.options());
            writers[way].open(files[way].getAbsolutePath());
          }
          entry.putInto(writers[way]);
          rows[way]++;
          bytes[way] += entry.length();
        }
        it.status();
        timer.lap("iterate+write");
        for (SstFileWriter writer : writers) {
          if (writer != null) {
            writer.finish();
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
      List<Redistribution.PartitionCount> written = new ArrayList<>();
      for (int way = 0; way < ways; way++) {
        int target = oldPartition + way * oldPartitions;
        if (spec.slot() * newPartitions + target == lastTarget) {
          FailPoints.reached("staging-task"); // while other partitions may be half written
        }
        RocksDbDirectCommit.commit(
            scope,
            new StateStoreId(newStateRoot, spec.operatorId(), target, spec.storeName()),
            task.hadoopConf(),
            version,
            files[way] == null ? List.of() : List.of(files[way].getAbsolutePath()),
            rows[way],
            false,
            timer);
        written.add(
            new Redistribution.PartitionCount(spec.slot(), target, rows[way], bytes[way], null));
      }
      return new ReadOutcome(
          new Redistribution.PartitionCount(spec.slot(), oldPartition, totalRows, totalBytes, null),
          List.of(),
          written,
          edit == null ? 0 : edit.leftOut);
    } catch (RocksDBException e) {
      throw splitFailed(spec, oldPartition, " into its " + ways + " new partitions", e);
    } finally {
      for (File file : files) {
        if (file != null) {
          file.delete(); // gone unless its ingestion failed
        }
      }
    }
  }

  private static IllegalStateException splitFailed(
      StoreSpec spec, int oldPartition, String into, RocksDBException e) {
    return new IllegalStateException(
        "Cannot split old partition "
            + oldPartition
            + " of store "
            + spec.storeName()
            + into
            + ": "
            + e.getMessage(),
        e);
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
    RocksDbEncoding encoding = new RocksDbEncoding(spec);
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
    File file = new File(localDir, "from-" + task.newFileStem() + ".runs");
    long totalRows = 0;
    long totalBytes = 0;
    List<StagedFile> staged = List.of();
    StoredEdit edit = StoredEdit.of(task);
    try (ReadOptions scan = scanOptions();
        RocksIterator it = db.newIterator(scan);
        RawEntry entry = new RawEntry(encoding, spec.keySchema().length());
        SortedRuns.Writer runs =
            new SortedRuns.Writer(file, firstTarget, newPartitions).keepingInMemory(exchangeDir)) {
      for (it.seekToFirst(); it.isValid(); it.next()) {
        UnsafeRow keyRow = entry.read(it);
        int hash = task.placement().hash(keyRow);
        if (check != null && check.misplaced(hash)) {
          check.report(task.source());
        }
        totalRows++;
        totalBytes += entry.length();
        if (entry.keptBy(edit, keyRow)) {
          entry.writeTo(runs, StateStores.KeyPlacement.pmod(hash, newPartitions));
        }
      }
      it.status();
      timer.lap("iterate+split");
      List<SortedRuns.Run> written = runs.finish();
      timer.lap("runs-finish");
      if (!written.isEmpty()) {
        org.apache.hadoop.fs.Path target =
            new org.apache.hadoop.fs.Path(stagingDir, file.getName());
        long fileBytes = file.length();
        if (fileBytes != runs.fileBytes()) {
          throw new IOException(
              file + " holds " + fileBytes + " bytes, " + runs.fileBytes() + " were written");
        }
        if (!localStaging && fileBytes > 0) {
          fs.copyFromLocalFile(true, true, new org.apache.hadoop.fs.Path(file.toURI()), target);
        }
        staged = SortedRuns.staged(written, target.toString(), fileBytes);
      }
      timer.lap("stage");
    } catch (RocksDBException e) {
      throw splitFailed(spec, oldPartition, "", e);
    } catch (IOException e) {
      throw new UncheckedIOException(
          "Cannot stage the split of old partition "
              + oldPartition
              + " in "
              + exchangeDir
              + ": "
              + e.getMessage(),
          e);
    } finally {
      if (!localStaging) {
        RocksDbTaskScope.deleteRecursively(localDir);
      }
    }
    return new ReadOutcome(
        new Redistribution.PartitionCount(spec.slot(), oldPartition, totalRows, totalBytes, null),
        staged,
        List.of(),
        edit == null ? 0 : edit.leftOut);
  }

  /**
   * An edit ({@link EntryEdit}) applied to entries in RocksDB's stored encoding, for one split: the
   * value is read as a row pointed at its stored bytes (Spark's decoder gives the row's offset
   * once: the UnsafeRow encoding, the only one the exchange applies to, puts the same header before
   * every value), and a rewritten value is encoded again with Spark's value encoder (which, for
   * that encoding, writes a row's bytes whatever its schema). The split's own copy of the edit: see
   * {@link EntryEdit#own}.
   */
  static final class StoredEdit {
    private final EntryEdit edit;
    private final int partition;
    private final RocksDbEncoding values;
    private final UnsafeRow valueRow;

    /** Bytes before the UnsafeRow in a stored value; -1 until known. */
    private int rowOffset = -1;

    private byte[] rewritten;

    /** Entries left out: read, not written. */
    long leftOut;

    private StoredEdit(SplitTask task) {
      StoreSpec spec = task.spec();
      this.edit = task.edit().own();
      this.partition = task.oldPartition();
      this.values = new RocksDbEncoding(spec);
      this.valueRow = new UnsafeRow(spec.valueSchema().length());
    }

    /** The edit of {@code task}'s store, or null where it has none. */
    static StoredEdit of(SplitTask task) {
      return task.edit() == null ? null : new StoredEdit(task);
    }

    /**
     * Whether the entry with key row {@code key} and the stored value in {@code value} from {@code
     * offset} stays (else it is counted as left out); where its value is rewritten, {@link
     * #rewritten} holds the new stored bytes until the next call, else null.
     */
    boolean keeps(UnsafeRow key, byte[] value, int offset, int length) {
      rewritten = null;
      if (rowOffset < 0) {
        UnsafeRow decoded = values.decodeValue(Arrays.copyOfRange(value, offset, offset + length));
        rowOffset = (int) (decoded.getBaseOffset() - Platform.BYTE_ARRAY_OFFSET);
      }
      valueRow.pointTo(value, Platform.BYTE_ARRAY_OFFSET + offset + rowOffset, length - rowOffset);
      if (edit.leavesOut(partition, key, valueRow)) {
        leftOut++;
        return false;
      }
      UnsafeRow kept = edit.value(partition, key, valueRow);
      if (kept != valueRow) {
        rewritten = values.value(kept);
      }
      return true;
    }

    /** The stored bytes of the value the last kept entry was rewritten to; null: unchanged. */
    byte[] rewritten() {
      return rewritten;
    }
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
    private final RocksDbEncoding keys;
    private final UnsafeRow keyRow;
    private final Slot key = new Slot(256);
    private final Slot value = new Slot(1024);

    /** Bytes before the UnsafeRow in a stored key (Spark's encoding version); -1 until known. */
    private int rowOffset = -1;

    RawEntry(RocksDbEncoding keys, int keyFields) {
      this.keys = keys;
      this.keyRow = new UnsafeRow(keyFields);
    }

    /** Copies the iterator's entry and returns its key as a row (valid until the next read). */
    UnsafeRow read(RocksIterator it) {
      int keyLength = key.read(it, true);
      value.read(it, false);
      if (!keys.keyRowAtFixedOffset()) {
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

    /**
     * Whether the entry last read, with key row {@code keyRow}, stays under {@code edit} (null: no
     * edit), its value replaced where the edit rewrites it.
     */
    boolean keptBy(StoredEdit edit, UnsafeRow keyRow) {
      if (edit == null) {
        return true;
      }
      if (!edit.keeps(keyRow, value.bytes, 0, value.length)) {
        return false;
      }
      if (edit.rewritten() != null) {
        value.set(edit.rewritten());
      }
      return true;
    }

    /** Key and value bytes of the entry last read. */
    int length() {
      return key.length + value.length;
    }

    /** Puts the entry last read into {@code writer}. */
    void putInto(SstFileWriter writer) throws RocksDBException {
      writer.put(key.toNative(), value.toNative());
    }

    /** Appends the entry last read to the runs of new partition {@code p}. */
    void writeTo(SortedRuns.Writer runs, int p) throws IOException {
      runs.add(p, key.bytes, key.length, value.bytes, value.length);
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
      length = isKey ? RocksDbCalls.key(it, bytes) : RocksDbCalls.value(it, bytes);
      if (length > bytes.length) {
        close();
        allocate(Math.max(length, bytes.length * 2));
        length = isKey ? RocksDbCalls.key(it, bytes) : RocksDbCalls.value(it, bytes);
      }
      return length;
    }

    /** Replaces the bytes held with a copy of {@code source}. */
    void set(byte[] source) {
      if (source.length > bytes.length) {
        close();
        allocate(Math.max(source.length, bytes.length * 2));
      }
      System.arraycopy(source, 0, bytes, 0, source.length);
      length = source.length;
    }

    DirectSlice toNative() {
      return toNative(bytes, 0, length);
    }

    /** A native slice over a copy of {@code length} bytes of {@code source} from {@code offset}. */
    DirectSlice toNative(byte[] source, int offset, int length) {
      if (length > buffer.capacity()) {
        close();
        allocate(Math.max(length, buffer.capacity() * 2));
      }
      // Eight bytes at a time: entries are short, and ByteBuffer's bulk put (a call into the
      // VM per copy) took a tenth of a walk's CPU.
      long from = Platform.BYTE_ARRAY_OFFSET + offset;
      int i = 0;
      for (; i + 8 <= length; i += 8) {
        Platform.putLong(null, address + i, Platform.getLong(source, from + i));
      }
      for (; i < length; i++) {
        Platform.putByte(null, address + i, source[offset + i]);
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
      address = directAddress(buffer);
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
        mergeInto(local, files, scope.localRootDir(), scope.options(), hadoopConf, rows, spec);
        timer.lap("merge");
        RocksDbDirectCommit.commit(
            scope,
            new StateStoreId(stateRoot, spec.operatorId(), partition, spec.storeName()),
            hadoopConf,
            batchId + 1,
            local,
            rows,
            false,
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
            try {
              mergeInto(
                  local,
                  files,
                  StateCalls.localRootDir(db),
                  RocksDbCalls.rocksDbOptions(db),
                  hadoopConf,
                  rows,
                  spec);
              timer.lap("merge");
              if (local.isEmpty()) {
                StateStores.createStoreFolder(stateRoot, spec, partition, hadoopConf);
              } else {
                try (IngestExternalFileOptions options = new IngestExternalFileOptions()) {
                  options.setMoveFiles(true); // our own file, in the store's folder
                  RocksDbInternals.nativeDb(db).ingestExternalFile(local, options);
                } catch (RocksDBException e) {
                  throw new IllegalStateException(
                      "Cannot ingest the merged SST file into partition "
                          + partition
                          + " of store "
                          + spec.storeName()
                          + ": "
                          + e.getMessage(),
                      e);
                }
              }
            } finally {
              local.forEach(path -> new File(path).delete()); // gone unless ingestion failed
            }
            timer.lap("ingest");
            RocksDbInternals.setKeysOnWritingVersion(db, rows);
            store.commit();
            timer.lap("commit");
            String latency = TaskTimer.ENABLED ? RocksDbCalls.commitLatency(db) : null;
            if (latency != null) {
              timer.note("spark-commit", latency);
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
   * Merges the staged runs of one new partition ({@link SortedRuns#merge}: one k-way pass, keys
   * unique across runs) into one sorted SST file in {@code localDir}, named in {@code into}; no
   * file when the partition has no keys. The staged files stay for a retried task.
   */
  private static void mergeInto(
      List<String> into,
      List<StagedFile> files,
      File localDir,
      Options options,
      Configuration hadoopConf,
      long rows,
      StoreSpec spec) {
    if (rows == 0) {
      return;
    }
    File sst = new File(localDir, "stateshift-ingest-" + UUID.randomUUID() + ".sst");
    into.add(sst.getAbsolutePath());
    try (EnvOptions env = new EnvOptions();
        SstFileWriter writer = new SstFileWriter(env, options);
        Slot key = new Slot(256);
        Slot value = new Slot(1024)) {
      writer.open(sst.getAbsolutePath());
      long merged =
          SortedRuns.merge(
              files,
              hadoopConf,
              (k, keyOffset, keyLength, v, valueOffset, valueLength) -> {
                try {
                  writer.put(
                      key.toNative(k, keyOffset, keyLength),
                      value.toNative(v, valueOffset, valueLength));
                } catch (RocksDBException e) {
                  throw new IOException(e.getMessage(), e);
                }
              });
      if (merged != rows) {
        throw new IllegalStateException(
            "Merged " + merged + " entries of store " + spec.storeName() + ", expected " + rows);
      }
      writer.finish();
    } catch (RocksDBException | IOException e) {
      throw new IllegalStateException(
          "Cannot merge "
              + files.size()
              + " staged runs of store "
              + spec.storeName()
              + " into "
              + sst
              + ": "
              + e.getMessage(),
          e);
    }
  }

  /**
   * The native address of a direct buffer, from its {@code address} field (open to Spark's JVMs:
   * {@code --add-opens java.base/java.nio}); Spark's own accessor is not on every line.
   */
  private static long directAddress(ByteBuffer buffer) {
    try {
      return (long) BUFFER_ADDRESS.get(buffer);
    } catch (IllegalAccessException e) {
      throw new IllegalStateException("Cannot read a direct buffer's address: " + e, e);
    }
  }

  private static final java.lang.reflect.Field BUFFER_ADDRESS = bufferAddressField();

  private static java.lang.reflect.Field bufferAddressField() {
    try {
      java.lang.reflect.Field f = java.nio.Buffer.class.getDeclaredField("address");
      f.setAccessible(true);
      return f;
    } catch (NoSuchFieldException e) {
      throw new ExceptionInInitializerError(e);
    }
  }
}
