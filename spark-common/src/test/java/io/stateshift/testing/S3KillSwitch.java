package io.stateshift.testing;

import java.util.concurrent.atomic.AtomicInteger;
import java.util.regex.Pattern;
import software.amazon.awssdk.core.SdkRequest;
import software.amazon.awssdk.core.interceptor.Context;
import software.amazon.awssdk.core.interceptor.ExecutionAttributes;
import software.amazon.awssdk.core.interceptor.ExecutionInterceptor;
import software.amazon.awssdk.services.s3.model.CopyObjectRequest;
import software.amazon.awssdk.services.s3.model.DeleteObjectRequest;
import software.amazon.awssdk.services.s3.model.DeleteObjectsRequest;
import software.amazon.awssdk.services.s3.model.ObjectIdentifier;
import software.amazon.awssdk.services.s3.model.PutObjectRequest;

/**
 * Kills its JVM with SIGKILL right after the n-th S3 request of a kind whose key matches a pattern
 * has succeeded: inside one of S3A's own operations, where no fail point of stateshift can reach. A
 * rename on S3A is a copy, then a delete of the source, so {@code copy} stops a file move with the
 * copy made and the source still there, and a folder move with some files copied and none deleted;
 * {@code delete} (one object, or a multi-object delete that names a matching key), a folder move
 * with every file copied and some sources deleted.
 *
 * <p>Armed by {@code -Dstateshift.test.s3kill=<copy|delete|put>:<regex of the key>:<n>} (the
 * destination key for a copy), in a child JVM whose S3A has this class among its request handlers:
 * {@code spark.hadoop.fs.s3a.audit.execution.interceptors=io.stateshift.testing.S3KillSwitch}.
 */
public final class S3KillSwitch implements ExecutionInterceptor {
  public static final String PROPERTY = "stateshift.test.s3kill";
  public static final String HANDLERS = "fs.s3a.audit.execution.interceptors";

  private static final AtomicInteger SEEN = new AtomicInteger();

  private final String kind;
  private final Pattern key;
  private final int nth;

  public S3KillSwitch() {
    String armed = System.getProperty(PROPERTY);
    if (armed == null || armed.isBlank()) {
      kind = null;
      key = null;
      nth = 0;
      return;
    }
    int first = armed.indexOf(':');
    int last = armed.lastIndexOf(':');
    kind = armed.substring(0, first);
    key = Pattern.compile(armed.substring(first + 1, last));
    nth = Integer.parseInt(armed.substring(last + 1));
  }

  /** {@code --conf} value arguments that install the switch in a child's S3A. */
  public static java.util.List<String> cliConf() {
    return java.util.List.of(
        "--conf", "spark.hadoop." + HANDLERS + "=" + S3KillSwitch.class.getName());
  }

  /** The system property that arms it. */
  public static String armed(String kind, String keyRegex, int nth) {
    return "-D" + PROPERTY + "=" + kind + ":" + keyRegex + ":" + nth;
  }

  @Override
  public void afterExecution(
      Context.AfterExecution context, ExecutionAttributes executionAttributes) {
    if (kind == null) {
      return;
    }
    String matched = matchedKey(context.request());
    if (matched == null || !key.matcher(matched).find()) {
      return;
    }
    if (SEEN.incrementAndGet() == nth) {
      System.err.println("stateshift test: killing the process after " + kind + " " + matched);
      System.err.flush();
      try {
        new ProcessBuilder("kill", "-9", Long.toString(ProcessHandle.current().pid()))
            .inheritIO()
            .start()
            .waitFor();
        Thread.sleep(10_000);
      } catch (Exception e) {
        // fall through to halt
      }
      Runtime.getRuntime().halt(137);
    }
  }

  private String matchedKey(SdkRequest request) {
    switch (kind) {
      case "copy":
        return request instanceof CopyObjectRequest copy ? copy.destinationKey() : null;
      case "delete":
        if (request instanceof DeleteObjectsRequest bulk) {
          return bulk.delete().objects().stream()
              .map(ObjectIdentifier::key)
              .filter(k -> key.matcher(k).find())
              .findFirst()
              .orElse(null);
        }
        return request instanceof DeleteObjectRequest delete ? delete.key() : null;
      case "put":
        return request instanceof PutObjectRequest put ? put.key() : null;
      default:
        return null;
    }
  }
}
