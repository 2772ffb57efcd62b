package io.stateshift.spark.state;

import io.stateshift.checkpoint.spi.Redistribution.Outcome;
import org.apache.spark.sql.RuntimeConfig;
import org.apache.spark.sql.SparkSession;

/**
 * One way of moving a repartition's state from the old partitions to the new ones: the RocksDB file
 * exchange ({@link RocksDbSstExchange}), the HDFS file exchange ({@link HdfsFileExchange}), or
 * Spark's shuffle (SST ingestion, RocksDB puts, or HDFS-backed snapshots). {@link
 * StateRedistributionJob} runs the first that applies to its stores, in that order; the file
 * exchanges split and write partitions through the job's one fan-out of read and write tasks.
 */
interface StateExchange {

  /** Whether this way applies to the job's stores under the session's conf. */
  boolean applies(RuntimeConfig conf);

  /**
   * The way new partitions are written, as progress output and the result report name it (and why,
   * when it is the slower one).
   */
  String description();

  /** Moves the state: reads every old partition and writes every new one into the staging area. */
  Outcome run(SparkSession spark);
}
