package io.stateshift.checkpoint;

import io.stateshift.config.StateShiftConf;
import java.io.IOException;
import java.util.Map;
import java.util.TreeMap;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;

/**
 * Listings, whole-object reads, copies and deletes of S3 objects, one request each (deletes up to a
 * page of keys a request). S3A's rename of one file probes the source, the target and both parents
 * around its copy and delete (about ten requests), and its delete of the last file in a folder
 * writes a folder marker; a move here is a server-side copy and a delete, and the files that exist
 * are known from one flat listing of a prefix (a request per 1,000 keys).
 *
 * <p>Not used where a copy must carry settings of S3A's own (encryption, a canned ACL, requester
 * pays, a storage class), nor with {@code stateshift.s3.directMoves=false}: S3A's rename then does
 * the moves. Public only because its implementation ({@link S3ClientObjects}) lives in the
 * connector's class loader.
 */
public interface S3Objects {
  /** Hadoop setting: false makes moves on S3 go through S3A's rename. */
  String ENABLED = StateShiftConf.S3_DIRECT_MOVES.key();

  /** The largest object one CopyObject request copies (5 GiB); larger ones go through S3A. */
  long MAX_SINGLE_COPY = 5L << 30;

  /** The object key of a path of this bucket. */
  String key(Path path);

  /** The path of an object key of this bucket. */
  Path path(String key);

  /**
   * Every object below a folder, files and folder markers (keys ending in {@code /}), with their
   * sizes, by key.
   */
  TreeMap<String, Long> list(Path dir) throws IOException;

  /** A server-side copy; a missing source is a {@link java.io.FileNotFoundException}. */
  void copy(String from, String to) throws IOException;

  /** Deletes one object; deleting a missing object succeeds, as S3 answers. */
  void delete(String key) throws IOException;

  /**
   * Deletes objects with S3's multi-object delete, S3A's page size ({@code
   * fs.s3a.bulk.delete.page.size}) a request; one request a key where S3A's own deletes are one at
   * a time ({@code fs.s3a.multiobjectdelete.enable=false}) or the store refuses bulk deletes (GCS's
   * S3 API does). Deleting a missing object succeeds.
   */
  void deleteAll(java.util.Collection<String> keys) throws IOException;

  /**
   * The whole object in one GET, with S3A's client; with {@code etag} (nullable) only that version
   * of it, else the read fails. A missing object is a {@link java.io.FileNotFoundException}.
   */
  java.io.InputStream openWhole(String key, String etag) throws IOException;

  /** Direct requests for {@code fs}, or null when it is not S3A or its settings rule them out. */
  static S3Objects forFileSystem(FileSystem fs) {
    if (!"org.apache.hadoop.fs.s3a.S3AFileSystem".equals(fs.getClass().getName())) {
      return null;
    }
    // S3A copies the bucket's own settings (fs.s3a.bucket.<b>.*) over the general ones here
    Configuration conf = fs.getConf();
    if (!conf.getBoolean(ENABLED, true)) {
      return null;
    }
    for (String key :
        new String[] {
          "fs.s3a.encryption.algorithm",
          "fs.s3a.server-side-encryption-algorithm",
          "fs.s3a.acl.default",
          "fs.s3a.requester.pays.enabled",
          "fs.s3a.create.storage.class",
        }) {
      String value = conf.getTrimmed(key, "");
      if (!value.isEmpty() && !value.equalsIgnoreCase("false")) {
        return null;
      }
    }
    if (!onSdkV2(fs.getClass())) {
      // an S3A of Hadoop before 3.4 (Spark 3.5's 3.3.4) is on the AWS SDK v1, whose client the
      // direct requests cannot use: S3A's rename moves the files there, as with directMoves=false
      return null;
    }
    return ConnectorSideClasses.s3Objects(fs);
  }

  /**
   * Whether this S3A hands out its AWS SDK v2 client ({@code getS3AInternals()}, hadoop-aws 3.4 and
   * later), which the direct requests go through.
   */
  static boolean onSdkV2(Class<?> s3a) {
    try {
      s3a.getMethod("getS3AInternals");
      return true;
    } catch (NoSuchMethodException e) {
      return false;
    }
  }

  /** The entries of {@code listing} below {@code prefix} (a key ending in {@code /}). */
  static Map<String, Long> below(TreeMap<String, Long> listing, String prefix) {
    return listing.subMap(prefix, true, prefix + Character.MAX_VALUE, false);
  }
}
