package io.stateshift.protocol;

import io.stateshift.checkpoint.CheckpointFiles;
import io.stateshift.config.StateShiftConf;
import java.io.File;
import java.io.FileNotFoundException;
import java.io.IOException;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.FileSystemException;
import java.nio.file.Files;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;
import java.util.Locale;
import java.util.Optional;
import java.util.Set;
import java.util.UUID;
import org.apache.hadoop.fs.ChecksumFileSystem;
import org.apache.hadoop.fs.FileAlreadyExistsException;
import org.apache.hadoop.fs.FileStatus;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.LocalFileSystem;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.fs.RawLocalFileSystem;

/**
 * The small files that lock a checkpoint ({@code _stateshift/lock}, {@code
 * _stateshift/query-lease}) and the one primitive they need from the store: create a file only if
 * none is there, as one atomic step. Hadoop's {@code create(path, false)} is that on HDFS, but not
 * everywhere:
 *
 * <ul>
 *   <li>the local file system checks, then opens: a hard link of a fully written temporary file
 *       ({@code link(2)}, which fails if the name exists) is used instead;
 *   <li>S3A's {@code create} is a HEAD then an unconditional PUT; with {@code
 *       fs.s3a.create.conditional.enabled} (on by default since hadoop-aws 3.4.2) its {@code
 *       createFile()} builder takes {@code fs.option.create.conditional.overwrite}, a PUT with
 *       {@code If-None-Match: *} that the store refuses (412) when the object exists;
 *   <li>ABFS sends {@code If-None-Match: *} and the GCS connector a generation-0 precondition for a
 *       create without overwrite;
 *   <li>any other store: no atomic create is known, and {@link Mode#UNSAFE} says so.
 * </ul>
 *
 * Times are the store's: a lease's age is the store's modification time of its file against the
 * store's time now ({@link #storeNow}), so the holder's and the reader's clocks never meet.
 */
final class LeaseFiles {
  /** Extra schemes whose {@code create(path, false)} the user knows to be atomic. */
  static final String EXCLUSIVE_SCHEMES = StateShiftConf.EXCLUSIVE_CREATE_SCHEMES.key();

  private static final Set<String> ATOMIC_CREATE_SCHEMES =
      Set.of("hdfs", "webhdfs", "swebhdfs", "abfs", "abfss", "gs");

  /** How a file is created only if absent on this store. */
  enum Mode {
    LOCAL_LINK,
    ATOMIC_CREATE,
    CONDITIONAL_PUT,
    UNSAFE
  }

  /** A lease file's text and the store's modification time of it. */
  record Read(String text, long modifiedMs) {}

  private LeaseFiles() {}

  static Mode modeOf(CheckpointFiles files) {
    FileSystem fs = files.fs();
    if (fs instanceof LocalFileSystem || fs instanceof RawLocalFileSystem) {
      return Mode.LOCAL_LINK;
    }
    String scheme = files.root().toUri().getScheme();
    scheme = scheme == null ? "" : scheme.toLowerCase(Locale.ROOT);
    if (ATOMIC_CREATE_SCHEMES.contains(scheme)
        || files.conf().getTrimmedStringCollection(EXCLUSIVE_SCHEMES).contains(scheme)) {
      return Mode.ATOMIC_CREATE;
    }
    try {
      if (fs.hasPathCapability(files.root(), CheckpointFiles.CONDITIONAL_CREATE)) {
        return Mode.CONDITIONAL_PUT;
      }
    } catch (IOException | RuntimeException e) {
      // a store that cannot answer has no such capability
    }
    return Mode.UNSAFE;
  }

  /** Why {@link Mode#UNSAFE} was chosen, and what the user can do: for refusals. */
  static String unsafeExplanation(CheckpointFiles files) {
    String scheme = files.root().toUri().getScheme();
    String fix =
        "s3a".equals(scheme)
            ? "S3A offers it (If-None-Match) from hadoop-aws 3.4.2 with "
                + "fs.s3a.create.conditional.enabled=true (the default; pass --conf "
                + "spark.hadoop.fs.s3a.create.conditional.enabled=true if it was turned off, and use a "
                + "store that honours conditional writes)"
            : "if this store's create without overwrite is atomic, name its scheme in --conf "
                + "spark.hadoop."
                + EXCLUSIVE_SCHEMES
                + "="
                + scheme;
    return "the file system of "
        + files.root()
        + " ("
        + files.fs().getClass().getSimpleName()
        + ") offers no create-if-absent, so stateshift cannot lock the checkpoint against a "
        + "second repartition or rollback running at the same time. "
        + capitalize(fix)
        + ".";
  }

  private static String capitalize(String s) {
    return Character.toUpperCase(s.charAt(0)) + s.substring(1);
  }

  /**
   * Creates {@code path} holding {@code text} if nothing is there. Returns false when a file is
   * there already (whoever wrote it).
   */
  static boolean createExclusive(CheckpointFiles files, Path path, String text, Mode mode)
      throws IOException {
    FileSystem fs = files.fs();
    byte[] bytes = text.getBytes(StandardCharsets.UTF_8);
    switch (mode) {
      case LOCAL_LINK:
        return linkLocal(fs, path, bytes);
      case CONDITIONAL_PUT:
        try (OutputStream out = (OutputStream) files.createIfAbsent(path).build()) {
          out.write(bytes);
        } catch (FileAlreadyExistsException e) {
          return false;
        } catch (IOException e) {
          // The store's refusal (412 Precondition Failed; 409 when two conditional writes race)
          // arrives at close as a connector-specific exception: tell by what is there now.
          if (refusedAsExisting(e)) {
            return false; // there when the store decided, even if deleted since (a take-over
            // marker)
          }
          Optional<Read> there = read(files, path);
          if (there.isEmpty()) {
            throw e;
          }
          return there.get().text().equals(text);
        }
        return true;
      default:
        fs.mkdirs(path.getParent());
        try (OutputStream out = fs.create(path, false)) {
          out.write(bytes);
        } catch (FileAlreadyExistsException e) {
          return false;
        } catch (IOException e) {
          // HDFS refuses a file another writer has open with AlreadyBeingCreatedException
          // (wrapped or not, depending on the client): our create failed, so what is there now
          // is another's.
          if (fs.exists(path)) {
            return false;
          }
          throw e;
        }
        return true;
    }
  }

  /**
   * Whether a conditional PUT failed because the object existed: 412 Precondition Failed, or 409
   * when two conditional writes of one key race (S3A passes the service's answer on in the
   * message).
   */
  private static boolean refusedAsExisting(Throwable e) {
    for (Throwable t = e; t != null; t = t.getCause()) {
      String message = String.valueOf(t.getMessage());
      if (message.contains("Status Code: 412")
          || message.contains("PreconditionFailed")
          || message.contains("Status Code: 409")
          || message.contains("ConditionalRequestConflict")) {
        return true;
      }
    }
    return false;
  }

  /**
   * Writes a fully written temporary file, then links it under the lock's name: {@code link(2)}
   * fails when the name exists, so exactly one of several takers wins, and a reader never sees a
   * half-written lock. Written through the raw local file system: no checksum side file.
   */
  private static boolean linkLocal(FileSystem fs, Path path, byte[] bytes) throws IOException {
    FileSystem raw =
        fs instanceof ChecksumFileSystem checksummed ? checksummed.getRawFileSystem() : fs;
    Path tmp = tmpBeside(path);
    raw.mkdirs(path.getParent());
    try {
      try (OutputStream out = raw.create(tmp, false)) {
        out.write(bytes);
      }
      java.nio.file.Path target = localFile(fs, path).toPath();
      try {
        Files.createLink(target, localFile(fs, tmp).toPath());
      } catch (java.nio.file.FileAlreadyExistsException e) {
        return false;
      } catch (UnsupportedOperationException | FileSystemException e) {
        // no hard links here (some network file systems): an exclusive create, then the text
        try (OutputStream out =
            Files.newOutputStream(
                target, StandardOpenOption.CREATE_NEW, StandardOpenOption.WRITE)) {
          out.write(bytes);
        } catch (java.nio.file.FileAlreadyExistsException exists) {
          return false;
        }
      }
      return true;
    } finally {
      deleteQuietly(raw, tmp);
    }
  }

  /**
   * Replaces the file in one step where the store can: a rename over it on a local disk ({@code
   * rename(2)}; Hadoop's local overwriting rename deletes first) and HDFS, one PUT on an object
   * store (which readers see whole, old or new).
   */
  static void replace(CheckpointFiles files, Path path, String text, Mode mode) throws IOException {
    FileSystem fs = files.fs();
    byte[] bytes = text.getBytes(StandardCharsets.UTF_8);
    if (mode == Mode.LOCAL_LINK) {
      FileSystem raw =
          fs instanceof ChecksumFileSystem checksummed ? checksummed.getRawFileSystem() : fs;
      Path tmp = tmpBeside(path);
      try {
        try (OutputStream out = raw.create(tmp, false)) {
          out.write(bytes);
        }
        Files.move(
            localFile(fs, tmp).toPath(),
            localFile(fs, path).toPath(),
            StandardCopyOption.ATOMIC_MOVE,
            StandardCopyOption.REPLACE_EXISTING);
      } finally {
        deleteQuietly(raw, tmp);
      }
    } else if (mode == Mode.CONDITIONAL_PUT || mode == Mode.UNSAFE) {
      try (OutputStream out = fs.create(path, true)) {
        out.write(bytes);
      }
    } else {
      files.replace(path, text);
    }
  }

  static Optional<Read> read(CheckpointFiles files, Path path) {
    try {
      FileStatus status = files.fs().getFileStatus(path);
      return Optional.of(new Read(files.readText(path), status.getModificationTime()));
    } catch (FileNotFoundException e) {
      return Optional.empty();
    } catch (IOException e) {
      throw new java.io.UncheckedIOException(e);
    } catch (java.io.UncheckedIOException e) {
      if (e.getCause() instanceof FileNotFoundException) {
        return Optional.empty(); // deleted between the two calls
      }
      throw e;
    }
  }

  /**
   * The store's time now: the modification time it gives a file written for the purpose (then
   * deleted). Compared with the modification time of a lease file, it tells the lease's age without
   * trusting either host's clock. Falls back to this host's clock when nothing can be written.
   */
  static long storeNow(CheckpointFiles files, Path dir) {
    FileSystem fs = files.fs();
    Path probe = new Path(dir, ".clock-" + UUID.randomUUID());
    try {
      try (OutputStream out = fs.create(probe, true)) {
        out.write('0');
      }
      return fs.getFileStatus(probe).getModificationTime();
    } catch (IOException e) {
      return System.currentTimeMillis();
    } finally {
      deleteQuietly(fs, probe);
    }
  }

  private static Path tmpBeside(Path path) {
    return new Path(path.getParent(), "." + path.getName() + "." + UUID.randomUUID() + ".tmp");
  }

  private static File localFile(FileSystem fs, Path path) {
    return fs instanceof LocalFileSystem local
        ? local.pathToFile(path)
        : ((RawLocalFileSystem) fs).pathToFile(path);
  }

  private static void deleteQuietly(FileSystem fs, Path path) {
    try {
      fs.delete(path, false);
    } catch (IOException | RuntimeException ignored) {
      // a leftover temporary file is never read
    }
  }
}
