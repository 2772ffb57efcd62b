package io.stateshift.spark.state;

import io.stateshift.checkpoint.PlacementCheck;
import io.stateshift.checkpoint.StateFileDamage;
import io.stateshift.checkpoint.StoreSpec;
import io.stateshift.checkpoint.spi.Redistribution;
import io.stateshift.config.StateShiftConf;
import java.io.BufferedInputStream;
import java.io.DataInputStream;
import java.io.EOFException;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.io.UncheckedIOException;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.nio.ByteOrder;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FileStatus;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.LocalFileSystem;
import org.apache.hadoop.fs.Path;
import org.apache.spark.SparkEnv;
import org.apache.spark.TaskContext;
import org.apache.spark.io.CompressionCodec;
import org.apache.spark.io.CompressionCodec$;
import org.apache.spark.sql.catalyst.expressions.UnsafeRow;
import org.apache.spark.unsafe.Platform;

/**
 * HDFS-backed state to HDFS-backed state from the files themselves: no provider, no map of the
 * whole partition in the JVM heap, no shuffle, and nothing decoded but each key's placement.
 *
 * <p>Spark's HDFS-backed provider keeps version N as the newest {@code S.snapshot} at or below N
 * plus {@code S+1.delta} .. {@code N.delta}; every file is one compressed stream of {@code [int
 * keyLength][key UnsafeRow][int valueLength][value UnsafeRow]} records (a value length of -1
 * removes the key) ended by a key length of -1. Each read task reads one old partition's deltas and
 * keeps the newest entry of each key ({@link DeltaChain}), then streams the snapshot through
 * without holding it, skipping the keys the deltas have. Each live entry goes, bytes unchanged, to
 * a staged file of the new partition Spark's hash gives its key. Each write task concatenates the
 * staged files of one new partition into its {@code N+1.snapshot} (as compressed bytes, for the
 * codecs Spark reads concatenated): keys are unique across old partitions, so there is nothing to
 * merge.
 *
 * <p>Memory per read task is the chain's deltas, decompressed, never the snapshot. Applies to state
 * checkpoint format v1 (plain version file names); the job falls back to the provider and a shuffle
 * otherwise.
 */
final class HdfsFileExchange {
  /** Spark conf to force the provider and shuffle path, for comparison: {@code shuffle}. */
  static final String EXCHANGE_CONF = StateShiftConf.HDFS_EXCHANGE.key();

  private static final Pattern VERSION_FILE = Pattern.compile("(\\d+)\\.(delta|snapshot)");
  private static final int END = -1;

  /** Record lengths, big-endian as {@code DataOutputStream} writes them, in byte arrays. */
  static final VarHandle BIG_ENDIAN_INT =
      MethodHandles.byteArrayViewVarHandle(int[].class, ByteOrder.BIG_ENDIAN);

  private static final int BUFFER = 1 << 16;

  private HdfsFileExchange() {}

  /**
   * Read side: splits version {@code version} of the old partition in {@code partitionDir} into one
   * staged file per new partition that gets at least one key. A state file that cannot be decoded
   * is refused as damage, naming it (relative to {@code checkpointRoot}).
   */
  static StateRedistributionJob.ReadOutcome split(
      SplitTask task, Path partitionDir, long version, String codecName, String checkpointRoot) {
    CompressionCodec codec = codec(codecName);
    return split(
        task,
        partitionDir,
        version,
        codec,
        checkpointRoot,
        (stagingFs, stagingDir) ->
            new SnapshotStaging(task, withoutChecksumFiles(stagingFs), stagingDir, codec));
  }

  /**
   * Read side, for another store: the same split, each live entry handed to the {@link Staging}
   * that {@code staging} makes for the exchange folder's file system.
   */
  static StateRedistributionJob.ReadOutcome split(
      SplitTask task,
      Path partitionDir,
      long version,
      CompressionCodec codec,
      String checkpointRoot,
      StagingFactory staging) {
    StoreSpec spec = task.spec();
    TaskTimer timer = task.timer();
    String exchangeDir = task.exchangeDir();
    Path stagingDir = new Path(exchangeDir);
    Splitter splitter = null;
    try {
      FileSystem fs = partitionDir.getFileSystem(task.hadoopConf());
      FileSystem stagingFs = stagingDir.getFileSystem(task.hadoopConf());
      splitter = new Splitter(task, staging.create(stagingFs, stagingDir));
      List<FileStatus> listed = chainNewestFirst(fs, partitionDir, version, task.listedFiles());
      FileStatus snapshotStatus =
          !listed.isEmpty()
                  && listed.get(listed.size() - 1).getPath().getName().endsWith(".snapshot")
              ? listed.remove(listed.size() - 1)
              : null;
      Path snapshot = snapshotStatus == null ? null : snapshotStatus.getPath();
      timer.lap("list");
      DeltaChain deltas = DeltaChain.readListed(fs, listed, codec);
      timer.lap("read-deltas");
      Splitter out = splitter; // effectively final, for the lambda
      out.deltas = deltas;
      deltas.forEachLiveNewest(out::emit);
      if (snapshot != null) {
        // a snapshot holds each key once and is always the oldest file: stream it
        out.source = snapshot;
        // a failed open is no damage to the file
        InputStream raw = WholeFileReads.open(fs, snapshotStatus);
        try (DataInputStream in = decoding(raw, codec, snapshot)) {
          byte[][] entry = new byte[2][];
          while (nextEntry(in, snapshot, entry)) {
            if (entry[1] != null && !deltas.containsKey(entry[0], 0, entry[0].length)) {
              out.emit(entry[0], entry[1]);
            }
          }
        }
      }
      timer.lap("split");
      List<StateRedistributionJob.StagedFile> staged = splitter.finish();
      timer.lap("stage");
      return new StateRedistributionJob.ReadOutcome(
          new Redistribution.PartitionCount(
              spec.slot(), task.oldPartition(), splitter.totalRows, splitter.totalBytes, null),
          staged,
          List.of(),
          splitter.leftOut);
    } catch (StateFileDamage.DamagedFile e) {
      abandon(splitter);
      throw StateFileDamage.refusal(checkpointRoot, e);
    } catch (IOException e) {
      abandon(splitter);
      throw new UncheckedIOException(
          "Cannot split version "
              + version
              + " of "
              + partitionDir
              + " into "
              + exchangeDir
              + ": "
              + e.getMessage(),
          e);
    } catch (RuntimeException e) {
      abandon(splitter);
      throw e;
    }
  }

  private static void abandon(Splitter splitter) {
    if (splitter != null) {
      splitter.abandon();
    }
  }

  /**
   * Write side: concatenates the staged files of one new partition into {@code snapshotFile} (which
   * must not exist) and returns its counts; a staged file whose length (or, re-encoded, row count)
   * differs from what its read task reported fails the task.
   *
   * <p>With a codec whose streams Spark reads back to back as one (lz4, zstd, snappy, lzf: those
   * its shuffle merges by concatenation too), the staged files are compressed record streams
   * without an end marker, and the snapshot is their bytes one after the other plus a stream of
   * just the end marker: nothing is decompressed or compressed again. Other codecs' staged files
   * are whole snapshots, re-encoded here.
   */
  static Redistribution.PartitionCount writeSnapshot(
      Path snapshotFile,
      StoreSpec spec,
      int partition,
      List<StateRedistributionJob.StagedFile> files,
      String codecName,
      Configuration hadoopConf) {
    CompressionCodec codec = codec(codecName);
    long rows = 0;
    long bytes = 0;
    try {
      FileSystem fs = snapshotFile.getFileSystem(hadoopConf);
      if (concatenable(codec)) {
        concatenate(fs, snapshotFile, files, codec, hadoopConf);
      } else {
        reencode(fs, snapshotFile, files, codec, hadoopConf);
      }
    } catch (IOException e) {
      throw new UncheckedIOException("Cannot write " + snapshotFile + ": " + e.getMessage(), e);
    }
    for (StateRedistributionJob.StagedFile file : files) {
      rows += file.rows();
      bytes += file.bytes();
    }
    return new Redistribution.PartitionCount(spec.slot(), partition, rows, bytes, null);
  }

  /** Whether Spark reads this codec's streams, written one after another, as one stream. */
  static boolean concatenable(CompressionCodec codec) {
    return CompressionCodec$.MODULE$.supportsConcatenationOfSerializedStreams(codec);
  }

  private static void concatenate(
      FileSystem fs,
      Path snapshotFile,
      List<StateRedistributionJob.StagedFile> files,
      CompressionCodec codec,
      Configuration hadoopConf)
      throws IOException {
    byte[] buffer = new byte[BUFFER];
    OutputStream out = SnapshotWriter.create(fs, snapshotFile);
    OutputStream end = null;
    try {
      for (StateRedistributionJob.StagedFile file : files) {
        long copied = 0;
        try (InputStream in = openStaged(file, hadoopConf)) {
          for (int n = in.read(buffer); n >= 0; n = in.read(buffer)) {
            out.write(buffer, 0, n);
            copied += n;
          }
        }
        file.checkLength(copied);
      }
      // the end marker, as a stream of its own; closing it closes the file
      end = codec.compressedOutputStream(out);
      end.write(new byte[] {-1, -1, -1, -1}); // END, a big-endian int
    } catch (IOException | RuntimeException e) {
      try {
        (end != null ? end : out).close();
      } catch (IOException | RuntimeException suppressed) {
        e.addSuppressed(suppressed);
      }
      throw e;
    }
    end.close();
  }

  /** The bytes of a staged file, or of a stream kept in memory ({@link InMemoryRuns}). */
  private static InputStream openStaged(StateRedistributionJob.StagedFile file, Configuration conf)
      throws IOException {
    if (InMemoryRuns.isMemoryPath(file.path())) {
      java.nio.ByteBuffer buffer = InMemoryRuns.find(file.path());
      return new InputStream() {
        @Override
        public int read() {
          return buffer.hasRemaining() ? buffer.get() & 0xff : -1;
        }

        @Override
        public int read(byte[] b, int offset, int length) {
          if (!buffer.hasRemaining()) {
            return -1;
          }
          int n = Math.min(length, buffer.remaining());
          buffer.get(b, offset, n);
          return n;
        }
      };
    }
    Path staged = new Path(file.path());
    return withoutChecksumFiles(staged.getFileSystem(conf)).open(staged);
  }

  private static void reencode(
      FileSystem fs,
      Path snapshotFile,
      List<StateRedistributionJob.StagedFile> files,
      CompressionCodec codec,
      Configuration hadoopConf)
      throws IOException {
    try (SnapshotWriter out = new SnapshotWriter(fs, snapshotFile, codec, true)) {
      for (StateRedistributionJob.StagedFile file : files) {
        Path staged = new Path(file.path());
        long fileRows = 0;
        try (DataInputStream in = decoded(openStaged(file, hadoopConf), codec)) {
          byte[][] entry = new byte[2][];
          while (readEntry(in, staged, entry)) {
            out.append(entry[0], 0, entry[0].length, entry[1], 0, entry[1].length);
            fileRows++;
          }
        }
        if (fileRows != file.rows()) {
          throw new IllegalStateException(
              "The staged file "
                  + staged
                  + " holds "
                  + fileRows
                  + " rows, its read task wrote "
                  + file.rows()
                  + "; the attempt is abandoned");
        }
      }
    }
  }

  /**
   * One compressed stream of records as Spark's HDFS-backed provider writes them, ended by -1 (or,
   * for a staged file to be concatenated, without it). Records are laid out in a buffer of its own
   * and handed to the codec a block at a time.
   */
  static final class SnapshotWriter implements AutoCloseable {
    private final OutputStream out;
    private final boolean endMarker;

    /**
     * Grows up to {@link #BUFFER}: at 200 -> 64 partitions a read task writes 64 streams of a few
     * kilobytes each, and a full buffer for each was most of what the task allocated.
     */
    private byte[] buffer = new byte[4096];

    private int used;

    SnapshotWriter(FileSystem fs, Path file, CompressionCodec codec) throws IOException {
      this(fs, file, codec, true);
    }

    SnapshotWriter(FileSystem fs, Path file, CompressionCodec codec, boolean endMarker)
        throws IOException {
      this(create(fs, file), codec, endMarker);
    }

    /** A stream of records into {@code raw} (closed with this writer). */
    SnapshotWriter(OutputStream raw, CompressionCodec codec, boolean endMarker) throws IOException {
      this.out = codec.compressedOutputStream(raw);
      this.endMarker = endMarker;
    }

    /**
     * A new file, and its folder if missing. A retried task attempt replaces what an earlier
     * attempt of its task left: a task writes several new partitions one after another, so an
     * attempt lost with its executor leaves the partitions it finished (and, on HDFS, one half
     * written), and the retry would otherwise fail on each of them until the job is aborted. The
     * files are the repartition attempt's own staging files, written again from the same input.
     */
    static OutputStream create(FileSystem fs, Path file) throws IOException {
      if ("s3a".equals(fs.getUri().getScheme())) {
        // No folders to make on S3, and S3A's probes of the name (a HEAD and a LIST) would only
        // find what a retried attempt left: one PUT. Recursive: S3A before 3.4 (Spark 3.5's
        // 3.3.4), which has no performance create, fails a non-recursive one under a folder that
        // holds nothing yet.
        @SuppressWarnings("rawtypes") // FileSystem.createFile returns the raw builder type
        org.apache.hadoop.fs.FSDataOutputStreamBuilder builder = fs.createFile(file);
        builder.overwrite(true);
        builder.recursive();
        builder.opt("fs.s3a.create.performance", true);
        return (OutputStream) builder.build();
      }
      fs.mkdirs(file.getParent());
      return fs.create(file, isRetriedTask());
    }

    private static boolean isRetriedTask() {
      TaskContext task = TaskContext.get();
      return task != null && (task.attemptNumber() > 0 || task.stageAttemptNumber() > 0);
    }

    /**
     * A string as {@code DataOutput.writeUTF} writes it (ASCII only here): a RocksDB changelog's
     * format and lineage lines, ahead of its records.
     */
    void text(String text) throws IOException {
      byte[] bytes = text.getBytes(java.nio.charset.StandardCharsets.US_ASCII);
      if (bytes.length > 0xffff || !text.chars().allMatch(c -> c > 0 && c < 0x80)) {
        throw new IllegalArgumentException("not a short ASCII string: " + text);
      }
      put(new byte[] {(byte) (bytes.length >>> 8), (byte) bytes.length}, 0, 2);
      put(bytes, 0, bytes.length);
    }

    void append(
        byte[] key, int keyOffset, int keyLength, byte[] value, int valueOffset, int valueLength)
        throws IOException {
      putInt(keyLength);
      put(key, keyOffset, keyLength);
      putInt(valueLength);
      put(value, valueOffset, valueLength);
    }

    /**
     * A removal: the key with value size -1, as Spark's delta files (and RocksDB's changelog files
     * in their first format) record one.
     */
    void remove(byte[] key) throws IOException {
      putInt(key.length);
      put(key, 0, key.length);
      putInt(-1);
    }

    private void putInt(int v) throws IOException {
      if (used + 4 > buffer.length && !grow(used + 4)) {
        flushBuffer();
      }
      BIG_ENDIAN_INT.set(buffer, used, v);
      used += 4;
    }

    private void put(byte[] data, int offset, int length) throws IOException {
      if (used + length > buffer.length && !grow(used + length)) {
        flushBuffer();
        if (length > buffer.length) {
          out.write(data, offset, length);
          return;
        }
      }
      System.arraycopy(data, offset, buffer, used, length);
      used += length;
    }

    /** Whether the buffer could grow (up to {@link #BUFFER}) to hold {@code needed} bytes. */
    private boolean grow(int needed) {
      if (buffer.length >= BUFFER) {
        return false;
      }
      int size = buffer.length;
      while (size < needed && size < BUFFER) {
        size *= 2;
      }
      buffer = java.util.Arrays.copyOf(buffer, Math.min(size, BUFFER));
      return buffer.length >= needed;
    }

    private void flushBuffer() throws IOException {
      out.write(buffer, 0, used);
      used = 0;
    }

    @Override
    public void close() throws IOException {
      try {
        if (endMarker) {
          putInt(END);
        }
        flushBuffer();
      } finally {
        out.close();
      }
    }
  }

  /** The codec Spark's provider uses for the checkpoint's state files. */
  static CompressionCodec codec(String codecName) {
    return CompressionCodec$.MODULE$.createCodec(SparkEnv.get().conf(), codecName);
  }

  /**
   * The files version {@code version} is built from, newest first: {@code version.delta} down to
   * the newest snapshot at or below it (or down to {@code 1.delta}). The chain was checked for gaps
   * before the job started; a missing file here is reported the same way. The folder's files come
   * from {@code listed} (names and lengths from the driver's listing) where given, else from a
   * listing of the folder.
   */
  static List<FileStatus> chainNewestFirst(
      FileSystem fs, Path partitionDir, long version, Map<String, ListedFile> listed)
      throws IOException {
    long snapshot = 0;
    Map<Long, FileStatus> deltas = new HashMap<>();
    FileStatus snapshotFile = null;
    for (FileStatus status :
        listed != null ? statuses(fs, partitionDir, listed) : fs.listStatus(partitionDir)) {
      Matcher m = VERSION_FILE.matcher(status.getPath().getName());
      if (!m.matches()) {
        continue;
      }
      long v = Long.parseLong(m.group(1));
      if (v > version) {
        continue;
      }
      if (m.group(2).equals("snapshot")) {
        if (v > snapshot) {
          snapshot = v;
          snapshotFile = status;
        }
      } else {
        deltas.put(v, status);
      }
    }
    List<FileStatus> chain = new ArrayList<>();
    for (long v = version; v > snapshot; v--) {
      if (!deltas.containsKey(v)) {
        throw new IllegalStateException(
            partitionDir
                + " has no state file for version "
                + v
                + ", which version "
                + version
                + " is built from");
      }
      chain.add(deltas.get(v));
    }
    if (snapshotFile != null) {
      chain.add(snapshotFile);
    }
    return chain;
  }

  /**
   * The statuses of the files a listing made elsewhere found in {@code dir}, for opening them with
   * no request first ({@link ListedFile}).
   */
  private static FileStatus[] statuses(FileSystem fs, Path dir, Map<String, ListedFile> listed) {
    List<FileStatus> out = new ArrayList<>();
    listed.forEach((name, file) -> out.add(file.status(fs, new Path(dir, name))));
    return out.toArray(new FileStatus[0]);
  }

  /** The records of a compressed stream, decoded through a buffer. */
  private static DataInputStream decoded(InputStream raw, CompressionCodec codec)
      throws IOException {
    return new DataInputStream(new BufferedInputStream(codec.compressedInputStream(raw), BUFFER));
  }

  /** A state file's decoder over its opened stream; one that cannot start is damage. */
  static DataInputStream decoding(InputStream raw, CompressionCodec codec, Path file)
      throws IOException {
    try {
      return new DataInputStream(
          new BufferedInputStream(
              codec.compressedInputStream(StateFileDamage.marked(raw)), BUFFER));
    } catch (Exception e) { // a codec may read its header here, and Scala declares no exception
      raw.close();
      throw StateFileDamage.classify(file, e);
    }
  }

  /** {@link #readEntry} on a state file: what does not decode is damage to it. */
  static boolean nextEntry(DataInputStream in, Path file, byte[][] entry) throws IOException {
    try {
      return readEntry(in, file, entry);
    } catch (IOException | RuntimeException e) {
      throw StateFileDamage.classify(file, e);
    }
  }

  /**
   * Reads the next record into {@code entry} (key, then value or null for a removal); false at the
   * end marker.
   */
  private static boolean readEntry(DataInputStream in, Path file, byte[][] entry)
      throws IOException {
    try {
      int keyLength = in.readInt();
      if (keyLength == END) {
        return false;
      }
      if (keyLength < 0) {
        throw new IOException("key length " + keyLength + " in " + file);
      }
      entry[0] = new byte[keyLength];
      in.readFully(entry[0]);
      int valueLength = in.readInt();
      if (valueLength < END) {
        throw new IOException("value length " + valueLength + " in " + file);
      }
      if (valueLength == END) {
        entry[1] = null;
      } else {
        entry[1] = new byte[valueLength];
        in.readFully(entry[1]);
      }
      return true;
    } catch (EOFException e) {
      throw truncated(file, e);
    }
  }

  /** The error for a state file that ends before its end marker; {@code cause} may be null. */
  static IOException truncated(Path file, EOFException cause) {
    return new IOException(file + " ends before its end marker (truncated)", cause);
  }

  /**
   * Staged files are read once by this job: on a local disk they skip Hadoop's checksum side files
   * (a CRC per 512 bytes written and read again).
   */
  static FileSystem withoutChecksumFiles(FileSystem fs) {
    return fs instanceof LocalFileSystem local ? local.getRaw() : fs;
  }

  /** Where a split puts the live entries of one old partition, per new partition. */
  interface Staging {
    /** Appends one live entry to new partition {@code p} (of the store's new partitions). */
    void append(
        int p,
        byte[] key,
        int keyOffset,
        int keyLength,
        byte[] value,
        int valueOffset,
        int valueLength)
        throws IOException;

    /** Closes what was written and returns the staged files, one or more per new partition. */
    List<StateRedistributionJob.StagedFile> finish() throws IOException;

    /** Closes what is open after a failure; the attempt folder's removal deletes the files. */
    void abandon();
  }

  /** Makes a split's {@link Staging} for the exchange folder and its file system. */
  interface StagingFactory {
    Staging create(FileSystem stagingFs, Path stagingDir) throws IOException;
  }

  /** Sends live entries of one old partition, each to the new partition its key's hash gives. */
  private static final class Splitter {
    private final StateStores.KeyPlacement placement;
    private final PlacementCheck check;
    private final Staging staging;
    private final int newPartitions;

    /** Where the keys come from, for a misplaced key's error: the deltas, then the snapshot. */
    DeltaChain deltas;

    Path source;
    private final UnsafeRow keyRow;
    private final UnsafeRow valueRow;
    private final EntryEdit edit;
    private final int oldPartition;
    long totalRows;
    long totalBytes;

    /** Entries an edit left out: read, counted in {@link #totalRows}, not staged. */
    long leftOut;

    Splitter(SplitTask task, Staging staging) {
      this.placement = task.placement();
      this.check = task.check();
      this.staging = staging;
      this.newPartitions = task.newPartitions();
      this.keyRow = new UnsafeRow(task.spec().keySchema().length());
      this.valueRow = new UnsafeRow(task.spec().valueSchema().length());
      this.edit = task.edit() == null ? null : task.edit().own();
      this.oldPartition = task.oldPartition();
    }

    /** A key and its value, both in {@code data} (a decompressed delta). */
    void emit(byte[] data, int keyOffset, int keyLength, int valueOffset, int valueLength)
        throws IOException {
      emit(data, keyOffset, keyLength, data, valueOffset, valueLength);
    }

    void emit(byte[] key, byte[] value) throws IOException {
      emit(key, 0, key.length, value, 0, value.length);
    }

    private void emit(
        byte[] key, int keyOffset, int keyLength, byte[] value, int valueOffset, int valueLength)
        throws IOException {
      keyRow.pointTo(key, Platform.BYTE_ARRAY_OFFSET + keyOffset, keyLength);
      int hash = placement.hash(keyRow);
      if (check != null && check.misplaced(hash)) {
        Path file = source != null ? source : deltas.fileOf(key);
        check.report(String.valueOf(file));
      }
      int p = StateStores.KeyPlacement.pmod(hash, newPartitions);
      totalRows++;
      totalBytes += keyLength + valueLength;
      if (edit != null) {
        valueRow.pointTo(value, Platform.BYTE_ARRAY_OFFSET + valueOffset, valueLength);
        if (edit.leavesOut(oldPartition, keyRow, valueRow)) {
          leftOut++;
          return;
        }
        UnsafeRow kept = edit.value(oldPartition, keyRow, valueRow);
        if (kept != valueRow) {
          byte[] rewritten = kept.getBytes();
          staging.append(p, key, keyOffset, keyLength, rewritten, 0, rewritten.length);
          return;
        }
      }
      staging.append(p, key, keyOffset, keyLength, value, valueOffset, valueLength);
    }

    List<StateRedistributionJob.StagedFile> finish() throws IOException {
      return staging.finish();
    }

    void abandon() {
      staging.abandon();
    }
  }

  /** One staged file per new partition, in the HDFS-backed store's own record format. */
  private static final class SnapshotStaging implements Staging {
    private final int firstTarget;
    private final FileSystem stagingFs;
    private final Path stagingDir;
    private final CompressionCodec codec;
    private final String fileStem;
    private final SnapshotWriter[] writers;
    private final Path[] paths;
    private final long[] rows;
    private final long[] bytes;

    /** In local mode ({@link InMemoryRuns}): each stream's bytes, until the task finishes. */
    private final String memoryExchange;

    private final java.io.ByteArrayOutputStream[] inMemory;

    SnapshotStaging(SplitTask task, FileSystem stagingFs, Path stagingDir, CompressionCodec codec) {
      int newPartitions = task.newPartitions();
      this.memoryExchange = InMemoryRuns.isOpen(task.exchangeDir()) ? task.exchangeDir() : null;
      this.inMemory = new java.io.ByteArrayOutputStream[newPartitions];
      this.firstTarget = task.firstTarget();
      this.stagingFs = stagingFs;
      this.stagingDir = stagingDir;
      this.codec = codec;
      this.fileStem = task.newFileStem();
      this.writers = new SnapshotWriter[newPartitions];
      this.paths = new Path[newPartitions];
      this.rows = new long[newPartitions];
      this.bytes = new long[newPartitions];
    }

    @Override
    public void append(
        int p,
        byte[] key,
        int keyOffset,
        int keyLength,
        byte[] value,
        int valueOffset,
        int valueLength)
        throws IOException {
      if (writers[p] == null) {
        paths[p] = new Path(stagingDir, "to-" + (firstTarget + p) + "-from-" + fileStem);
        if (memoryExchange != null) {
          inMemory[p] = new java.io.ByteArrayOutputStream(1024);
          writers[p] = new SnapshotWriter(inMemory[p], codec, !concatenable(codec));
        } else {
          writers[p] = new SnapshotWriter(stagingFs, paths[p], codec, !concatenable(codec));
        }
      }
      writers[p].append(key, keyOffset, keyLength, value, valueOffset, valueLength);
      rows[p]++;
      bytes[p] += keyLength + valueLength;
    }

    @Override
    public List<StateRedistributionJob.StagedFile> finish() throws IOException {
      List<StateRedistributionJob.StagedFile> staged = new ArrayList<>();
      for (int p = 0; p < writers.length; p++) {
        if (writers[p] != null) {
          writers[p].close();
          writers[p] = null;
          if (inMemory[p] != null) {
            staged.add(keepOrWrite(p));
            continue;
          }
          staged.add(
              new StateRedistributionJob.StagedFile(
                  firstTarget + p,
                  stagingFs.makeQualified(paths[p]).toString(),
                  rows[p],
                  bytes[p],
                  stagingFs.getFileStatus(paths[p]).getLen()));
        }
      }
      return staged;
    }

    /**
     * The stream of new partition {@code p}, written in memory: kept there while the exchange's
     * budget allows, else written to its staged file.
     */
    private StateRedistributionJob.StagedFile keepOrWrite(int p) throws IOException {
      byte[] stream = inMemory[p].toByteArray();
      inMemory[p] = null;
      InMemoryRuns.Kept kept = InMemoryRuns.reserve(memoryExchange, stream.length);
      String path;
      if (kept != null) {
        kept.buffer().put(stream);
        path = kept.path();
      } else {
        try (OutputStream out = SnapshotWriter.create(stagingFs, paths[p])) {
          out.write(stream);
        }
        path = stagingFs.makeQualified(paths[p]).toString();
      }
      return new StateRedistributionJob.StagedFile(
          firstTarget + p, path, rows[p], bytes[p], stream.length);
    }

    @Override
    public void abandon() {
      for (SnapshotWriter writer : writers) {
        if (writer != null) {
          try {
            writer.close();
          } catch (IOException | RuntimeException ignored) {
            // the failure that got us here is the one reported
          }
        }
      }
    }
  }
}
