package io.stateshift.spark.state;

import io.stateshift.config.StateShiftConf;
import io.stateshift.spark.line.NewRocksDbFiles;
import io.stateshift.spark.line.RocksDbCalls;
import io.stateshift.spark.line.StateCalls;
import java.io.File;
import java.io.FilterOutputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.util.ArrayList;
import java.util.List;
import java.util.zip.CRC32C;
import java.util.zip.ZipEntry;
import java.util.zip.ZipOutputStream;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.LocalFileSystem;
import org.apache.hadoop.fs.Path;
import org.apache.spark.sql.execution.streaming.state.RocksDBFileManager;
import org.apache.spark.sql.execution.streaming.state.RocksDBImmutableFile;
import org.apache.spark.sql.execution.streaming.state.StateStoreConf;
import org.apache.spark.sql.execution.streaming.state.StateStoreId;
import org.rocksdb.IngestExternalFileOptions;
import org.rocksdb.RocksDBException;

/**
 * Commits one version of a new RocksDB-backed partition from prebuilt SST files, in Spark's
 * snapshot format, without loading the store.
 *
 * <p>Spark's own path for an empty store is: build a wrapper with three local folders, delete and
 * recreate its working folder, open a fresh native instance there, and on commit take a RocksDB
 * checkpoint (a second folder of links, a second manifest, synced) before its file manager uploads
 * that folder. Each step creates and syncs files that are thrown away, and for small partitions (a
 * join's four stores per partition) those fixed steps are most of the time. Here RocksDB opens a
 * fresh instance in one folder with Spark's options, ingests the files and closes; the closed
 * folder is already what a checkpoint holds (manifest, CURRENT, options, the empty write-ahead log,
 * SST files), less the LOCK and IDENTITY files a checkpoint leaves out (and on Spark 3.5, whose
 * RocksDB's checkpoints hold no empty write-ahead log, less that: {@link RocksDbCalls#newFiles}).
 * Spark's own file manager then uploads it as Spark's commit would: SST files under new unique
 * names, the rest and Spark's metadata (key count; on Spark 4, an empty column family mapping) in
 * {@code <version>.zip}.
 *
 * <p>Used when the new version needs no unique checkpoint id (state checkpoint format v1). With
 * changelog checkpointing on, Spark itself writes a snapshot, not a changelog, for a store it
 * loaded empty, which is what this writes too.
 */
final class RocksDbDirectCommit {
  /**
   * {@code --conf spark.stateshift.rocksdb.directCommit=false} commits through Spark's provider.
   */
  static final boolean ENABLED = StateShiftConf.ROCKSDB_DIRECT_COMMIT.inTask();

  private RocksDbDirectCommit() {}

  /** Whether {@link #commit} writes new versions of stores under this configuration. */
  static boolean applies(StateStoreConf storeConf) {
    return ENABLED && !RocksDbCalls.checkpointIdsEnabled(storeConf);
  }

  /**
   * Ingests {@code sstFiles} (local files of the scope's folder, consumed) into a fresh instance
   * and uploads it as {@code version} of {@code store}, recording {@code rows} keys.
   *
   * @param compact whether to merge the files into one first (several old partitions' files)
   */
  static void commit(
      RocksDbTaskScope scope,
      StateStoreId store,
      Configuration hadoopConf,
      long version,
      List<String> sstFiles,
      long rows,
      boolean compact,
      TaskTimer timer) {
    File dir = scope.newLocalDir("version-" + version);
    try {
      try (org.rocksdb.RocksDB db =
          org.rocksdb.RocksDB.open(scope.options(), dir.getAbsolutePath())) {
        timer.lap("open");
        if (!sstFiles.isEmpty()) {
          try (IngestExternalFileOptions options = new IngestExternalFileOptions()) {
            options.setMoveFiles(true);
            db.ingestExternalFile(sstFiles, options);
          }
          timer.lap("ingest");
          if (compact) {
            CompactionThreads.forEveryCore();
            db.compactRange();
            timer.lap("compact");
          }
        }
      } catch (RocksDBException e) {
        throw new IllegalStateException(
            "Cannot build version "
                + version
                + " of the new RocksDB "
                + "partition in "
                + dir
                + ": "
                + e.getMessage(),
            e);
      }
      upload(scope, store, hadoopConf, dir, version, rows, sstFiles.isEmpty());
      timer.lap("upload");
    } finally {
      RocksDbTaskScope.deleteRecursively(dir);
    }
  }

  /**
   * Uploads the closed RocksDB folder {@code dir} as {@code version} of {@code store} as Spark's
   * commit would ({@link #uploadDirectly} on a local checkpoint or S3, elsewhere through Spark's
   * file manager): SST files under new unique names, the rest and Spark's metadata ({@code rows}
   * keys, no column families) in {@code <version>.zip}.
   *
   * @param noSstFiles whether the folder holds no SST file (where Spark's file manager uploads, the
   *     store's folder is then created here: Spark's upload creates it with the first SST file)
   */
  static void upload(
      RocksDbTaskScope scope,
      StateStoreId store,
      Configuration hadoopConf,
      File dir,
      long version,
      long rows,
      boolean noSstFiles) {
    // What a RocksDB checkpoint leaves out, and Spark's zips therefore never hold.
    new File(dir, "LOCK").delete();
    new File(dir, "IDENTITY").delete();
    RocksDBFileManager files = scope.fileManager(store, hadoopConf);
    try {
      Path storeDir = store.storeCheckpointLocation();
      FileSystem fs = storeDir.getFileSystem(hadoopConf);
      if ("s3a".equals(fs.getScheme()) || fs instanceof LocalFileSystem) {
        uploadDirectly(
            fs, storeDir, RocksDbCalls.newFiles(files, dir, version), dir, version, rows, scope);
        return;
      }
      if (noSstFiles) {
        // Spark's upload creates the folder with the first SST file; an empty version has none
        fs.mkdirs(storeDir);
      }
      RocksDbCalls.saveNewCheckpoint(files, scope.conf(), dir, version, rows);
    } catch (IOException e) {
      throw new UncheckedIOException(
          "Cannot upload version " + version + " of " + store + ": " + e.getMessage(), e);
    } finally {
      StateCalls.close(files);
    }
  }

  /**
   * What Spark's {@code saveCheckpointToDfs} writes for a version none of whose files were uploaded
   * before: each SST (and archived log) file under the new unique name Spark's upload gives it,
   * then {@code <version>.zip} holding the other files and Spark's metadata (written by Spark's own
   * class), and where Spark's file manager checksums its files, {@code <version>.zip.crc}. On S3
   * each file is one PUT, where Spark's file manager probes each name before its PUT and writes the
   * zip through a stream that S3A probes first too. On a local checkpoint each SST file is
   * hard-linked (RocksDB never rewrites one), where Spark's file manager writes a copy and a
   * checksum file under a temporary name and renames both: a link allocates no new file, and a new
   * file's inode search is much of a small store's cost on this kind of disk (a copy where the link
   * cannot be made, another device). The names are the attempt's own (staged state, new unique SST
   * names), so a retried task only replaces what an earlier attempt of it wrote, and the zip is
   * written last: a version's zip never names a file not yet uploaded.
   */
  private static void uploadDirectly(
      FileSystem fs,
      Path storeDir,
      NewRocksDbFiles local,
      File dir,
      long version,
      long rows,
      RocksDbTaskScope scope)
      throws IOException {
    for (int i = 0; i < local.immutable().size(); i++) {
      File file = local.immutable().get(i);
      RocksDBImmutableFile immutable = local.uploads().get(i);
      String sub = immutable.dfsFileName().endsWith(".sst") ? "SSTs" : "logs";
      Path target = new Path(new Path(storeDir, sub), immutable.dfsFileName());
      long copied;
      if (fs instanceof LocalFileSystem localFs) {
        copied = linkOrCopy(file, localFs.pathToFile(target));
      } else {
        try (OutputStream out = HdfsFileExchange.SnapshotWriter.create(fs, target)) {
          copied = Files.copy(file.toPath(), out);
        }
      }
      if (copied != immutable.sizeBytes()) {
        throw new IllegalStateException(
            "Uploaded "
                + copied
                + " bytes of "
                + file
                + " to "
                + target
                + ", expected "
                + immutable.sizeBytes());
      }
    }
    File metadataFile = new File(dir, "metadata");
    RocksDbCalls.newMetadata(local.uploads(), rows).writeToFile(metadataFile);
    List<File> zipped = new ArrayList<>(local.others());
    zipped.add(metadataFile);
    boolean verifyNonEmpty = StateCalls.verifyNonEmptyFilesInZip(scope.conf());
    for (File file : zipped) {
      if (verifyNonEmpty && !file.getName().endsWith(".log") && file.length() == 0) {
        throw new IllegalStateException(
            "The file " + file.getName() + " for " + version + ".zip in " + storeDir + " is empty");
      }
    }
    Path zip = new Path(storeDir, version + ".zip");
    Crc32cOutputStream summed =
        new Crc32cOutputStream(HdfsFileExchange.SnapshotWriter.create(fs, zip));
    try (ZipOutputStream out = new ZipOutputStream(summed)) {
      for (File file : zipped) {
        out.putNextEntry(new ZipEntry(file.getName()));
        Files.copy(file.toPath(), out);
        out.closeEntry();
      }
    }
    if (StateCalls.fileChecksumEnabled(scope.conf())) {
      // Spark's file manager writes the zip with a checksum file beside it (Spark 4.1 by default,
      // whatever the checkpoint format; the SST files get none): the same file, after the zip, so
      // that a checksum file never describes a zip not yet written.
      byte[] json =
          StateCalls.checksumFileJson((int) summed.crc.getValue(), summed.bytes)
              .getBytes(StandardCharsets.UTF_8);
      try (OutputStream out =
          HdfsFileExchange.SnapshotWriter.create(fs, new Path(storeDir, zip.getName() + ".crc"))) {
        out.write(json);
      }
    }
  }

  /**
   * Passes bytes on, keeping their count and their CRC32C (the sum Spark's checksum files hold).
   */
  private static final class Crc32cOutputStream extends FilterOutputStream {
    final CRC32C crc = new CRC32C();
    long bytes;

    Crc32cOutputStream(OutputStream out) {
      super(out);
    }

    @Override
    public void write(int b) throws IOException {
      out.write(b);
      crc.update(b);
      bytes++;
    }

    @Override
    public void write(byte[] b, int off, int len) throws IOException {
      out.write(b, off, len);
      crc.update(b, off, len);
      bytes += len;
    }
  }

  /** Links {@code target} to {@code file} (a copy across devices); returns the bytes it holds. */
  private static long linkOrCopy(File file, File target) throws IOException {
    java.nio.file.Path to = target.toPath();
    Files.createDirectories(to.getParent());
    Files.deleteIfExists(to); // what an earlier attempt of this task left
    try {
      Files.createLink(to, file.toPath());
    } catch (IOException | UnsupportedOperationException e) {
      Files.copy(file.toPath(), to);
    }
    return Files.size(to);
  }
}
