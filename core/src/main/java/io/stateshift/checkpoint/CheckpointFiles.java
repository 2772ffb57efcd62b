package io.stateshift.checkpoint;

import io.stateshift.StateShiftException;
import io.stateshift.StateShiftException.Reason;
import java.io.ByteArrayOutputStream;
import java.io.FileNotFoundException;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.UUID;
import java.util.function.Consumer;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FileContext;
import org.apache.hadoop.fs.FileStatus;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Options;
import org.apache.hadoop.fs.Path;

/**
 * File operations on a checkpoint, on any Hadoop file system. New files are written to a temporary
 * name and renamed into place, so a reader never sees half a file, the same way Spark writes its
 * logs; on S3, where a PUT is atomic, they are written in place with one request.
 */
public final class CheckpointFiles {
  /** The connector's version must be the Hadoop's that Spark runs on: this one's. */
  private static final String CONNECTOR_HINT =
      "Add the file system's connector jar: "
          + "--jars <connector.jar,its dependencies> or --packages <group:artifact:version> (for "
          + "s3a: --packages org.apache.hadoop:hadoop-aws:"
          + org.apache.hadoop.util.VersionInfo.getVersion()
          + "), and name its class with --conf "
          + "spark.hadoop.fs.<scheme>.impl=<class> if the jar does not register it.";

  /** Hadoop's createFile() option for a create that fails when the file exists (hadoop 3.4.2+). */
  public static final String CONDITIONAL_CREATE = "fs.option.create.conditional.overwrite";

  private final Path root;
  private final FileSystem fs;
  private final Configuration conf;

  /** What was read from files by their etags ({@link #readOnce}). */
  private final Map<String, Object> readsByEtag = new java.util.concurrent.ConcurrentHashMap<>();

  private CheckpointFiles(Path root, FileSystem fs, Configuration conf) {
    this.root = root;
    this.fs = fs;
    this.conf = conf;
  }

  /**
   * Resolves a location the way Spark resolves checkpoint locations: qualified by its file system.
   */
  public static CheckpointFiles at(String location, Configuration conf) {
    if (location == null || location.isBlank()) {
      throw new StateShiftException(
          Reason.INVALID_ARGUMENT,
          "No checkpoint location given. Pass the checkpointLocation of the stopped query.");
    }
    try {
      Path path = new Path(location);
      Configuration ours = ForklessLocalFileSystem.applyTo(conf);
      FileSystem fs = path.getFileSystem(ours);
      return new CheckpointFiles(fs.makeQualified(path), fs, ours);
    } catch (IOException | IllegalArgumentException e) {
      throw new StateShiftException(
          Reason.CHECKPOINT_NOT_FOUND,
          "Cannot open checkpoint location "
              + location
              + ": "
              + e.getMessage()
              + (e.getMessage() != null && e.getMessage().contains("No FileSystem for scheme")
                  ? ". " + CONNECTOR_HINT
                  : ""),
          e);
    } catch (RuntimeException e) {
      // Hadoop reports a file system class named in fs.<scheme>.impl but not loadable this way
      if (e.getCause() instanceof ClassNotFoundException) {
        throw new StateShiftException(
            Reason.CHECKPOINT_NOT_FOUND,
            "Cannot open checkpoint location "
                + location
                + ": "
                + e.getMessage()
                + ". "
                + CONNECTOR_HINT,
            e);
      }
      throw e;
    }
  }

  public Path root() {
    return root;
  }

  /**
   * The refusal of a checkpoint its file system denied access to (S3's 403, a wrong or missing
   * key): one line naming the credential settings, as bad input, for a read before any write.
   */
  public StateShiftException accessDenied(Throwable denied) {
    String scheme = root.toUri().getScheme();
    String fix =
        "s3a".equals(scheme)
            ? "Check the S3 credentials: --conf spark.hadoop.fs.s3a.access.key=<key id> and "
                + "--conf spark.hadoop.fs.s3a.secret.key=<secret> (or per bucket, "
                + "spark.hadoop.fs.s3a.bucket."
                + root.toUri().getHost()
                + ".access.key and .secret.key), and that they may read and write the bucket."
            : "Check the file system's credentials (--conf spark.hadoop.<its key>=<value>) and "
                + "that they may read and write the checkpoint.";
    return new StateShiftException(
        Reason.CHECKPOINT_NOT_FOUND,
        "Cannot open checkpoint location " + root + ": access denied. " + fix,
        denied);
  }

  public FileSystem fs() {
    return fs;
  }

  public Configuration conf() {
    return conf;
  }

  public Path path(String relative) {
    return new Path(root, relative);
  }

  public boolean exists(Path path) {
    try {
      return fs.exists(path);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  public boolean isDirectory(Path path) {
    try {
      return fs.getFileStatus(path).isDirectory();
    } catch (FileNotFoundException e) {
      return false;
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  public String readText(Path path) {
    try (InputStream in = fs.open(path)) {
      ByteArrayOutputStream out = new ByteArrayOutputStream();
      in.transferTo(out);
      return out.toString(StandardCharsets.UTF_8);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  /**
   * What {@code read} makes of a file, read once for its etag (from a listing's status): a file
   * whose etag is unchanged holds the same bytes, so a second validation of the same checkpoint
   * (after the lock is taken) reads nothing again on S3. Without an etag (HDFS, local disk) it
   * reads every time.
   */
  @SuppressWarnings("unchecked")
  public <T> T readOnce(FileStatus status, java.util.function.Function<FileStatus, T> read) {
    String etag =
        status instanceof org.apache.hadoop.fs.EtagSource source ? source.getEtag() : null;
    if (etag == null || etag.isEmpty()) {
      return read.apply(status);
    }
    return (T)
        readsByEtag.computeIfAbsent(
            status.getPath() + "@" + etag + "@" + status.getLen(), k -> read.apply(status));
  }

  private static boolean isHadoopChecksum(Path p) {
    return p.getName().startsWith(".") && p.getName().endsWith(".crc");
  }

  /** Lists the children of a folder, without Hadoop's checksum side files; empty when absent. */
  public List<FileStatus> list(Path dir) {
    try {
      List<FileStatus> out = new ArrayList<>();
      for (FileStatus status : fs.listStatus(dir)) {
        if (!status.getPath().getName().endsWith(".crc")) {
          out.add(status);
        }
      }
      return out;
    } catch (FileNotFoundException absent) {
      return List.of(); // one listing answers both questions: no existence check first
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  /**
   * The files below a folder with their statuses (sizes, and etags where the store gives them), by
   * name, by the folder that holds them (relative to the checkpoint root, as {@link #relativize}
   * gives it), from one flat listing, where a store lists a whole prefix at a request per 1,000
   * files (S3); null elsewhere, where a listing per folder costs the same.
   */
  public Map<String, Map<String, FileStatus>> filesBelow(Path dir) {
    if (!flatNamespace()) {
      return null;
    }
    Map<String, Map<String, FileStatus>> out = new HashMap<>();
    flatListing(
        dir,
        file ->
            out.computeIfAbsent(relativize(file.getPath().getParent()), k -> new HashMap<>())
                .put(file.getPath().getName(), file));
    return out;
  }

  /** Every file below {@code dir} from the store's recursive listing; none when it is absent. */
  private void flatListing(Path dir, Consumer<FileStatus> each) {
    try {
      var walk = fs.listFiles(dir, true);
      while (walk.hasNext()) {
        FileStatus file = walk.next();
        if (!isHadoopChecksum(file.getPath())) {
          each.accept(file);
        }
      }
    } catch (FileNotFoundException absent) {
      // one listing answers both questions: no existence check first
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  /**
   * Every file below a folder (recursively), without Hadoop's hidden {@code .<name>.crc} side files
   * (they travel with their file on rename). Spark's own {@code <name>.crc} checksum files (state
   * checkpoint format v2) are kept: they must move into place with the state they check.
   */
  public List<Path> listFilesRecursively(Path dir) {
    List<Path> out = new ArrayList<>();
    if (flatNamespace()) {
      // one flat listing of the prefix (a request per 1,000 files), not one per folder
      flatListing(dir, file -> out.add(file.getPath()));
      return out;
    }
    try {
      FileStatus[] top;
      try {
        top = fs.listStatus(dir);
      } catch (FileNotFoundException absent) {
        return List.of(); // one listing answers both questions: no existence check first
      }
      collectFiles(top, out);
      return out;
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  /**
   * Walks with listStatus, not listFiles: on a local disk without Hadoop's native library,
   * listFiles asks every file's permissions with a forked {@code ls} (about 20 ms a file: 5 s of a
   * join's switch, which lists its 128 staged files twice).
   */
  private void collectFiles(FileStatus[] listing, List<Path> out) throws IOException {
    for (FileStatus status : listing) {
      if (status.isDirectory()) {
        collectFiles(fs.listStatus(status.getPath()), out);
      } else if (!isHadoopChecksum(status.getPath())) {
        out.add(status.getPath());
      }
    }
  }

  /** Writes a new file atomically; fails if the file exists already. */
  public void writeNew(Path path, String text) {
    write(path, text, false);
  }

  /** Writes a file atomically, replacing any previous version in one rename. */
  public void replace(Path path, String text) {
    write(path, text, true);
  }

  private void write(Path path, String text, boolean overwrite) {
    if (flatNamespace() && writtenInPlace(path, text, overwrite)) {
      return;
    }
    Path tmp = new Path(path.getParent(), "." + path.getName() + "." + UUID.randomUUID() + ".tmp");
    try {
      fs.mkdirs(path.getParent());
      try (OutputStream out = fs.create(tmp, false)) {
        out.write(text.getBytes(StandardCharsets.UTF_8));
      }
      rename(tmp, path, overwrite);
    } catch (IOException e) {
      deleteQuietly(tmp);
      throw new UncheckedIOException("Cannot write " + path + ": " + e.getMessage(), e);
    }
  }

  /**
   * On S3 a PUT replaces an object atomically (a reader sees the old bytes or the new, never half),
   * and with {@code If-None-Match: *} it creates one only if absent: one request where a temporary
   * file and S3A's rename take about ten. A new file that is there already with the same text is a
   * write a crash cut short, as with a rename; with other text it is refused. False where the store
   * offers no conditional create and the file is new: the temporary file's rename does it.
   */
  private boolean writtenInPlace(Path path, String text, boolean overwrite) {
    boolean conditional;
    try {
      conditional = !overwrite && fs.hasPathCapability(path, CONDITIONAL_CREATE);
    } catch (IOException e) {
      conditional = false;
    }
    if (!overwrite && !conditional) {
      return false;
    }
    byte[] bytes = text.getBytes(StandardCharsets.UTF_8);
    try {
      @SuppressWarnings("rawtypes") // FileSystem.createFile returns the raw builder type
      org.apache.hadoop.fs.FSDataOutputStreamBuilder builder =
          conditional ? createIfAbsent(path) : fs.createFile(path).overwrite(true).recursive();
      builder.opt("fs.s3a.create.performance", true); // no probes: the PUT decides
      try (OutputStream out = (OutputStream) builder.build()) {
        out.write(bytes);
      }
      return true;
    } catch (IOException e) {
      if (!overwrite && exists(path)) {
        if (readText(path).equals(text)) {
          return true; // written by a run a crash stopped before it went on
        }
        throw new UncheckedIOException(
            "Cannot write " + path + ": refusing to overwrite existing file " + path, e);
      }
      throw new UncheckedIOException("Cannot write " + path + ": " + e.getMessage(), e);
    }
  }

  /**
   * A create the store refuses when the file exists ({@link #CONDITIONAL_CREATE}: on S3A a PUT with
   * {@code If-None-Match: *}, refused with 412); the refusal arrives when the stream is closed.
   */
  @SuppressWarnings("rawtypes") // FileSystem.createFile returns the raw builder type
  public org.apache.hadoop.fs.FSDataOutputStreamBuilder createIfAbsent(Path path)
      throws IOException {
    org.apache.hadoop.fs.FSDataOutputStreamBuilder builder = fs.createFile(path);
    builder.overwrite(false);
    builder.recursive();
    builder.must(CONDITIONAL_CREATE, true);
    return builder;
  }

  /**
   * Whether the store's folders are only key prefixes, as S3's are: a file can be written or
   * renamed under a folder that was never made, and a rename onto an existing file fails rather
   * than replacing it (S3A checks). There, {@link #rename} skips the folder and existence checks
   * that cost a request each, and asks only when the rename fails.
   */
  public boolean flatNamespace() {
    return "s3a".equals(fs.getScheme());
  }

  /** Renames one file; with {@code overwrite} the target is replaced atomically where supported. */
  public void rename(Path from, Path to, boolean overwrite) throws IOException {
    if (!overwrite && flatNamespace()) {
      boolean renamed;
      try {
        renamed = fs.rename(from, to);
      } catch (org.apache.hadoop.fs.FileAlreadyExistsException exists) {
        renamed = false;
      }
      if (!renamed) {
        finishOrRefuseRename(from, to);
      }
      return;
    }
    fs.mkdirs(to.getParent());
    if (overwrite) {
      FileContext fc = FileContext.getFileContext(fs.getUri(), conf);
      fc.rename(from, to, Options.Rename.OVERWRITE);
      // FileContext renames the data file only; carry a local checksum side file along.
      Path crcFrom = new Path(from.getParent(), "." + from.getName() + ".crc");
      if (fs.exists(crcFrom)) {
        fc.rename(
            crcFrom,
            new Path(to.getParent(), "." + to.getName() + ".crc"),
            Options.Rename.OVERWRITE);
      }
      return;
    }
    if (fs.exists(to)) {
      finishOrRefuseRename(from, to);
      return;
    }
    if (!fs.rename(from, to)) {
      throw new IOException("Rename failed: " + from + " -> " + to);
    }
  }

  /**
   * A rename whose target exists already: finished if it holds the source's bytes, else refused.
   */
  private void finishOrRefuseRename(Path from, Path to) throws IOException {
    if (sameBytes(fs, from, fs, to)) {
      // A move that copied but did not delete its source: a rename on an object store is a copy,
      // then a delete, and a crash in between leaves both. Finish it.
      fs.delete(from, false);
      return;
    }
    if (fs.exists(to)) {
      throw new IOException("Refusing to overwrite existing file " + to);
    }
    throw new IOException("Rename failed: " + from + " -> " + to);
  }

  /** Whether two files hold the same bytes: lengths first, then the contents. */
  private static boolean sameBytes(FileSystem fsA, Path a, FileSystem fsB, Path b)
      throws IOException {
    FileStatus one;
    FileStatus two;
    try {
      one = fsA.getFileStatus(a);
      two = fsB.getFileStatus(b);
    } catch (FileNotFoundException e) {
      return false;
    }
    if (!one.isFile() || !two.isFile() || one.getLen() != two.getLen()) {
      return false;
    }
    try (InputStream x = fsA.open(a);
        InputStream y = fsB.open(b)) {
      byte[] bx = new byte[64 * 1024];
      byte[] by = new byte[64 * 1024];
      while (true) {
        int n = x.readNBytes(bx, 0, bx.length);
        int m = y.readNBytes(by, 0, by.length);
        if (n != m || !java.util.Arrays.equals(bx, 0, n, by, 0, m)) {
          return false;
        }
        if (n < bx.length) {
          return true;
        }
      }
    }
  }

  /**
   * Moves a folder, resumably: one rename on the same file system where the target does not exist
   * yet, otherwise file by file. A rename of a folder on an object store is a copy, then a delete,
   * file by file, so a crash can leave some files in both places, some in one: moving again
   * finishes it, each file whose target already holds its bytes deleted at its source (see {@link
   * #rename}). Across file systems: every file copied unless its target already holds the same
   * bytes, then the source deleted (a target is never deleted first: it may hold the only whole
   * copy).
   */
  public void moveTree(Path from, Path to) {
    try {
      FileSystem target = to.getFileSystem(conf);
      if (target.getUri().equals(fs.getUri())
          && from.getFileSystem(conf).getUri().equals(fs.getUri())) {
        if (!fs.exists(to)) {
          fs.mkdirs(to.getParent());
          if (fs.rename(from, to)) {
            return;
          }
          if (!fs.exists(to)) {
            throw new IOException("Rename failed: " + from + " -> " + to);
          }
        }
        String prefix = from.toUri().getPath() + "/";
        for (Path file : listFilesRecursively(from)) {
          rename(file, new Path(to, file.toUri().getPath().substring(prefix.length())), false);
        }
        fs.delete(from, true);
        return;
      }
      FileSystem source = from.getFileSystem(conf);
      String prefix = from.toUri().getPath() + "/";
      var walk = source.listFiles(from, true);
      while (walk.hasNext()) {
        Path file = walk.next().getPath();
        if (isHadoopChecksum(file)) {
          continue;
        }
        Path copy = new Path(to, file.toUri().getPath().substring(prefix.length()));
        if (!sameBytes(source, file, target, copy)) {
          org.apache.hadoop.fs.FileUtil.copy(source, file, target, copy, false, true, conf);
        }
      }
      source.delete(from, true);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  /**
   * A mover of files from below {@code sourceRoot} to new names below {@code targetRoot}: the
   * switch's and the tidying's moves, many at once, from several threads. Each move is resumable as
   * {@link #rename} is: a target that already holds its source's bytes only has its source deleted,
   * a target with other bytes is refused. On S3 a move is a server-side copy, the sources deleted
   * together by {@link Mover#deleteMovedSources} (a request per page of keys, {@link S3Objects}),
   * the files already in place known from one listing of each root made here; elsewhere it is
   * {@link #rename}.
   */
  public Mover mover(Path sourceRoot, Path targetRoot) {
    try {
      S3Objects s3 = flatNamespace() ? S3Objects.forFileSystem(fs) : null;
      return s3 == null
          ? new Mover(sourceRoot, null, null, null)
          : new Mover(sourceRoot, s3, s3.list(sourceRoot), s3.list(targetRoot));
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  /** Moves planned together; see {@link #mover}. Safe for use from several threads. */
  public final class Mover {
    private final Path sourceRoot;
    private final S3Objects s3;
    private final TreeMap<String, Long> sources;
    private final Set<String> targets;

    /** On S3: the keys of moved sources (and folder markers) not deleted yet. */
    private final java.util.Queue<String> movedSources =
        new java.util.concurrent.ConcurrentLinkedQueue<>();

    private Mover(
        Path sourceRoot, S3Objects s3, TreeMap<String, Long> sources, Map<String, Long> targets) {
      this.sourceRoot = sourceRoot;
      this.s3 = s3;
      this.sources = sources;
      this.targets = targets == null ? null : Set.copyOf(targets.keySet());
    }

    /** The files below the source root, as {@link #listFilesRecursively} gives them. */
    public List<Path> files() {
      if (s3 == null) {
        return listFilesRecursively(sourceRoot);
      }
      return sources.keySet().stream().filter(k -> !k.endsWith("/")).map(s3::path).toList();
    }

    /** Moves one file to a name no other file has (or one holding its bytes already). */
    public void move(Path from, Path to) throws IOException {
      if (s3 == null) {
        rename(from, to, false);
      } else {
        moveOnS3(from, to);
      }
    }

    /** Returns whether S3A's rename made the move (its delete may leave a folder marker). */
    private boolean moveOnS3(Path from, Path to) throws IOException {
      String source = s3.key(from);
      String target = s3.key(to);
      if (targets.contains(target)) {
        // a move a crash cut short between its copy and its delete: finish it, or refuse
        if (!sameBytes(fs, from, fs, to)) {
          throw new IOException("Refusing to overwrite existing file " + to);
        }
        movedSources.add(source);
        return false;
      }
      Long size = sources.get(source);
      if (size != null && size > S3Objects.MAX_SINGLE_COPY) {
        rename(from, to, false); // S3A copies it in parts
        return true;
      }
      s3.copy(source, target);
      movedSources.add(source);
      return false;
    }

    /**
     * Deletes the sources of the moves made so far. On S3 a move only copies, so that the sources
     * of many moves go in a few requests; until this runs, a moved file is in both places, which a
     * later move of it finishes as a move a crash cut short. Elsewhere moves are renames and this
     * does nothing.
     */
    public void deleteMovedSources() {
      List<String> keys = new java.util.ArrayList<>();
      for (String key = movedSources.poll(); key != null; key = movedSources.poll()) {
        keys.add(key);
      }
      try {
        if (!keys.isEmpty()) {
          s3.deleteAll(keys);
        }
      } catch (IOException e) {
        throw new UncheckedIOException(e);
      }
    }

    /**
     * Moves every file below {@code from} to the same relative path below {@code to}, and removes
     * the folder (on S3, with {@link #deleteMovedSources}); false when there is no such folder.
     */
    public boolean moveTree(Path from, Path to) throws IOException {
      if (s3 == null) {
        if (!exists(from)) {
          return false;
        }
        CheckpointFiles.this.moveTree(from, to);
        return true;
      }
      String prefix = s3.key(from) + "/";
      Map<String, Long> below = S3Objects.below(sources, prefix);
      if (below.isEmpty()) {
        return false;
      }
      // Folder markers (S3A's mkdirs writes them) go with the folder, deleted with its files'
      // sources; so do those S3A's delete writes when it empties a folder, where its rename made
      // a move.
      Set<String> markers = new TreeSet<>();
      for (String key : below.keySet()) {
        if (key.endsWith("/")) {
          markers.add(key);
        } else if (moveOnS3(s3.path(key), new Path(to, key.substring(prefix.length())))) {
          for (int slash = key.lastIndexOf('/');
              slash >= prefix.length() - 1;
              slash = key.lastIndexOf('/', slash - 1)) {
            markers.add(key.substring(0, slash + 1));
          }
        }
      }
      movedSources.addAll(markers);
      return true;
    }
  }

  public void delete(Path path, boolean recursive) {
    try {
      fs.delete(path, recursive);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  public void deleteQuietly(Path path) {
    try {
      fs.delete(path, true);
    } catch (IOException ignored) {
      // best effort: a leftover temporary file is never read by Spark or stateshift
    }
  }

  public void mkdirs(Path dir) {
    try {
      fs.mkdirs(dir);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  /** The path of {@code path} relative to the checkpoint root, with forward slashes. */
  public String relativize(Path path) {
    String base = root.toUri().getPath();
    String full = path.toUri().getPath();
    if (!full.startsWith(base)) {
      throw new IllegalArgumentException(path + " is not inside " + root);
    }
    String rel = full.substring(base.length());
    return rel.startsWith("/") ? rel.substring(1) : rel;
  }
}
