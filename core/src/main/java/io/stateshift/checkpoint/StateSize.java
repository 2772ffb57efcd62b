package io.stateshift.checkpoint;

/**
 * The size of a checkpoint's state as the validation listed it: every file in the partition folders
 * of every store (each version kept, not only the last), and for RocksDB the SST and log files of
 * the folders the last version's zip names. Taken from the listings the validation makes anyway: no
 * extra request on an object store.
 *
 * @param replayBytes bytes of the RocksDB changelog files a load of the last version replays: those
 *     after each partition's newest snapshot at or below it (0 for the HDFS-backed store)
 */
public record StateSize(long bytes, long files, long replayBytes) {}
