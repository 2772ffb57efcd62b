package io.stateshift.spark.state;

import io.stateshift.checkpoint.spi.Redistribution.Outcome;
import org.apache.spark.sql.RuntimeConfig;
import org.apache.spark.sql.SparkSession;

/**
 * One way of moving a repartition's state from the old partitions to the new ones: the RocksDB file
 * exchange ({@link RocksDbSplitInPlace}, {@link RocksDbFiles}), the HDFS file exchanges ({@link
 * HdfsFiles}, {@link HdfsToRocksDbFiles}), the in-place rewrite of an edit ({@link
 * InPlaceRewrite}), or Spark's shuffle ({@link ShuffleExchange}: SST ingestion, RocksDB puts, or
 * HDFS-backed snapshots). {@link StateRedistributionJob} runs the first of its list that applies,
 * in that order; the file exchanges split and write partitions through one fan-out of read and
 * write tasks ({@link FileExchange}).
 */
interface StateExchange {

  /** Whether this way applies to the job's stores under the session's conf. */
  boolean applies(RuntimeConfig conf);

  /**
   * The way new partitions are written, as progress output and the result report name it (and why,
   * when it is the slower one).
   */
  String description();

  /**
   * Whether the session asks, under {@code key} (a way's conf: {@code files} or {@code in-place} by
   * default), for the shuffle instead of that way.
   */
  static boolean shuffleAsked(RuntimeConfig conf, String key, String otherwise) {
    return "shuffle".equals(conf.get(key, otherwise));
  }

  /** Moves the state: reads every old partition and writes every new one into the staging area. */
  Outcome run(SparkSession spark);
}
