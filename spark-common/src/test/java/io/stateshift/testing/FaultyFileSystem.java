package io.stateshift.testing;

import io.stateshift.protocol.CheckpointLock;
import java.io.IOException;
import java.io.OutputStream;
import java.net.URI;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.DelegateToFileSystem;
import org.apache.hadoop.fs.FileStatus;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.fs.RawLocalFileSystem;
import org.apache.hadoop.fs.permission.FsPermission;

/**
 * The local file system under the scheme {@code faulty://}, which can fail one chosen mutating
 * operation (create, mkdirs, rename, delete) with an IOException, as a full disk, a revoked
 * permission or a lost connection to a remote store would. Register it with {@link #register};
 * {@link Fs} serves Hadoop's FileContext (which Spark's checkpoint file manager prefers).
 *
 * <p>Operations are counted per step: {@link #step} names the step the caller is in (tests feed it
 * the repartition's fail point names). {@link #record} lists every mutating operation; {@link
 * #failAt} fails the n-th operation of a step, once. State is static: in local mode the Spark tasks
 * run in this JVM and see the same plan.
 */
public class FaultyFileSystem extends RawLocalFileSystem {
  public static final String SCHEME = "faulty";

  /** One mutating operation: the step it ran in, its number within the step, what it did. */
  public record Operation(String step, int index, String kind, String path) {}

  private static final ThreadLocal<Boolean> INSIDE = ThreadLocal.withInitial(() -> false);
  private static String step = "start";
  private static final Map<String, Integer> COUNTS = new HashMap<>();
  private static List<Operation> recorded;
  private static String failStep;
  private static int failIndex = -1;
  private static Operation failed;

  public static void register(Configuration conf) {
    conf.set("fs." + SCHEME + ".impl", FaultyFileSystem.class.getName());
    conf.set("fs.AbstractFileSystem." + SCHEME + ".impl", Fs.class.getName());
  }

  /** The {@code faulty://} URI of a local path. */
  public static String uriOf(java.nio.file.Path local) {
    return SCHEME + "://" + local.toAbsolutePath();
  }

  /** Starts a run: step "start", counts reset, recording on when {@code record} is set. */
  public static synchronized void reset(boolean record) {
    step = "start";
    COUNTS.clear();
    recorded = record ? new ArrayList<>() : null;
    failStep = null;
    failIndex = -1;
    failed = null;
  }

  public static synchronized void step(String name) {
    step = name;
  }

  /** Fails the operation number {@code index} (from 0) of {@code stepName}, once. */
  public static synchronized void failAt(String stepName, int index) {
    failStep = stepName;
    failIndex = index;
    failed = null;
  }

  public static synchronized List<Operation> recorded() {
    return List.copyOf(recorded);
  }

  /** The operation that was failed, or null. */
  public static synchronized Operation failed() {
    return failed;
  }

  private static synchronized void before(String kind, Path path) throws IOException {
    int index = COUNTS.merge(step, 1, Integer::sum) - 1;
    Operation op = new Operation(step, index, kind, path.toUri().getPath());
    if (recorded != null) {
      recorded.add(op);
    }
    if (failed == null && step.equals(failStep) && index == failIndex) {
      failed = op;
      throw new IOException(
          "injected I/O error: "
              + kind
              + " "
              + op.path()
              + " (step "
              + step
              + ", operation "
              + index
              + ")");
    }
  }

  private interface Call<T> {
    T run() throws IOException;
  }

  /**
   * Counts the outermost operation only: Hadoop's operations call one another. The lock's
   * background renewals are neither counted nor failed: they run on a timer, so they would land at
   * a different place in each run (a failed renewal is retried by the next one).
   */
  private static <T> T mutating(String kind, Path path, Call<T> call) throws IOException {
    if (INSIDE.get() || Thread.currentThread().getName().equals(CheckpointLock.RENEWER_THREAD)) {
      return call.run();
    }
    INSIDE.set(true);
    try {
      before(kind, path);
      return call.run();
    } finally {
      INSIDE.set(false);
    }
  }

  @Override
  public URI getUri() {
    return URI.create(SCHEME + ":///");
  }

  @Override
  public String getScheme() {
    return SCHEME;
  }

  @Override
  protected OutputStream createOutputStreamWithMode(Path f, boolean append, FsPermission permission)
      throws IOException {
    return mutating(
        append ? "append" : "create",
        f,
        () -> super.createOutputStreamWithMode(f, append, permission));
  }

  @Override
  public boolean mkdirs(Path f) throws IOException {
    return mutating("mkdirs", f, () -> super.mkdirs(f));
  }

  @Override
  public boolean mkdirs(Path f, FsPermission permission) throws IOException {
    return mutating("mkdirs", f, () -> super.mkdirs(f, permission));
  }

  @Override
  public boolean rename(Path src, Path dst) throws IOException {
    return mutating("rename", src, () -> super.rename(src, dst));
  }

  @Override
  public boolean delete(Path p, boolean recursive) throws IOException {
    return mutating("delete", p, () -> super.delete(p, recursive));
  }

  // The local file statuses read permissions through java.io.File, which wants a file: URI.

  @Override
  public FileStatus getFileStatus(Path f) throws IOException {
    return plain(super.getFileStatus(f));
  }

  @Override
  public FileStatus getFileLinkStatus(Path f) throws IOException {
    return plain(super.getFileLinkStatus(f));
  }

  @Override
  public FileStatus[] listStatus(Path f) throws IOException {
    FileStatus[] statuses = super.listStatus(f);
    FileStatus[] out = new FileStatus[statuses.length];
    for (int i = 0; i < statuses.length; i++) {
      out[i] = plain(statuses[i]);
    }
    return out;
  }

  private static FileStatus plain(FileStatus s) {
    return new FileStatus(
        s.getLen(),
        s.isDirectory(),
        1,
        s.getBlockSize(),
        s.getModificationTime(),
        s.getAccessTime(),
        s.isDirectory() ? FsPermission.getDirDefault() : FsPermission.getFileDefault(),
        "stateshift",
        "stateshift",
        s.getPath());
  }

  /** The same file system for Hadoop's FileContext API. */
  public static class Fs extends DelegateToFileSystem {
    public Fs(URI uri, Configuration conf) throws IOException, java.net.URISyntaxException {
      super(uri, new FaultyFileSystem(), conf, SCHEME, false);
    }
  }
}
