package io.stateshift.spark.state;

import io.stateshift.spark.state.StateRedistributionJob.StagedFile;
import java.io.BufferedOutputStream;
import java.io.Closeable;
import java.io.File;
import java.io.FileOutputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FSDataInputStream;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.LocalFileSystem;
import org.apache.hadoop.fs.Path;

/**
 * The staged format of the RocksDB file exchange: one file per read task, holding runs of raw
 * entries {@code [int keyLength][key][int valueLength][value]} (big-endian lengths), each run
 * sorted by key bytes and meant for one new partition. A run is a {@link StagedFile} with an offset
 * and a length in its file.
 *
 * <p>One file per old partition, whatever the number of new partitions: per-(old, new) SST files
 * would be 80,000 files at 200 -> 400 partitions, each created, finished and synced for a few dozen
 * entries. The read side buffers each new partition's entries in the JVM (a filtered subsequence of
 * a sorted walk is sorted) and appends every buffer as a run when the buffers reach {@link
 * #FLUSH_BYTES} and at the end. The write side merges all runs of its new partition in one k-way
 * pass into one SST file ({@link #merge}), which RocksDB ingests without a compaction.
 */
final class SortedRuns {
  /** The read side appends its buffered runs to the file when they hold this many bytes. */
  static final int FLUSH_BYTES = 32 << 20;

  private static final int READ_CHUNK = 64 << 10;

  private SortedRuns() {}

  /**
   * One run as its writer wrote it: at {@code offset} in its file, or in a buffer kept in memory
   * under {@code memoryPath} ({@link InMemoryRuns}).
   */
  record Run(int target, String memoryPath, long offset, long length, long rows, long bytes) {}

  /** The read side's writer: one buffer per new partition, one file. */
  static final class Writer implements Closeable {
    private final File file;
    private final int firstTarget;
    private final byte[][] buffers;
    private final int[] lengths;
    private final long[] rows;
    private final long[] bytes;
    private final List<Run> runs = new ArrayList<>();
    private final int flushBytes;
    private String memoryExchange;
    private long buffered;
    private long offset;
    private OutputStream out;

    Writer(File file, int firstTarget, int newPartitions) {
      this(file, firstTarget, newPartitions, FLUSH_BYTES);
    }

    /** A writer that appends its buffered runs when they hold {@code flushBytes}. */
    Writer(File file, int firstTarget, int newPartitions, int flushBytes) {
      this.flushBytes = flushBytes;
      this.file = file;
      this.firstTarget = firstTarget;
      this.buffers = new byte[newPartitions][];
      this.lengths = new int[newPartitions];
      this.rows = new long[newPartitions];
      this.bytes = new long[newPartitions];
    }

    /**
     * Keeps the runs in memory for the exchange {@code exchangeDir} while it has room ({@link
     * InMemoryRuns#reserve}), writing the file only for the rest.
     */
    Writer keepingInMemory(String exchangeDir) {
      this.memoryExchange = exchangeDir;
      return this;
    }

    /** Appends one entry for new partition {@code p} (entries of a partition in key order). */
    void add(int p, byte[] key, int keyLength, byte[] value, int valueLength) throws IOException {
      int need = 8 + keyLength + valueLength;
      byte[] buffer = buffers[p];
      int length = lengths[p];
      if (buffer == null || buffer.length - length < need) {
        buffer =
            Arrays.copyOf(
                buffer == null ? new byte[0] : buffer,
                Math.max(Math.max(1024, length + need), buffer == null ? 0 : buffer.length * 2));
        buffers[p] = buffer;
      }
      HdfsFileExchange.BIG_ENDIAN_INT.set(buffer, length, keyLength);
      System.arraycopy(key, 0, buffer, length + 4, keyLength);
      HdfsFileExchange.BIG_ENDIAN_INT.set(buffer, length + 4 + keyLength, valueLength);
      System.arraycopy(value, 0, buffer, length + 8 + keyLength, valueLength);
      lengths[p] = length + need;
      rows[p]++;
      bytes[p] += keyLength + valueLength;
      buffered += need;
      if (buffered >= flushBytes) {
        flush();
      }
    }

    /** Appends every non-empty buffer as a run and empties the buffers. */
    private void flush() throws IOException {
      if (buffered == 0) {
        return;
      }
      InMemoryRuns.Kept kept =
          memoryExchange == null ? null : InMemoryRuns.reserve(memoryExchange, buffered);
      for (int p = 0; p < buffers.length; p++) {
        if (rows[p] == 0) {
          continue;
        }
        if (kept != null) {
          runs.add(
              new Run(
                  firstTarget + p,
                  kept.path(),
                  kept.buffer().position(),
                  lengths[p],
                  rows[p],
                  bytes[p]));
          kept.buffer().put(buffers[p], 0, lengths[p]);
        } else {
          if (out == null) {
            out = new BufferedOutputStream(new FileOutputStream(file), 1 << 20);
          }
          out.write(buffers[p], 0, lengths[p]);
          runs.add(new Run(firstTarget + p, null, offset, lengths[p], rows[p], bytes[p]));
          offset += lengths[p];
        }
        lengths[p] = 0;
        rows[p] = 0;
        bytes[p] = 0;
      }
      buffered = 0;
      Arrays.fill(buffers, null); // the next runs grow their own: memory goes back
    }

    /**
     * Appends what is buffered as runs: entries added after this start new runs, so a caller that
     * adds sorted sequences one after another ends each with this.
     */
    void endRuns() throws IOException {
      flush();
    }

    /**
     * Writes what is buffered and closes the file, if any run went to it; the runs' descriptions,
     * unstaged.
     */
    List<Run> finish() throws IOException {
      flush();
      if (out != null) {
        out.close();
        out = null;
      }
      return runs;
    }

    /** Bytes written to the file (none: no file, every run in memory). */
    long fileBytes() {
      return offset;
    }

    @Override
    public void close() throws IOException {
      if (out != null) {
        out.close();
        out = null;
      }
    }
  }

  /** Receives the merged entries in key order. */
  interface Sink {
    void put(byte[] key, int keyOffset, int keyLength, byte[] value, int valueOffset, int length)
        throws IOException;
  }

  /**
   * The write side: merges the runs {@code files} (of one new partition, keys unique across them)
   * into {@code sink} in key byte order (RocksDB's bytewise comparator), reading each run in
   * chunks; returns the entries merged. A staged file whose length differs from what its read task
   * wrote, or a run that does not hold the rows it was written with, fails the merge.
   */
  static long merge(List<StagedFile> files, Configuration hadoopConf, Sink sink)
      throws IOException {
    Map<String, Ranges> open = new HashMap<>();
    try {
      Cursor[] heap = new Cursor[files.size()];
      int size = 0;
      for (StagedFile file : files) {
        Ranges ranges = open.get(file.path());
        if (ranges == null) {
          ranges = Ranges.open(file.path(), hadoopConf);
          file.checkLength(ranges.length());
          open.put(file.path(), ranges);
        }
        Cursor cursor = new Cursor(ranges, file);
        if (cursor.advance()) {
          heap[size++] = cursor;
        }
      }
      for (int i = size / 2 - 1; i >= 0; i--) {
        siftDown(heap, size, i);
      }
      // The smallest key is on top; after its run moves on, one sift down puts the heap right
      // again (a poll and an add would sift twice).
      long merged = 0;
      while (size > 0) {
        Cursor c = heap[0];
        sink.put(c.buffer, c.keyOffset, c.keyLength, c.buffer, c.valueOffset, c.valueLength);
        merged++;
        if (!c.advance()) {
          heap[0] = heap[--size];
          heap[size] = null;
        }
        siftDown(heap, size, 0);
      }
      return merged;
    } finally {
      for (Ranges ranges : open.values()) {
        ranges.close();
      }
    }
  }

  /** Restores the heap order below {@code i}: each cursor's key at most its children's. */
  private static void siftDown(Cursor[] heap, int size, int i) {
    Cursor moving = heap[i];
    while (true) {
      int child = 2 * i + 1;
      if (child >= size) {
        break;
      }
      if (child + 1 < size && compareKeys(heap[child + 1], heap[child]) < 0) {
        child++;
      }
      if (compareKeys(heap[child], moving) >= 0) {
        break;
      }
      heap[i] = heap[child];
      i = child;
    }
    if (i < size) {
      heap[i] = moving;
    }
  }

  private static int compareKeys(Cursor a, Cursor b) {
    return Arrays.compareUnsigned(
        a.buffer,
        a.keyOffset,
        a.keyOffset + a.keyLength,
        b.buffer,
        b.keyOffset,
        b.keyOffset + b.keyLength);
  }

  /**
   * Positioned reads of one staged file: a file channel on local disk, else Hadoop's stream, or the
   * buffer of runs kept in memory ({@link InMemoryRuns}).
   */
  private interface Ranges extends Closeable {
    void readFully(long position, byte[] b, int offset, int length) throws IOException;

    long length() throws IOException;

    static Ranges open(String stagedPath, Configuration hadoopConf) throws IOException {
      if (InMemoryRuns.isMemoryPath(stagedPath)) {
        ByteBuffer buffer = InMemoryRuns.find(stagedPath);
        return new Ranges() {
          @Override
          public void readFully(long position, byte[] b, int offset, int length)
              throws IOException {
            if (position + length > buffer.capacity()) {
              throw new java.io.EOFException(stagedPath + " ends early");
            }
            buffer.get((int) position, b, offset, length);
          }

          @Override
          public long length() {
            return buffer.capacity();
          }

          @Override
          public void close() {}
        };
      }
      Path path = new Path(stagedPath);
      FileSystem fs = path.getFileSystem(hadoopConf);
      if (fs instanceof LocalFileSystem local) {
        FileChannel channel =
            FileChannel.open(local.pathToFile(path).toPath(), StandardOpenOption.READ);
        return new Ranges() {
          @Override
          public void readFully(long position, byte[] b, int offset, int length)
              throws IOException {
            ByteBuffer target = ByteBuffer.wrap(b, offset, length);
            while (target.hasRemaining()) {
              if (channel.read(target, position + target.position() - offset) < 0) {
                throw new java.io.EOFException(path + " ends early");
              }
            }
          }

          @Override
          public long length() throws IOException {
            return channel.size();
          }

          @Override
          public void close() throws IOException {
            channel.close();
          }
        };
      }
      FSDataInputStream in = fs.open(path);
      long length = fs.getFileStatus(path).getLen();
      return new Ranges() {
        @Override
        public void readFully(long position, byte[] b, int offset, int n) throws IOException {
          in.readFully(position, b, offset, n);
        }

        @Override
        public long length() {
          return length;
        }

        @Override
        public void close() throws IOException {
          in.close();
        }
      };
    }
  }

  /** One run being merged: its current entry in a buffer that holds the next chunk of the run. */
  private static final class Cursor {
    private final Ranges in;
    private final StagedFile run;
    private long next;
    private final long end;
    private long rowsLeft;
    byte[] buffer;
    private int position;
    private int limit;
    int keyOffset;
    int keyLength;
    int valueOffset;
    int valueLength;

    Cursor(Ranges in, StagedFile run) {
      this.in = in;
      this.run = run;
      this.next = run.offset();
      this.end = run.offset() + run.length();
      this.rowsLeft = run.rows();
      this.buffer = new byte[(int) Math.min(READ_CHUNK, Math.max(16, run.length()))];
    }

    /** Moves to the next entry; false at the end of the run. */
    boolean advance() throws IOException {
      if (rowsLeft == 0) {
        if (next != end || position != limit) {
          throw damaged("holds more than its " + run.rows() + " rows");
        }
        return false;
      }
      ensure(4);
      keyLength = (int) HdfsFileExchange.BIG_ENDIAN_INT.get(buffer, position);
      ensure(8 + keyLength);
      valueLength = (int) HdfsFileExchange.BIG_ENDIAN_INT.get(buffer, position + 4 + keyLength);
      ensure(8 + keyLength + valueLength);
      keyOffset = position + 4;
      valueOffset = position + 8 + keyLength;
      position += 8 + keyLength + valueLength;
      rowsLeft--;
      return true;
    }

    /** Makes the next {@code n} bytes of the run available from {@link #position}. */
    private void ensure(int n) throws IOException {
      if (n < 0) {
        throw damaged("has a negative length");
      }
      if (limit - position >= n) {
        return;
      }
      int kept = limit - position;
      if (n > buffer.length) {
        buffer = Arrays.copyOfRange(buffer, position, position + Math.max(n, buffer.length * 2));
      } else {
        System.arraycopy(buffer, position, buffer, 0, kept);
      }
      position = 0;
      limit = kept;
      int read = (int) Math.min(buffer.length - limit, end - next);
      if (kept + read < n) {
        throw damaged("ends in the middle of an entry");
      }
      in.readFully(next, buffer, limit, read);
      next += read;
      limit += read;
    }

    private IOException damaged(String problem) {
      return new IOException(
          "The staged run at "
              + run.offset()
              + " of "
              + run.path()
              + " "
              + problem
              + "; the attempt is abandoned");
    }
  }

  /**
   * The runs of a writer as staged files: those in its file at {@code path}, holding {@code
   * fileBytes}; those in memory under their own names.
   */
  static List<StagedFile> staged(List<Run> runs, String path, long fileBytes) {
    List<StagedFile> staged = new ArrayList<>();
    for (Run r : runs) {
      staged.add(
          r.memoryPath() != null
              ? new StagedFile(
                  r.target(),
                  r.memoryPath(),
                  r.offset(),
                  r.length(),
                  r.rows(),
                  r.bytes(),
                  InMemoryRuns.find(r.memoryPath()).capacity())
              : new StagedFile(
                  r.target(), path, r.offset(), r.length(), r.rows(), r.bytes(), fileBytes));
    }
    return staged;
  }
}
