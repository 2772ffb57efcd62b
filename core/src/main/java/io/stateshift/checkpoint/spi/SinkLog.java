package io.stateshift.checkpoint.spi;

import java.util.List;
import java.util.Optional;

/**
 * The log of a file sink ({@code <output>/_spark_metadata}): one entry per batch id, which Spark
 * reads to list the output. A repartition batch writes no output, so it gets an empty entry.
 */
public interface SinkLog {
  /** The log's folder under a file sink's output. */
  String METADATA_DIR = "_spark_metadata";

  /** The sink's output folder. */
  String location();

  Optional<Long> latestBatch();

  boolean hasEntry(long batchId);

  /** How many output files the entry of a batch lists. */
  int filesIn(long batchId);

  /** Writes an entry that lists no files, atomically, as the log writes its own. */
  void addEmpty(long batchId);

  /** Removes the entry of a batch (a rolled back repartition batch). */
  void remove(long batchId);

  /** Batch ids up to the latest with no entry. */
  List<Long> missingEntries();
}
