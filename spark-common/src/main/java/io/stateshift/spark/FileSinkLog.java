package io.stateshift.spark;

import io.stateshift.StateShiftException;
import io.stateshift.StateShiftException.Reason;
import io.stateshift.checkpoint.spi.SinkLog;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.TreeSet;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FileStatus;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.execution.streaming.runtime.CompactibleFileStreamLog;
import org.apache.spark.sql.execution.streaming.runtime.StreamExecution;
import org.apache.spark.sql.execution.streaming.sinks.FileStreamSink;
import org.apache.spark.sql.execution.streaming.sinks.FileStreamSinkLog;
import org.apache.spark.sql.execution.streaming.sinks.SinkFileStatus;

/**
 * The log Spark's file sink keeps beside its output ({@code <output>/_spark_metadata}): one entry
 * per batch id, compacted every {@code spark.sql.streaming.fileSink.log.compactInterval} batches.
 * Compaction and every batch read of the output need each entry since the last compaction, so the
 * batch a repartition adds to the checkpoint's logs needs an entry here too: an empty one, since
 * that batch wrote no output. Entries are written by Spark's own log class, in its format and
 * version, atomically, on the sink's own file system.
 */
public final class FileSinkLog implements SinkLog {
  /** The folder inside a file sink's output that holds its log. */
  static {
    // the core names the folder without Spark; the same name as Spark's own
    assert METADATA_DIR.equals(FileStreamSink.metadataDir());
  }

  private final Path dir;
  private final FileSystem fs;
  private final FileStreamSinkLog log;

  private FileSinkLog(SparkSession spark, Path dir, FileSystem fs) {
    this.dir = dir;
    this.fs = fs;
    // A log of our own with deletion off: compacting here must never delete the entries a
    // rollback would need again.
    SparkSession session = spark.newSession();
    session.conf().set("spark.sql.streaming.fileSink.log.deletion", "false");
    session
        .conf()
        .set(
            "spark.sql.streaming.fileSink.log.compactInterval",
            spark.conf().get("spark.sql.streaming.fileSink.log.compactInterval", "10"));
    this.log =
        new FileStreamSinkLog(
            FileStreamSinkLog.VERSION(), session, dir.toString(), scala.Option.empty());
  }

  /**
   * The log of a file sink, from its output folder or from the log folder itself. Refuses a folder
   * that holds no file sink log.
   */
  public static FileSinkLog at(SparkSession spark, String location, Configuration conf) {
    try {
      Path path = new Path(location);
      FileSystem fs = path.getFileSystem(conf);
      Path qualified = fs.makeQualified(path);
      Path dir =
          qualified.getName().equals(METADATA_DIR) ? qualified : new Path(qualified, METADATA_DIR);
      if (!(fs.exists(dir) && fs.getFileStatus(dir).isDirectory())) {
        throw new StateShiftException(
            Reason.INVALID_ARGUMENT,
            location
                + " is not the output "
                + "folder of a file sink: it has no "
                + METADATA_DIR
                + " folder. Pass the path the "
                + "query writes to (its .parquet/.json/.csv/.orc/.text(path) or option(\"path\")).");
      }
      return new FileSinkLog(spark, dir, fs);
    } catch (IOException | IllegalArgumentException e) {
      throw new StateShiftException(
          Reason.INVALID_ARGUMENT,
          "Cannot open the file sink output " + location + ": " + e.getMessage(),
          e);
    }
  }

  /** The log folder of a running query's sink, when that sink is Spark's file sink. */
  static Optional<String> ofQuery(StreamExecution execution) {
    if (!(execution.sink() instanceof FileStreamSink sink)) {
      return Optional.empty();
    }
    try {
      java.lang.reflect.Field logPath = FileStreamSink.class.getDeclaredField("logPath");
      logPath.setAccessible(true);
      return Optional.of(logPath.get(sink).toString());
    } catch (ReflectiveOperationException | RuntimeException e) {
      // A Spark line where the field moved: the sink's output is in its description.
      String described = sink.toString();
      return described.startsWith("FileSink[") && described.endsWith("]")
          ? Optional.of(
              new Path(described.substring(9, described.length() - 1), METADATA_DIR).toString())
          : Optional.empty();
    }
  }

  /** The qualified log folder. */
  @Override
  public String location() {
    return dir.toString();
  }

  @Override
  public Optional<Long> latestBatch() {
    scala.Option<Object> latest = log.getLatestBatchId();
    return latest.isDefined() ? Optional.of((Long) latest.get()) : Optional.empty();
  }

  /** Whether the log has its own file for this batch (a delta, or a compaction). */
  @Override
  public boolean hasEntry(long batchId) {
    try {
      return fs.exists(log.batchIdToPath(batchId));
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  /** The number of output files the log lists for this batch (its own entries only). */
  @Override
  public int filesIn(long batchId) {
    return log.get(batchId).map(entries -> ((Object[]) entries).length).getOrElse(() -> -1);
  }

  /** Adds an entry that lists no files, unless the batch has one. */
  @Override
  public void addEmpty(long batchId) {
    if (!hasEntry(batchId)) {
      log.add(batchId, new SinkFileStatus[0]);
    }
  }

  /** Removes the batch's own file, if present. */
  @Override
  public void remove(long batchId) {
    try {
      Path file = log.batchIdToPath(batchId);
      fs.delete(file, false);
      Path crc = new Path(file.getParent(), "." + file.getName() + ".crc");
      fs.delete(crc, false);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  /**
   * Batch ids from the last compaction to the latest entry that have no file: each breaks
   * compaction and every read of the output.
   */
  @Override
  public List<Long> missingEntries() {
    TreeSet<Long> present = new TreeSet<>();
    long lastCompaction = -1;
    try {
      for (FileStatus status : fs.listStatus(dir)) {
        String name = status.getPath().getName();
        if (name.startsWith(".")) {
          continue;
        }
        try {
          long id = CompactibleFileStreamLog.getBatchIdFromFileName(name);
          present.add(id);
          if (name.endsWith(CompactibleFileStreamLog.COMPACT_FILE_SUFFIX())) {
            lastCompaction = Math.max(lastCompaction, id);
          }
        } catch (NumberFormatException notAnEntry) {
          // a temporary file of an interrupted write
        }
      }
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
    List<Long> missing = new ArrayList<>();
    if (present.isEmpty()) {
      return missing;
    }
    for (long id = lastCompaction >= 0 ? lastCompaction : present.first();
        id < present.last();
        id++) {
      if (!present.contains(id)) {
        missing.add(id);
      }
    }
    return missing;
  }
}
