package io.stateshift.checkpoint;

import java.io.FileNotFoundException;
import java.io.IOException;
import java.net.URI;
import java.net.URISyntaxException;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.attribute.PosixFilePermission;
import java.util.EnumSet;
import java.util.Set;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.ChecksumFs;
import org.apache.hadoop.fs.DelegateToFileSystem;
import org.apache.hadoop.fs.FileStatus;
import org.apache.hadoop.fs.FsConstants;
import org.apache.hadoop.fs.FsServerDefaults;
import org.apache.hadoop.fs.LocalFileSystem;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.fs.RawLocalFileSystem;
import org.apache.hadoop.fs.local.LocalConfigKeys;
import org.apache.hadoop.fs.local.LocalFs;
import org.apache.hadoop.fs.permission.FsPermission;
import org.apache.hadoop.util.NativeCodeLoader;

/**
 * Hadoop's local file system, minus the processes it forks when its native library is missing (as
 * it is in every Maven-built Spark): a {@code chmod} for each file and folder it creates with a
 * permission, and a {@code readlink} for each {@code FileContext} rename. Spark's RocksDB commit
 * pays both for every file it writes (a process start is 2 ms at best, 18 ms measured through
 * Hadoop's shell runner); a 200k-row join's repartition forked 1,087 of them. Here permissions are
 * set and links read through {@code java.nio}; everything else is Hadoop's own code.
 *
 * <p>{@link #applyTo} gives it to stateshift's own file operations and tasks only, through a copy
 * of the Hadoop configuration ({@link CheckpointFiles#at}), never to the user's session.
 */
public final class ForklessLocalFileSystem extends LocalFileSystem {

  public ForklessLocalFileSystem() {
    super(new Raw());
  }

  /**
   * A copy of {@code conf} whose {@code file:} scheme is this file system, for both Hadoop APIs
   * (Spark's checkpoint file manager uses FileContext); {@code conf} itself when the native library
   * is loaded (nothing forks then) or the user chose another local file system.
   */
  public static Configuration applyTo(Configuration conf) {
    boolean defaultLocalFs =
        conf.get("fs.file.impl", LocalFileSystem.class.getName())
                .equals(LocalFileSystem.class.getName())
            && conf.get("fs.AbstractFileSystem.file.impl", LocalFs.class.getName())
                .equals(LocalFs.class.getName());
    if (NativeCodeLoader.isNativeCodeLoaded() || !defaultLocalFs) {
      return conf;
    }
    Configuration copy = new Configuration(conf);
    copy.set("fs.file.impl", ForklessLocalFileSystem.class.getName());
    // FileSystem.get caches per scheme, not per configuration: without this, the JVM's cached
    // file system would be returned.
    copy.setBoolean("fs.file.impl.disable.cache", true);
    copy.set("fs.AbstractFileSystem.file.impl", Fs.class.getName());
    return copy;
  }

  /** The raw (checksum-less) part. */
  public static final class Raw extends RawLocalFileSystem {
    @Override
    public void setPermission(Path p, FsPermission permission) throws IOException {
      if (permission.getStickyBit()) {
        super.setPermission(p, permission); // no java.nio equivalent; never used by Spark
        return;
      }
      try {
        Files.setPosixFilePermissions(pathToFile(p).toPath(), posix(permission));
      } catch (NoSuchFileException e) {
        throw new FileNotFoundException("File " + p + " does not exist");
      }
    }

    /**
     * Hadoop reads the link with a forked {@code readlink} (which, given a qualified path, never
     * finds one); only real symbolic links go that way here.
     */
    @Override
    public FileStatus getFileLinkStatus(Path f) throws IOException {
      if (Files.isSymbolicLink(pathToFile(f).toPath())) {
        return super.getFileLinkStatus(f);
      }
      return getFileStatus(f);
    }

    private static Set<PosixFilePermission> posix(FsPermission permission) {
      // bit 0 is others' execute, bit 8 the owner's read: the order of PosixFilePermission reversed
      PosixFilePermission[] byBit = {
        PosixFilePermission.OTHERS_EXECUTE, PosixFilePermission.OTHERS_WRITE,
        PosixFilePermission.OTHERS_READ, PosixFilePermission.GROUP_EXECUTE,
        PosixFilePermission.GROUP_WRITE, PosixFilePermission.GROUP_READ,
        PosixFilePermission.OWNER_EXECUTE, PosixFilePermission.OWNER_WRITE,
        PosixFilePermission.OWNER_READ
      };
      Set<PosixFilePermission> set = EnumSet.noneOf(PosixFilePermission.class);
      short bits = permission.toShort();
      for (int bit = 0; bit < byBit.length; bit++) {
        if ((bits & (1 << bit)) != 0) {
          set.add(byBit[bit]);
        }
      }
      return set;
    }
  }

  /** The same for Hadoop's FileContext API: Hadoop's LocalFs with {@link Raw} underneath. */
  public static final class Fs extends ChecksumFs {
    public Fs(URI uri, Configuration conf) throws IOException, URISyntaxException {
      super(new RawFs(conf));
    }
  }

  /** Hadoop's RawLocalFs (whose constructors are not public) over {@link Raw}. */
  static final class RawFs extends DelegateToFileSystem {
    RawFs(Configuration conf) throws IOException, URISyntaxException {
      super(FsConstants.LOCAL_FS_URI, new Raw(), conf, FsConstants.LOCAL_FS_URI.getScheme(), false);
    }

    @Override
    public int getUriDefaultPort() {
      return -1;
    }

    @Override
    public FsServerDefaults getServerDefaults(Path f) throws IOException {
      return LocalConfigKeys.getServerDefaults();
    }

    @Override
    @Deprecated
    public FsServerDefaults getServerDefaults() throws IOException {
      return LocalConfigKeys.getServerDefaults();
    }

    @Override
    public boolean isValidName(String src) {
      return true; // as Hadoop's: the local OS validates names
    }
  }
}
