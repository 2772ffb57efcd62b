package io.stateshift.spark.state;

import io.stateshift.checkpoint.StoreSpec;
import io.stateshift.spark.line.RocksDbCalls;
import io.stateshift.spark.line.StateCalls;
import java.io.File;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.util.UUID;
import org.apache.hadoop.conf.Configuration;
import org.apache.spark.sql.execution.streaming.state.RocksDB;
import org.apache.spark.sql.execution.streaming.state.RocksDBConf;
import org.apache.spark.sql.execution.streaming.state.RocksDBFileManager;
import org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider;
import org.apache.spark.sql.execution.streaming.state.StateStoreConf;
import org.apache.spark.sql.execution.streaming.state.StateStoreId;
import org.apache.spark.sql.execution.streaming.state.StateStoreProvider;
import org.rocksdb.Options;

/**
 * What the RocksDB stores of one task of the SST exchange share: one set of Spark's own RocksDB
 * options and one local folder.
 *
 * <p>Spark's provider builds a RocksDB wrapper per store, with its own options and three local
 * folders, even for a store that is read once or written once. All stores of a query share one
 * configuration, so one wrapper, built by Spark's provider and never loaded, gives every store of
 * the task the options Spark would use (table format, compression, bloom filter, merge operator);
 * each store then gets Spark's own file manager for its folder in the checkpoint and one local
 * folder of its own. RocksDB copies the options when it opens a database or starts an SST file, so
 * threads may share them; every database opened with them is closed before {@link #close}.
 */
final class RocksDbTaskScope implements AutoCloseable {
  private final StateStoreProvider template;
  private final RocksDB spark;

  private RocksDbTaskScope(StateStoreProvider template, RocksDB spark) {
    this.template = template;
    this.spark = spark;
    // RocksDB opens every SST file of a database when it opens it, by default on 16 new threads:
    // for the few files of a store partition, starting and joining them costs about 10 ms per
    // open, more than opening the files one after another.
    RocksDbCalls.rocksDbOptions(spark).setMaxFileOpeningThreads(1);
    // The statistics RocksDB gathers when it opens a database for writing (each SST file's
    // properties read, for compaction's size estimates) are of no use to a store of one task.
    RocksDbCalls.rocksDbOptions(spark).setSkipStatsUpdateOnDbOpen(true);
  }

  /** The scope for stores like {@code spec} under {@code stateRoot}, or null if not RocksDB. */
  static RocksDbTaskScope open(
      String stateRoot, StoreSpec spec, StateStoreConf storeConf, Configuration hadoopConf) {
    StateStoreProvider provider = StateStores.open(stateRoot, spec, 0, storeConf, hadoopConf);
    if (!(provider instanceof RocksDBStateStoreProvider rocksDb)) {
      provider.close();
      return null;
    }
    return new RocksDbTaskScope(provider, rocksDb.rocksDB());
  }

  /** Spark's RocksDB options for these stores. */
  Options options() {
    return RocksDbCalls.rocksDbOptions(spark);
  }

  RocksDBConf conf() {
    return spark.conf();
  }

  /** Spark's file manager for one store partition's folder in the checkpoint; close it after. */
  RocksDBFileManager fileManager(StateStoreId store, Configuration hadoopConf) {
    // Its own local folder is only used to delete old versions, which this never does.
    return StateCalls.fileManager(
        store.storeCheckpointLocation().toString(),
        new File(localRootDir(), "unused-" + UUID.randomUUID()),
        hadoopConf,
        spark.conf(),
        store.toString());
  }

  /** A new, empty local folder, removed with the scope if not before. */
  File newLocalDir(String prefix) {
    File dir = new File(localRootDir(), prefix + "-" + UUID.randomUUID());
    if (!dir.mkdirs()) {
      throw new UncheckedIOException(new IOException("Cannot create the local folder " + dir));
    }
    return dir;
  }

  /** The scope's local folder, for files whose unique names need no folder of their own. */
  File localRootDir() {
    return StateCalls.localRootDir(spark);
  }

  /**
   * {@code target} as a hard link to {@code source} (no new file to allocate, nothing copied), or a
   * copy where the two are on different disks or links are unsupported.
   */
  static void linkOrCopy(java.nio.file.Path source, java.nio.file.Path target) throws IOException {
    try {
      java.nio.file.Files.createLink(target, source);
    } catch (IOException | UnsupportedOperationException e) {
      java.nio.file.Files.copy(source, target);
    }
  }

  static void deleteRecursively(File file) {
    File[] children = file.listFiles();
    if (children != null) {
      for (File child : children) {
        deleteRecursively(child);
      }
    }
    file.delete();
  }

  /** Closes Spark's wrapper, which removes the local folder. */
  @Override
  public void close() {
    template.close();
  }
}
