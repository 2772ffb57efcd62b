package io.stateshift.spark.state;

import io.stateshift.config.StateShiftConf;
import io.stateshift.spark.line.RocksDbCalls;
import io.stateshift.spark.line.StateCalls;
import java.io.File;
import java.io.FileNotFoundException;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.util.HashMap;
import java.util.Map;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FileStatus;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.LocalFileSystem;
import org.apache.hadoop.fs.Path;
import org.apache.spark.sql.execution.streaming.state.RocksDBCheckpointMetadata;
import org.apache.spark.sql.execution.streaming.state.RocksDBFileManager;
import org.apache.spark.sql.execution.streaming.state.RocksDBSstFile;
import org.apache.spark.sql.execution.streaming.state.StateStoreId;
import org.rocksdb.RocksDBException;

/**
 * One version of a RocksDB-backed partition, opened read-only from its snapshot, for a single pass
 * over its keys.
 *
 * <p>Spark's provider loads a version read-write: it opens a fresh native instance (a new manifest,
 * write-ahead log and options file, each synced), and closing it deletes them again. For a store
 * read once and thrown away that is most of its time when the store is small (a join's four stores
 * per partition). Here the snapshot (its zip and SST files) is fetched from the driver's listing or
 * linked on a local disk ({@link #fetched}), or else downloaded by Spark's own file manager, and
 * RocksDB opens it read-only with Spark's options: nothing is written, nothing is synced.
 *
 * <p>Only a version that has its own snapshot is read this way; one that must be rebuilt from an
 * older snapshot and changelogs, or one with column families, goes through the provider ({@link
 * #open} returns null).
 */
final class RocksDbSnapshotReader implements AutoCloseable {
  /**
   * {@code --conf spark.stateshift.rocksdb.readOnlySnapshots=false} loads every version with the
   * provider.
   */
  static final boolean ENABLED = StateShiftConf.ROCKSDB_READ_ONLY_SNAPSHOTS.inTask();

  private final org.rocksdb.RocksDB db;
  private final File dir;

  private RocksDbSnapshotReader(org.rocksdb.RocksDB db, File dir) {
    this.db = db;
    this.dir = dir;
  }

  /**
   * Opens {@code version} of {@code store} read-only, or returns null when that version has no
   * snapshot of its own (Spark's {@code <version>.zip}, or {@code <version>_<id>.zip} under state
   * checkpoint format v2) or uses column families.
   */
  static RocksDbSnapshotReader open(
      RocksDbTaskScope scope,
      StateStoreId store,
      long version,
      scala.Option<String> checkpointId,
      Configuration hadoopConf,
      TaskTimer timer,
      Map<String, ListedFile> listed) {
    Path zip = zipOf(store, version, checkpointId);
    try {
      if (version <= 0
          || !(listed != null
              ? listed.containsKey(zip.getName())
              : zip.getFileSystem(hadoopConf).exists(zip))) {
        return null;
      }
    } catch (IOException e) {
      throw new UncheckedIOException("Cannot read " + zip + ": " + e.getMessage(), e);
    }
    File dir = scope.newLocalDir("snapshot");
    try {
      RocksDBCheckpointMetadata metadata =
          fetch(scope, store, version, checkpointId, dir, hadoopConf, listed);
      timer.lap("download");
      if (RocksDbCalls.hasColumnFamilies(metadata)) {
        RocksDbTaskScope.deleteRecursively(dir);
        return null; // the provider's own load knows the column families' key prefixes
      }
      return new RocksDbSnapshotReader(
          org.rocksdb.RocksDB.openReadOnly(scope.options(), dir.getAbsolutePath()), dir);
    } catch (RocksDBException e) {
      RocksDbTaskScope.deleteRecursively(dir);
      throw new IllegalStateException(
          "Cannot open version "
              + version
              + " of the RocksDB store "
              + "in "
              + dir
              + " read-only: "
              + e.getMessage(),
          e);
    } catch (RuntimeException e) {
      RocksDbTaskScope.deleteRecursively(dir);
      throw e;
    }
  }

  /** Spark's snapshot of a version: {@code <version>.zip}, or {@code <version>_<id>.zip}. */
  private static Path zipOf(StateStoreId store, long version, scala.Option<String> checkpointId) {
    return new Path(
        store.storeCheckpointLocation(),
        version + (checkpointId.isDefined() ? "_" + checkpointId.get() : "") + ".zip");
  }

  /**
   * Puts the files of {@code version} of {@code store} (a version with its own snapshot) into the
   * empty local folder {@code dir}: hard-linked on a local checkpoint ({@link #linkedOnLocalDisk}),
   * else fetched from the driver's listing {@code listed} (nullable) or downloaded by Spark's file
   * manager. Returns Spark's metadata of the version.
   */
  static RocksDBCheckpointMetadata fetch(
      RocksDbTaskScope scope,
      StateStoreId store,
      long version,
      scala.Option<String> checkpointId,
      File dir,
      Configuration hadoopConf,
      Map<String, ListedFile> listed) {
    Path zip = zipOf(store, version, checkpointId);
    // Spark's own load checks a zip against its checksum file only for a zip with a unique id
    // (Spark 4.2's unzipBatchZipFileFromDfs; 4.1's loadCheckpointFromDfs reads every zip, and
    // both read every SST file, without their checksum files): only then does its file manager
    // download, so that the check is made.
    RocksDBCheckpointMetadata metadata =
        StateCalls.fileChecksumEnabled(scope.conf()) && checkpointId.isDefined()
            ? null
            : fetched(zip, store, dir, hadoopConf, listed);
    if (metadata == null) {
      RocksDBFileManager files = scope.fileManager(store, hadoopConf);
      try {
        metadata = RocksDbCalls.loadCheckpointFromDfs(files, version, dir, checkpointId);
      } finally {
        StateCalls.close(files);
      }
    }
    return metadata;
  }

  /**
   * The zip unpacked into {@code dir} and each SST file placed there under its local name, without
   * Spark's file manager. On a local checkpoint each SST file is hard-linked, where Spark's file
   * manager copies every file and writes a checksum file beside each copy: a link allocates no new
   * file, and on this kind of disk a new file's inode search is much of the cost of a small store.
   * Elsewhere each file is fetched with one read (its length, and its etag where the store has one,
   * known: {@link ListedFile}) from the driver's listing ({@code listed}, on S3) or from the task's
   * own listing of the store's folder and its SST folder (two listings, on HDFS and the like),
   * where Spark's file manager asks for the zip's existence and each file's status first and copies
   * every file through a checksummed local file system. Each SST file's length is checked against
   * the one the version's metadata records. Null (and {@code dir} emptied) when the version also
   * has archived log files, or when the listing lacks one of its files: then Spark's file manager
   * does the download and reports what is missing.
   */
  private static RocksDBCheckpointMetadata fetched(
      Path zip,
      StateStoreId store,
      File dir,
      Configuration hadoopConf,
      Map<String, ListedFile> listed) {
    try {
      FileSystem fs = zip.getFileSystem(hadoopConf);
      LocalFileSystem local = fs instanceof LocalFileSystem l ? l : null;
      Map<String, ListedFile> files =
          local != null || listed != null
              ? listed
              : listedHere(fs, store.storeCheckpointLocation());
      if (local != null) {
        org.apache.spark.util.Utils.unzipFilesFromFile(local, zip, dir);
      } else if (files.containsKey(zip.getName())) {
        ZipFiles.unzip(WholeFileReads.open(fs, files.get(zip.getName()).status(fs, zip)), dir);
      } else {
        return null;
      }
      File metadataFile = new File(dir, "metadata");
      RocksDBCheckpointMetadata metadata = RocksDbMetadataFile.read(metadataFile);
      if (!metadata.logFiles().isEmpty()) {
        emptyFolder(dir);
        return null;
      }
      Path ssts = new Path(store.storeCheckpointLocation(), "SSTs");
      for (RocksDBSstFile sst : ScalaBridge.javaList(metadata.sstFiles())) {
        Path source = new Path(ssts, sst.dfsSstFileName());
        java.nio.file.Path target = new File(dir, sst.localFileName()).toPath();
        if (local != null) {
          RocksDbTaskScope.linkOrCopy(local.pathToFile(source).toPath(), target);
        } else {
          ListedFile file = files.get("SSTs/" + sst.dfsSstFileName());
          if (file == null) {
            emptyFolder(dir);
            return null;
          }
          try (InputStream in = WholeFileReads.open(fs, file.status(fs, source))) {
            Files.copy(in, target);
          }
        }
        if (Files.size(target) != sst.sizeBytes()) {
          throw new IllegalStateException(
              "The state file "
                  + source
                  + " holds "
                  + Files.size(target)
                  + " bytes, its version's metadata says "
                  + sst.sizeBytes());
        }
      }
      Files.delete(metadataFile.toPath());
      return metadata;
    } catch (IOException e) {
      throw new UncheckedIOException(
          "Cannot read " + zip + " and its SST files: " + e.getMessage(), e);
    }
  }

  /**
   * The files of a store's folder and of its {@code SSTs} folder (as {@code SSTs/<name>}), as this
   * task lists them: the keys {@link #fetched} looks files up by.
   */
  private static Map<String, ListedFile> listedHere(FileSystem fs, Path storeDir)
      throws IOException {
    Map<String, ListedFile> files = new HashMap<>();
    for (FileStatus file : fs.listStatus(storeDir)) {
      if (file.isFile()) {
        files.put(file.getPath().getName(), ListedFile.of(file));
      }
    }
    try {
      for (FileStatus file : fs.listStatus(new Path(storeDir, "SSTs"))) {
        files.put("SSTs/" + file.getPath().getName(), ListedFile.of(file));
      }
    } catch (FileNotFoundException noSstFiles) {
      // a version without SST files (an empty store)
    }
    return files;
  }

  private static void emptyFolder(File dir) {
    File[] children = dir.listFiles();
    if (children != null) {
      for (File child : children) {
        RocksDbTaskScope.deleteRecursively(child);
      }
    }
  }

  /** The native database, read-only. */
  org.rocksdb.RocksDB db() {
    return db;
  }

  @Override
  public void close() {
    db.close();
    RocksDbTaskScope.deleteRecursively(dir);
  }
}
