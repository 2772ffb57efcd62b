package io.stateshift.checkpoint;

import io.stateshift.config.StateShiftConf;
import java.io.FileNotFoundException;
import java.io.IOException;
import java.util.Map;
import java.util.TreeMap;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.fs.s3a.S3AFileSystem;
import software.amazon.awssdk.core.exception.SdkException;
import software.amazon.awssdk.services.s3.S3Client;
import software.amazon.awssdk.services.s3.model.CopyObjectRequest;
import software.amazon.awssdk.services.s3.model.DeleteObjectRequest;
import software.amazon.awssdk.services.s3.model.ListObjectsV2Request;
import software.amazon.awssdk.services.s3.model.ListObjectsV2Response;
import software.amazon.awssdk.services.s3.model.NoSuchKeyException;
import software.amazon.awssdk.services.s3.model.S3Object;

/**
 * Listings, copies and deletes of S3 objects through S3A's own AWS client, one request each. S3A's
 * rename of one file probes the source, the target and both parents around its copy and delete
 * (about ten requests), and its delete of the last file in a folder writes a folder marker; a move
 * here is a server-side copy and a delete, and the files that exist are known from one flat listing
 * of a prefix (a request per 1,000 keys). The client is S3A's, so the requests are counted with
 * S3A's own ({@code store_io_request}) and use its endpoint, credentials and retries.
 *
 * <p>Loaded only for an {@code S3AFileSystem} (see {@link #forFileSystem}), whose classes are then
 * on the class path. Not used where a copy must carry settings of S3A's own (encryption, a canned
 * ACL, requester pays, a storage class), nor with {@code stateshift.s3.directMoves=false}: S3A's
 * rename then does the moves.
 */
final class S3Objects {
  /** Hadoop setting: false makes moves on S3 go through S3A's rename. */
  static final String ENABLED = StateShiftConf.S3_DIRECT_MOVES.key();

  /** The largest object one CopyObject request copies (5 GiB); larger ones go through S3A. */
  static final long MAX_SINGLE_COPY = 5L << 30;

  /** S3A settings a plain CopyObject would not apply to the copy. */
  private static final String[] COPY_SETTINGS = {
    "fs.s3a.encryption.algorithm",
    "fs.s3a.server-side-encryption-algorithm",
    "fs.s3a.acl.default",
    "fs.s3a.requester.pays.enabled",
    "fs.s3a.create.storage.class",
  };

  private final S3AFileSystem fs;
  private final S3Client client;
  private final String bucket;

  private S3Objects(S3AFileSystem fs) {
    this.fs = fs;
    this.client = fs.getS3AInternals().getAmazonS3Client("stateshift checkpoint moves");
    this.bucket = fs.getBucket();
  }

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
    for (String key : COPY_SETTINGS) {
      String value = conf.getTrimmed(key, "");
      if (!value.isEmpty() && !value.equalsIgnoreCase("false")) {
        return null;
      }
    }
    return new S3Objects((S3AFileSystem) fs);
  }

  String key(Path path) {
    return fs.pathToKey(path);
  }

  Path path(String key) {
    return fs.makeQualified(new Path("/" + key));
  }

  /**
   * Every object below a folder, files and folder markers (keys ending in {@code /}), with their
   * sizes, by key.
   */
  TreeMap<String, Long> list(Path dir) throws IOException {
    String prefix = key(dir) + "/";
    TreeMap<String, Long> out = new TreeMap<>();
    String token = null;
    try {
      do {
        ListObjectsV2Request.Builder request =
            ListObjectsV2Request.builder().bucket(bucket).prefix(prefix);
        if (token != null) {
          request.continuationToken(token);
        }
        ListObjectsV2Response page = client.listObjectsV2(request.build());
        for (S3Object object : page.contents()) {
          out.put(object.key(), object.size());
        }
        token = Boolean.TRUE.equals(page.isTruncated()) ? page.nextContinuationToken() : null;
      } while (token != null);
    } catch (SdkException e) {
      throw new IOException(
          "Cannot list s3a://" + bucket + "/" + prefix + ": " + e.getMessage(), e);
    }
    return out;
  }

  /** A server-side copy; a missing source is a {@link FileNotFoundException}. */
  void copy(String from, String to) throws IOException {
    try {
      client.copyObject(
          CopyObjectRequest.builder()
              .sourceBucket(bucket)
              .sourceKey(from)
              .destinationBucket(bucket)
              .destinationKey(to)
              .build());
    } catch (NoSuchKeyException e) {
      throw new FileNotFoundException("No such file: " + path(from));
    } catch (SdkException e) {
      throw new IOException("Cannot copy " + path(from) + " to " + path(to) + ": " + e, e);
    }
  }

  /** Deletes one object; deleting a missing object succeeds, as S3 answers. */
  void delete(String key) throws IOException {
    try {
      client.deleteObject(DeleteObjectRequest.builder().bucket(bucket).key(key).build());
    } catch (SdkException e) {
      throw new IOException("Cannot delete " + path(key) + ": " + e, e);
    }
  }

  /** The entries of {@code listing} below {@code prefix} (a key ending in {@code /}). */
  static Map<String, Long> below(TreeMap<String, Long> listing, String prefix) {
    return listing.subMap(prefix, true, prefix + Character.MAX_VALUE, false);
  }
}
