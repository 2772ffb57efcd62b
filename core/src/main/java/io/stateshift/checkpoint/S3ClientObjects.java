package io.stateshift.checkpoint;

import java.io.FileNotFoundException;
import java.io.IOException;
import java.io.InputStream;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.TreeMap;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.fs.s3a.S3AFileSystem;
import software.amazon.awssdk.core.exception.SdkException;
import software.amazon.awssdk.services.s3.S3Client;
import software.amazon.awssdk.services.s3.model.CopyObjectRequest;
import software.amazon.awssdk.services.s3.model.Delete;
import software.amazon.awssdk.services.s3.model.DeleteObjectRequest;
import software.amazon.awssdk.services.s3.model.DeleteObjectsRequest;
import software.amazon.awssdk.services.s3.model.DeleteObjectsResponse;
import software.amazon.awssdk.services.s3.model.GetObjectRequest;
import software.amazon.awssdk.services.s3.model.ListObjectsV2Request;
import software.amazon.awssdk.services.s3.model.ListObjectsV2Response;
import software.amazon.awssdk.services.s3.model.NoSuchKeyException;
import software.amazon.awssdk.services.s3.model.ObjectIdentifier;
import software.amazon.awssdk.services.s3.model.S3Error;
import software.amazon.awssdk.services.s3.model.S3Exception;
import software.amazon.awssdk.services.s3.model.S3Object;

/**
 * {@link S3Objects} through S3A's own AWS client: the requests are counted with S3A's own ({@code
 * store_io_request}) and use its endpoint, credentials and retries.
 *
 * <p>Defined next to the connector by {@link ConnectorSideClasses}, never named elsewhere: it links
 * against the AWS SDK, which only the class loader that loaded S3A may see (a connector given to
 * the command line with {@code --jars}). So it uses nothing of stateshift but the public interface
 * it implements.
 */
public final class S3ClientObjects implements S3Objects {
  private final S3AFileSystem fs;
  private final S3Client client;
  private final String bucket;
  private final boolean bulkDeletes;
  private final int deletePage;

  /** Set when the store answered a multi-object delete with "not implemented". */
  private volatile boolean bulkDeletesRefused;

  public S3ClientObjects(FileSystem fs) {
    this.fs = (S3AFileSystem) fs;
    this.client = this.fs.getS3AInternals().getAmazonS3Client("stateshift checkpoint moves");
    this.bucket = this.fs.getBucket();
    // S3A's own keys and defaults; its conf holds the bucket's settings already
    this.bulkDeletes = fs.getConf().getBoolean("fs.s3a.multiobjectdelete.enable", true);
    this.deletePage =
        Math.max(1, Math.min(1000, fs.getConf().getInt("fs.s3a.bulk.delete.page.size", 250)));
  }

  @Override
  public String key(Path path) {
    return fs.pathToKey(path);
  }

  @Override
  public Path path(String key) {
    return fs.makeQualified(new Path("/" + key));
  }

  @Override
  public TreeMap<String, Long> list(Path dir) throws IOException {
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

  @Override
  public InputStream openWhole(String key, String etag) throws IOException {
    GetObjectRequest.Builder request = GetObjectRequest.builder().bucket(bucket).key(key);
    if (etag != null) {
      request.ifMatch(etag);
    }
    try {
      return client.getObject(request.build());
    } catch (NoSuchKeyException e) {
      throw new FileNotFoundException("No such file: " + path(key));
    } catch (S3Exception e) {
      if (e.statusCode() == 412) {
        throw new IOException(
            path(key) + " changed since it was listed (etag " + etag + "): " + e.getMessage(), e);
      }
      throw new IOException("Cannot read " + path(key) + ": " + e, e);
    } catch (SdkException e) {
      throw new IOException("Cannot read " + path(key) + ": " + e, e);
    }
  }

  @Override
  public void copy(String from, String to) throws IOException {
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

  @Override
  public void delete(String key) throws IOException {
    try {
      client.deleteObject(DeleteObjectRequest.builder().bucket(bucket).key(key).build());
    } catch (SdkException e) {
      throw new IOException("Cannot delete " + path(key) + ": " + e, e);
    }
  }

  @Override
  public void deleteAll(Collection<String> keys) throws IOException {
    List<String> all = new ArrayList<>(keys);
    for (int from = 0; from < all.size(); from += deletePage) {
      List<String> page = all.subList(from, Math.min(all.size(), from + deletePage));
      if (page.size() > 1 && bulkDeletes && !bulkDeletesRefused && deletedInBulk(page)) {
        continue;
      }
      for (String key : page) {
        delete(key);
      }
    }
  }

  /** One multi-object delete; false when the store does not implement it. */
  private boolean deletedInBulk(List<String> page) throws IOException {
    List<ObjectIdentifier> objects = new ArrayList<>(page.size());
    for (String key : page) {
      objects.add(ObjectIdentifier.builder().key(key).build());
    }
    DeleteObjectsResponse response;
    try {
      response =
          client.deleteObjects(
              DeleteObjectsRequest.builder()
                  .bucket(bucket)
                  .delete(Delete.builder().objects(objects).quiet(true).build())
                  .build());
    } catch (S3Exception e) {
      if (e.statusCode() == 501) {
        bulkDeletesRefused = true;
        return false;
      }
      throw new IOException("Cannot delete " + page.size() + " objects: " + e, e);
    } catch (SdkException e) {
      throw new IOException("Cannot delete " + page.size() + " objects: " + e, e);
    }
    if (response.hasErrors() && !response.errors().isEmpty()) {
      S3Error first = response.errors().get(0);
      throw new IOException(
          "Cannot delete "
              + response.errors().size()
              + " of "
              + page.size()
              + " objects, the first "
              + path(first.key())
              + ": "
              + first.code()
              + " "
              + first.message());
    }
    return true;
  }
}
