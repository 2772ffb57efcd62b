package io.stateshift.spark.state;

import io.stateshift.spark.state.StateRedistributionJob.StagedFile;
import java.io.File;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.UUID;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.LocalFileSystem;
import org.apache.hadoop.fs.Path;
import org.apache.spark.SparkEnv;
import org.apache.spark.sql.catalyst.expressions.UnsafeRow;
import org.apache.spark.unsafe.Platform;
import org.apache.spark.util.Utils;

/**
 * The read side of a migration from the HDFS-backed store to RocksDB without a shuffle: the live
 * entries of one old HDFS-backed partition ({@link HdfsFileExchange#split}), each encoded as
 * Spark's RocksDB encoders store it, staged as sorted runs ({@link SortedRuns}) that the RocksDB
 * file exchange's write side merges into one SST file per new partition.
 *
 * <p>HDFS-backed files hold their keys in no order, so entries are gathered a chunk at a time (as
 * many bytes as {@link SortedRuns#FLUSH_BYTES}), sorted by their encoded key bytes and appended as
 * one run per new partition: memory stays bounded whatever the partition's size, and the write side
 * merges the runs in one pass as it does for RocksDB's own.
 */
final class RocksDbRunStaging implements HdfsFileExchange.Staging {
  private final RocksDbEncoding encoding;
  private final UnsafeRow keyRow;
  private final UnsafeRow valueRow;
  private final FileSystem stagingFs;
  private final Path stagingDir;
  private final boolean localStaging;
  private final File localDir;
  private final File file;
  private final SortedRuns.Writer runs;
  private final List<Entry> chunk = new ArrayList<>();
  private long chunkBytes;

  private record Entry(int partition, byte[] key, byte[] value) {}

  RocksDbRunStaging(SplitTask task, FileSystem stagingFs, Path stagingDir) {
    this(task, stagingFs, stagingDir, new RocksDbEncoding(task.spec()));
  }

  /** Staging for entries already in RocksDB's stored encoding (RocksDB's own changelogs). */
  static RocksDbRunStaging forStoredEntries(SplitTask task, FileSystem stagingFs, Path stagingDir) {
    return new RocksDbRunStaging(task, stagingFs, stagingDir, null);
  }

  private RocksDbRunStaging(
      SplitTask task, FileSystem stagingFs, Path stagingDir, RocksDbEncoding encoding) {
    this.encoding = encoding;
    this.keyRow = new UnsafeRow(task.spec().keySchema().length());
    this.valueRow = new UnsafeRow(task.spec().valueSchema().length());
    this.stagingFs = stagingFs;
    this.stagingDir = stagingDir;
    // On a local exchange folder the runs are written in place; otherwise locally, then uploaded.
    this.localStaging = stagingFs instanceof LocalFileSystem;
    this.localDir =
        localStaging
            ? ((LocalFileSystem) stagingFs).pathToFile(stagingDir)
            : new File(
                Utils.getLocalDir(SparkEnv.get().conf()),
                "stateshift-exchange-" + UUID.randomUUID());
    if (!localDir.mkdirs() && !localDir.isDirectory()) {
      throw new UncheckedIOException(new IOException("Cannot create " + localDir));
    }
    this.file = new File(localDir, "from-" + task.newFileStem() + ".runs");
    this.runs =
        new SortedRuns.Writer(file, task.firstTarget(), task.newPartitions())
            .keepingInMemory(task.exchangeDir());
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
    Entry entry;
    if (encoding == null) {
      entry =
          new Entry(
              p,
              Arrays.copyOfRange(key, keyOffset, keyOffset + keyLength),
              Arrays.copyOfRange(value, valueOffset, valueOffset + valueLength));
    } else {
      keyRow.pointTo(key, Platform.BYTE_ARRAY_OFFSET + keyOffset, keyLength);
      valueRow.pointTo(value, Platform.BYTE_ARRAY_OFFSET + valueOffset, valueLength);
      entry = new Entry(p, encoding.key(keyRow), encoding.value(valueRow));
    }
    chunk.add(entry);
    chunkBytes += entry.key().length + entry.value().length + 40;
    if (chunkBytes >= SortedRuns.FLUSH_BYTES) {
      writeChunk();
    }
  }

  /** Sorts the gathered entries by key bytes and appends them as one run per new partition. */
  private void writeChunk() throws IOException {
    if (chunk.isEmpty()) {
      return;
    }
    chunk.sort((a, b) -> Arrays.compareUnsigned(a.key(), b.key()));
    for (Entry e : chunk) {
      runs.add(e.partition(), e.key(), e.key().length, e.value(), e.value().length);
    }
    runs.endRuns();
    chunk.clear();
    chunkBytes = 0;
  }

  @Override
  public List<StagedFile> finish() throws IOException {
    try {
      writeChunk();
      List<SortedRuns.Run> written = runs.finish();
      if (written.isEmpty()) {
        return List.of();
      }
      long fileBytes = file.length();
      if (fileBytes != runs.fileBytes()) {
        throw new IOException(
            file + " holds " + fileBytes + " bytes, " + runs.fileBytes() + " were written");
      }
      Path target = new Path(stagingDir, file.getName());
      if (!localStaging && fileBytes > 0) {
        stagingFs.copyFromLocalFile(true, true, new Path(file.toURI()), target);
      }
      return SortedRuns.staged(written, stagingFs.makeQualified(target).toString(), fileBytes);
    } finally {
      if (!localStaging) {
        RocksDbTaskScope.deleteRecursively(localDir);
      }
    }
  }

  @Override
  public void abandon() {
    try {
      runs.close();
    } catch (IOException | RuntimeException ignored) {
      // the failure that got us here is the one reported
    }
    if (!localStaging) {
      RocksDbTaskScope.deleteRecursively(localDir);
    }
  }
}
