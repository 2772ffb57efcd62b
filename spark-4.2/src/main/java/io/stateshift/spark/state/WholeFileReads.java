package io.stateshift.spark.state;

import java.io.IOException;
import java.io.InputStream;
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
 */
final class WholeFileReads {
  private static final String READ_POLICY = "fs.option.openfile.read.policy";

  private WholeFileReads() {}

  static InputStream open(FileSystem fs, FileStatus status) throws IOException {
    return FutureIO.awaitFuture(
        fs.openFile(status.getPath())
            .withFileStatus(status)
            .opt(READ_POLICY, "whole-file")
            .build());
  }
}
