package io.stateshift.internal;

import java.io.BufferedInputStream;
import java.io.BufferedOutputStream;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.EOFException;
import java.io.IOException;
import java.io.OutputStream;
import java.io.UncheckedIOException;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.UUID;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FileStatus;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.LocalFileSystem;
import org.apache.hadoop.fs.Path;
import org.apache.spark.SparkEnv;
import org.apache.spark.io.CompressionCodec;
import org.apache.spark.io.CompressionCodec$;
import org.apache.spark.sql.catalyst.expressions.UnsafeRow;
import org.apache.spark.unsafe.Platform;

/**
 * HDFS-backed state to HDFS-backed state from the files themselves: no provider, no map of the
 * whole partition in the JVM heap, no shuffle, and nothing decoded but each key's placement.
 *
 * <p>Spark's HDFS-backed provider keeps version N as the newest {@code S.snapshot} at or below N
 * plus {@code S+1.delta} .. {@code N.delta}; every file is one compressed stream of {@code
 * [int keyLength][key UnsafeRow][int valueLength][value UnsafeRow]} records (a value length of -1
 * removes the key) ended by a key length of -1. Each read task walks one old partition's chain
 * newest first: a key's first appearance is its current value (or its removal), so older entries
 * of a key already seen are skipped, and the snapshot streams through without being held. Each
 * live entry goes, bytes unchanged, to a staged file of the new partition Spark's hash gives its
 * key. Each write task concatenates the staged files of one new partition into its {@code
 * N+1.snapshot}: keys are unique across old partitions, so there is nothing to merge.
 *
 * <p>Memory per read task is the keys of the chain's deltas (one delta's entries at a time with
 * their values), never the snapshot's. Applies to state checkpoint format v1 (plain version file
 * names); the job falls back to the provider and a shuffle otherwise.
 */
final class HdfsFileExchange {
  /** Spark conf to force the provider and shuffle path, for comparison: {@code shuffle}. */
  static final String EXCHANGE_CONF = "spark.stateshift.hdfs.exchange";

  private static final Pattern VERSION_FILE = Pattern.compile("(\\d+)\\.(delta|snapshot)");
  private static final int END = -1;
  private static final int BUFFER = 1 << 16;

  private HdfsFileExchange() {}

  /**
   * Read side: splits version {@code version} of the old partition in {@code partitionDir} into
   * one staged file per new partition that gets at least one key.
   *
   * @param oldPlacement when not null, every key must sit in {@code oldPartition} under it
   */
  static StateRedistributionJob.ReadOutcome split(Path partitionDir, long version, StoreSpec spec,
      int oldPartition, StateStores.KeyPlacement placement, StateStores.KeyPlacement oldPlacement,
      Runnable misplacedKey, int firstTarget, int newPartitions, String exchangeDir,
      String codecName, Configuration hadoopConf, TaskTimer timer) {
    CompressionCodec codec = codec(codecName);
    Path stagingDir = new Path(exchangeDir);
    String fileStem = spec.slot() + "-" + oldPartition + "-" + UUID.randomUUID();
    Splitter splitter = null;
    try {
      FileSystem fs = partitionDir.getFileSystem(hadoopConf);
      FileSystem stagingFs = withoutChecksumFiles(stagingDir.getFileSystem(hadoopConf));
      splitter = new Splitter(spec, oldPartition, placement, oldPlacement, misplacedKey,
          firstTarget, newPartitions, stagingFs, stagingDir, codec, fileStem);
      List<Path> chain = chainNewestFirst(fs, partitionDir, version);
      timer.lap("list");
      SeenKeys seen = new SeenKeys();
      List<byte[]> delta = new ArrayList<>();
      for (Path file : chain) {
        if (file.getName().endsWith(".snapshot")) {
          // a snapshot holds each key once and is always the oldest file: stream it
          try (DataInputStream in = open(fs, file, codec)) {
            byte[][] entry = new byte[2][];
            while (readEntry(in, file, entry)) {
              if (entry[1] != null && (seen.size() == 0 || !seen.contains(entry[0]))) {
                splitter.emit(entry[0], entry[1]);
              }
            }
          }
          continue;
        }
        // Within a delta the last entry of a key wins: walked backwards, a delta is newest first
        // too, and one set of keys seen serves both.
        delta.clear();
        try (DataInputStream in = open(fs, file, codec)) {
          byte[][] entry = new byte[2][];
          while (readEntry(in, file, entry)) {
            delta.add(entry[0]);
            delta.add(entry[1]);
          }
        }
        for (int i = delta.size() - 2; i >= 0; i -= 2) {
          byte[] key = delta.get(i);
          byte[] value = delta.get(i + 1);
          if (seen.add(key) && value != null) {
            splitter.emit(key, value);
          }
        }
      }
      timer.lap("read+split");
      List<StateRedistributionJob.StagedFile> staged = splitter.finish();
      timer.lap("stage");
      return new StateRedistributionJob.ReadOutcome(new StateRedistributionJob.PartitionCount(
          spec.slot(), oldPartition, splitter.totalRows, splitter.totalBytes, null), staged);
    } catch (IOException e) {
      abandon(splitter);
      throw new UncheckedIOException("Cannot split version " + version + " of " + partitionDir
          + " into " + exchangeDir + ": " + e.getMessage(), e);
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
   * Write side: concatenates the staged files of one new partition into {@code snapshotFile}
   * (which must not exist) and returns its counts; a staged file whose row count differs from
   * what its read task reported fails the task.
   */
  static StateRedistributionJob.PartitionCount writeSnapshot(Path snapshotFile, StoreSpec spec,
      int partition, List<StateRedistributionJob.StagedFile> files, String codecName,
      Configuration hadoopConf) {
    CompressionCodec codec = codec(codecName);
    long rows = 0;
    long bytes = 0;
    try (SnapshotWriter out =
        new SnapshotWriter(snapshotFile.getFileSystem(hadoopConf), snapshotFile, codec)) {
      for (StateRedistributionJob.StagedFile file : files) {
        Path staged = new Path(file.path());
        long fileRows = 0;
        FileSystem fs = withoutChecksumFiles(staged.getFileSystem(hadoopConf));
        try (DataInputStream in = open(fs, staged, codec)) {
          byte[][] entry = new byte[2][];
          while (readEntry(in, staged, entry)) {
            out.append(entry[0], entry[0].length, entry[1], entry[1].length);
            fileRows++;
          }
        }
        if (fileRows != file.rows()) {
          throw new IllegalStateException("The staged file " + staged + " holds " + fileRows
              + " rows, its read task wrote " + file.rows() + "; the attempt is abandoned");
        }
        rows += fileRows;
        bytes += file.bytes();
      }
    } catch (IOException e) {
      throw new UncheckedIOException("Cannot write " + snapshotFile + ": " + e.getMessage(), e);
    }
    return new StateRedistributionJob.PartitionCount(spec.slot(), partition, rows, bytes, null);
  }

  /**
   * One new snapshot file, written as Spark's HDFS-backed provider writes it: one compressed
   * stream of records ended by -1.
   */
  static final class SnapshotWriter implements AutoCloseable {
    private final DataOutputStream out;

    SnapshotWriter(FileSystem fs, Path file, CompressionCodec codec) throws IOException {
      out = new DataOutputStream(new BufferedOutputStream(
          codec.compressedOutputStream(create(fs, file)), BUFFER));
    }

    /** A new file, and its folder if missing. */
    private static OutputStream create(FileSystem fs, Path file) throws IOException {
      fs.mkdirs(file.getParent());
      return fs.create(file, false);
    }

    void append(byte[] key, int keyLength, byte[] value, int valueLength) throws IOException {
      append(key, 0, keyLength, value, 0, valueLength);
    }

    void append(byte[] key, int keyOffset, int keyLength, byte[] value, int valueOffset,
        int valueLength) throws IOException {
      out.writeInt(keyLength);
      out.write(key, keyOffset, keyLength);
      out.writeInt(valueLength);
      out.write(value, valueOffset, valueLength);
    }

    @Override
    public void close() throws IOException {
      out.writeInt(END);
      out.close();
    }
  }

  /** The codec Spark's provider uses for the checkpoint's state files. */
  static CompressionCodec codec(String codecName) {
    return CompressionCodec$.MODULE$.createCodec(SparkEnv.get().conf(), codecName);
  }

  /**
   * The files version {@code version} is built from, newest first: {@code version.delta} down to
   * the newest snapshot at or below it (or down to {@code 1.delta}). The chain was checked for
   * gaps before the job started; a missing file here is reported the same way.
   */
  static List<Path> chainNewestFirst(FileSystem fs, Path partitionDir, long version)
      throws IOException {
    long snapshot = 0;
    Set<Long> deltas = new HashSet<>();
    for (FileStatus status : fs.listStatus(partitionDir)) {
      Matcher m = VERSION_FILE.matcher(status.getPath().getName());
      if (!m.matches()) {
        continue;
      }
      long v = Long.parseLong(m.group(1));
      if (v > version) {
        continue;
      }
      if (m.group(2).equals("snapshot")) {
        snapshot = Math.max(snapshot, v);
      } else {
        deltas.add(v);
      }
    }
    List<Path> chain = new ArrayList<>();
    for (long v = version; v > snapshot; v--) {
      if (!deltas.contains(v)) {
        throw new IllegalStateException(partitionDir + " has no state file for version " + v
            + ", which version " + version + " is built from");
      }
      chain.add(new Path(partitionDir, v + ".delta"));
    }
    if (snapshot > 0) {
      chain.add(new Path(partitionDir, snapshot + ".snapshot"));
    }
    return chain;
  }

  private static DataInputStream open(FileSystem fs, Path file, CompressionCodec codec)
      throws IOException {
    return new DataInputStream(new BufferedInputStream(
        codec.compressedInputStream(fs.open(file)), BUFFER));
  }

  /**
   * Reads the next record into {@code entry} (key, then value or null for a removal); false at
   * the end marker.
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
      throw new IOException(file + " ends before its end marker (truncated)", e);
    }
  }

  /**
   * Staged files are read once by this job: on a local disk they skip Hadoop's checksum side
   * files (a CRC per 512 bytes written and read again).
   */
  private static FileSystem withoutChecksumFiles(FileSystem fs) {
    return fs instanceof LocalFileSystem local ? local.getRaw() : fs;
  }

  /** Sends live entries of one old partition to one staged file per new partition. */
  private static final class Splitter {
    private final int oldPartition;
    private final StateStores.KeyPlacement placement;
    private final StateStores.KeyPlacement oldPlacement;
    private final Runnable misplacedKey;
    private final int firstTarget;
    private final FileSystem stagingFs;
    private final Path stagingDir;
    private final CompressionCodec codec;
    private final String fileStem;
    private final UnsafeRow keyRow;
    private final SnapshotWriter[] writers;
    private final Path[] paths;
    private final long[] rows;
    private final long[] bytes;
    long totalRows;
    long totalBytes;

    Splitter(StoreSpec spec, int oldPartition, StateStores.KeyPlacement placement,
        StateStores.KeyPlacement oldPlacement, Runnable misplacedKey, int firstTarget,
        int newPartitions, FileSystem stagingFs, Path stagingDir, CompressionCodec codec,
        String fileStem) {
      this.firstTarget = firstTarget;
      this.stagingFs = stagingFs;
      this.stagingDir = stagingDir;
      this.codec = codec;
      this.fileStem = fileStem;
      this.oldPartition = oldPartition;
      this.placement = placement;
      this.oldPlacement = oldPlacement;
      this.misplacedKey = misplacedKey;
      this.keyRow = new UnsafeRow(spec.keySchema().length());
      this.writers = new SnapshotWriter[newPartitions];
      this.paths = new Path[newPartitions];
      this.rows = new long[newPartitions];
      this.bytes = new long[newPartitions];
    }

    void emit(byte[] key, byte[] value) throws IOException {
      keyRow.pointTo(key, Platform.BYTE_ARRAY_OFFSET, key.length);
      if (oldPlacement != null && oldPlacement.partitionOf(keyRow) != oldPartition) {
        misplacedKey.run();
      }
      int p = placement.partitionOf(keyRow);
      if (writers[p] == null) {
        paths[p] = new Path(stagingDir, "to-" + (firstTarget + p) + "-from-" + fileStem);
        writers[p] = new SnapshotWriter(stagingFs, paths[p], codec);
      }
      writers[p].append(key, key.length, value, value.length);
      rows[p]++;
      bytes[p] += key.length + value.length;
      totalRows++;
      totalBytes += key.length + value.length;
    }

    List<StateRedistributionJob.StagedFile> finish() throws IOException {
      List<StateRedistributionJob.StagedFile> staged = new ArrayList<>();
      for (int p = 0; p < writers.length; p++) {
        if (writers[p] != null) {
          writers[p].close();
          writers[p] = null;
          staged.add(new StateRedistributionJob.StagedFile(firstTarget + p,
              stagingFs.makeQualified(paths[p]).toString(), rows[p], bytes[p]));
        }
      }
      return staged;
    }

    /** Closes what is open after a failure; the attempt folder's removal deletes the files. */
    void abandon() {
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
