package io.stateshift.spark.state;

import java.io.Serializable;
import java.lang.reflect.Constructor;
import org.apache.hadoop.fs.EtagSource;
import org.apache.hadoop.fs.FileStatus;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;

/**
 * A state file as the driver's listing found it: its length and, where the store gives one, its
 * etag. A task opens it with a status built from these ({@link WholeFileReads}) and sends no
 * request for it first.
 *
 * <p>On S3A the status must be S3A's own, with the etag: S3A takes the length from any status, but
 * its read stream asks for the object's metadata (a HEAD) when the status has no etag, and with one
 * it reads only the object the listing saw. S3A's status class is loaded next to the file system's
 * own class (the connector may sit in a class loader of its own); where that fails, a plain status
 * is used, which costs the HEAD and nothing else.
 */
record ListedFile(long length, String etag) implements Serializable {

  static ListedFile of(FileStatus status) {
    return new ListedFile(
        status.getLen(), status instanceof EtagSource source ? source.getEtag() : null);
  }

  /** A status of {@code path} on {@code fs} for opening it. */
  FileStatus status(FileSystem fs, Path path) {
    Constructor<?> s3a = etag == null ? null : S3A_STATUS.get(fs.getClass());
    if (s3a != null) {
      try {
        return (FileStatus) s3a.newInstance(length, 0L, path, 0L, null, etag, null);
      } catch (ReflectiveOperationException | RuntimeException | LinkageError e) {
        // the plain status below: one request more
      }
    }
    return new FileStatus(length, false, 1, 0, 0, path);
  }

  /** S3A's {@code S3AFileStatus(length, modTime, path, blockSize, owner, eTag, versionId)}. */
  private static final ClassValue<Constructor<?>> S3A_STATUS =
      new ClassValue<>() {
        @Override
        protected Constructor<?> computeValue(Class<?> fsClass) {
          if (!"org.apache.hadoop.fs.s3a.S3AFileSystem".equals(fsClass.getName())) {
            return null;
          }
          try {
            return Class.forName(
                    "org.apache.hadoop.fs.s3a.S3AFileStatus", false, fsClass.getClassLoader())
                .getConstructor(
                    long.class,
                    long.class,
                    Path.class,
                    long.class,
                    String.class,
                    String.class,
                    String.class);
          } catch (ReflectiveOperationException | LinkageError e) {
            return null;
          }
        }
      };
}
