package io.stateshift.spark.state;

import io.stateshift.checkpoint.PlacementCheck;
import io.stateshift.checkpoint.StoreSpec;
import org.apache.hadoop.conf.Configuration;

/**
 * What a file exchange's read side needs to split one old partition of a store into one staged file
 * per new partition that gets at least one key ({@link RocksDbSstExchange}, {@link
 * HdfsFileExchange}).
 *
 * @param placement the new partition of each key
 * @param check when not null, every key must sit in {@code oldPartition} under the old count
 * @param source the version read, as its checkpoint files, for errors that cannot name the file
 * @param firstTarget the exchange's number of the store's new partition 0 (targets are numbered
 *     over all stores)
 * @param exchangeDir where the staged files go
 * @param timer the read task's timer, lapped at each step
 * @param listedFiles the files of the old partition's folder (lengths, etags), by name, from the
 *     driver's listing of the operator's state where it made one (an object store: one flat listing
 *     instead of one per folder), so that the task lists nothing; null: the task lists
 * @param edit what an edit does to each entry, where the exchange applies one; else null
 */
record SplitTask(
    StoreSpec spec,
    int oldPartition,
    StateStores.KeyPlacement placement,
    PlacementCheck check,
    String source,
    int firstTarget,
    int newPartitions,
    String exchangeDir,
    Configuration hadoopConf,
    TaskTimer timer,
    java.util.Map<String, ListedFile> listedFiles,
    EntryEdit edit) {

  /** The same task, with the version read named as {@code source}. */
  SplitTask withSource(String source) {
    return new SplitTask(
        spec,
        oldPartition,
        placement,
        check,
        source,
        firstTarget,
        newPartitions,
        exchangeDir,
        hadoopConf,
        timer,
        listedFiles,
        edit);
  }

  /**
   * A new name stem for this split's staged files: unique per (store, old partition) and attempt.
   */
  String newFileStem() {
    return spec.slot() + "-" + oldPartition + "-" + java.util.UUID.randomUUID();
  }
}
