package io.stateshift.spark.state;

import io.stateshift.checkpoint.S3Objects;
import java.io.IOException;
import java.io.InputStream;
import org.apache.hadoop.fs.EtagSource;
import org.apache.hadoop.fs.FileStatus;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.util.functional.FutureIO;

/**
 * Opens state files that a task reads once, from start to end.
 *
 * <p>A plain {@code open} on S3A first asks the store for the file's status (a HEAD request), and
 * the reads here usually knew it already from a listing or needed the length anyway. Passing the
 * status along saves that request per file, and the whole-file read policy fetches the object in
 * one GET rather than in ranges. Other file systems ignore both hints.
 *
 * <p>On S3 the GET goes through S3A's own client where {@link S3Objects} applies: one request
 * pinned to the listed etag, without S3A's input stream. (Hadoop 3.5's default stream, the
 * analytics accelerator, took about 1.5 times as long for these small whole-object reads on a
 * loopback S3 server: docs/object-stores-and-clusters.md.)
 */
final class WholeFileReads {
  private static final String READ_POLICY = "fs.option.openfile.read.policy";

  private WholeFileReads() {}

  static InputStream open(FileSystem fs, FileStatus status) throws IOException {
    S3Objects s3 = S3Objects.forFileSystem(fs);
    if (s3 != null) {
      return s3.openWhole(
          s3.key(status.getPath()), status instanceof EtagSource e ? e.getEtag() : null);
    }
    return FutureIO.awaitFuture(
        fs.openFile(status.getPath())
            .withFileStatus(status)
            .opt(READ_POLICY, "whole-file")
            .build());
  }
}
