package io.stateshift.spark.state;

import io.stateshift.config.StateShiftConf;
import java.io.File;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.util.List;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.Path;
import org.apache.spark.sql.execution.streaming.state.RocksDBFileManager;
import org.apache.spark.sql.execution.streaming.state.RocksDBFileMapping;
import org.apache.spark.sql.execution.streaming.state.RocksDBSnapshotFile;
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
 * SST files), less the LOCK and IDENTITY files a checkpoint leaves out. Spark's own file manager
 * then uploads it as Spark's commit would: SST files under new unique names, the rest and Spark's
 * metadata (key count, empty column family mapping) in {@code <version>.zip}.
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
    return ENABLED && !storeConf.enableStateStoreCheckpointIds();
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
   * Uploads the closed RocksDB folder {@code dir} as {@code version} of {@code store} through
   * Spark's file manager, as Spark's commit would: SST files under new unique names, the rest and
   * Spark's metadata ({@code rows} keys, no column families) in {@code <version>.zip}.
   *
   * @param noSstFiles whether the folder holds no SST file (the store's folder is then created
   *     here: Spark's upload creates it with the first SST file)
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
    if (noSstFiles) {
      // Spark's upload creates the folder with the first SST file; an empty version has none
      Path storeDir = store.storeCheckpointLocation();
      try {
        storeDir.getFileSystem(hadoopConf).mkdirs(storeDir);
      } catch (IOException e) {
        throw new UncheckedIOException("Cannot create " + storeDir + ": " + e.getMessage(), e);
      }
    }
    RocksDBFileManager files = scope.fileManager(store, hadoopConf);
    try {
      scala.collection.Map<String, RocksDBSnapshotFile> mapping =
          new RocksDBFileMapping().createSnapshotFileMapping(files, dir, version)._2();
      files.saveCheckpointToDfs(
          dir,
          version,
          rows,
          0L,
          mapping,
          scala.Option.apply(ScalaBridge.emptyMap()),
          scala.Option.apply((Object) (short) 0),
          ScalaBridge.none(),
          scope.conf().verifyNonEmptyFilesInZip());
    } finally {
      files.close();
    }
  }
}
