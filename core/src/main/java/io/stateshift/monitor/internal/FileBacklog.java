package io.stateshift.monitor.internal;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.stateshift.checkpoint.CheckpointFiles;
import io.stateshift.checkpoint.SessionSettings;
import io.stateshift.checkpoint.SourceLogs;
import java.io.IOException;
import java.net.URI;
import java.util.HashSet;
import java.util.Optional;
import java.util.Set;
import org.apache.hadoop.fs.FileStatus;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;
import org.apache.spark.sql.SparkSession;

/**
 * The backlog of a file source, which Spark 4.2 does not report: files in the input folder that the
 * query has not taken in yet. Taken-in files come from the source log in the checkpoint, read
 * incrementally (one small file per source batch); the input folder is listed once per batch, as
 * the file source itself does.
 */
public final class FileBacklog {
  private static final ObjectMapper JSON = new ObjectMapper();

  /** Files and bytes waiting. */
  public record Outstanding(long files, long bytes) {}

  private final CheckpointFiles checkpoint;
  private final int sourceIndex;
  private final Path input;
  private final Set<String> taken = new HashSet<>();
  private long readUpTo = -1;

  private FileBacklog(CheckpointFiles checkpoint, int sourceIndex, Path input) {
    this.checkpoint = checkpoint;
    this.sourceIndex = sourceIndex;
    this.input = input;
  }

  /**
   * A tracker for source {@code index} of a query, when its progress describes a file source
   * ({@code FileStreamSource[<path>]}) on a plain folder (no glob).
   */
  public static Optional<FileBacklog> of(String checkpointRoot, int index, String description) {
    if (description == null
        || !description.startsWith("FileStreamSource[")
        || !description.endsWith("]")) {
      return Optional.empty();
    }
    String location = description.substring("FileStreamSource[".length(), description.length() - 1);
    if (location.matches(".*[*?{\\[].*")) {
      return Optional.empty();
    }
    try {
      return Optional.of(
          new FileBacklog(
              CheckpointFiles.at(checkpointRoot, SessionSettings.hadoopConf(SparkSession.active())),
              index,
              new Path(location)));
    } catch (RuntimeException e) {
      return Optional.empty(); // no session to resolve the checkpoint with: no file backlog
    }
  }

  /** Measures the backlog after the batch whose end offset is {@code endOffsetJson}. */
  public Outstanding measure(String endOffsetJson) throws IOException {
    JsonNode end = JSON.readTree(endOffsetJson);
    long logOffset = end == null ? -1 : end.path("logOffset").asLong(-1);
    if (logOffset > readUpTo) {
      for (SourceLogs.FileEntry entry :
          SourceLogs.fileEntries(checkpoint, sourceIndex, readUpTo, logOffset)) {
        taken.add(pathOf(entry.path()));
      }
      readUpTo = logOffset;
    }
    FileSystem fs = input.getFileSystem(checkpoint.conf());
    if (!fs.exists(input)) {
      return new Outstanding(0, 0);
    }
    long[] counts = new long[2];
    count(fs, input, counts);
    return new Outstanding(counts[0], counts[1]);
  }

  /**
   * Lists with listStatus, folder by folder: listFiles builds LocatedFileStatus objects, which on
   * the local file system read each file's permissions by running a shell command per file.
   */
  private void count(FileSystem fs, Path dir, long[] counts) throws IOException {
    for (FileStatus status : fs.listStatus(dir)) {
      String name = status.getPath().getName();
      if (name.startsWith(".") || name.startsWith("_")) {
        continue; // hidden and metadata files, which the file source skips too
      }
      if (status.isDirectory()) {
        count(fs, status.getPath(), counts);
      } else if (!taken.contains(status.getPath().toUri().getPath())) {
        counts[0]++;
        counts[1] += status.getLen();
      }
    }
  }

  private static String pathOf(String uriString) {
    try {
      return new Path(new URI(uriString)).toUri().getPath();
    } catch (Exception e) {
      return new Path(uriString).toUri().getPath();
    }
  }
}
