package io.stateshift.protocol;

import io.stateshift.checkpoint.Checkpoint;
import io.stateshift.checkpoint.CheckpointFiles;
import io.stateshift.checkpoint.OffsetLogEntry;
import io.stateshift.checkpoint.SessionSettings;
import io.stateshift.checkpoint.spi.SinkLog;
import io.stateshift.checkpoint.spi.SparkLines;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;

/**
 * Batches of a checkpoint that its file sink's log lacks. A repartition batch (ours or Spark's
 * built-in runner's) is a copy of the batch before it with another layout: it read no input and
 * wrote no output, so an empty entry is its true record, and one that is missing can be filled. Any
 * other missing entry stands for output the log has lost, which nothing can fill.
 */
public final class SinkLogGaps {
  private SinkLogGaps() {}

  /** A batch id missing from the sink's log; {@code fillable} when it wrote no output. */
  public record Gap(long batchId, boolean fillable, String explanation) {}

  /**
   * Missing entries between the log's last compaction and its latest entry (they already break
   * readers), and committed batches after its latest entry that the sink will never see (they break
   * compaction and readers as soon as the sink writes its next batch).
   */
  public static List<Gap> find(Checkpoint checkpoint, SinkLog log) {
    List<Gap> gaps = new ArrayList<>();
    for (long id : log.missingEntries()) {
      gaps.add(classify(checkpoint, id, true));
    }
    // An empty log (a sink that has written nothing yet) starts wherever its first batch is.
    long latest = log.latestBatch().orElse(Long.MAX_VALUE - 1);
    for (long id = latest + 1; id <= checkpoint.lastCommittedBatch(); id++) {
      gaps.add(classify(checkpoint, id, false));
    }
    return gaps;
  }

  /** The logs of the file sinks given (output folders or log folders) and the one on record. */
  public static List<SinkLog> logs(
      org.apache.spark.sql.SparkSession spark, CheckpointFiles files, List<String> given) {
    java.util.Map<String, SinkLog> logs = new java.util.LinkedHashMap<>();
    List<String> locations = new ArrayList<>(given);
    FileSinkRecord.read(files).ifPresent(locations::add);
    for (String location : locations) {
      SinkLog log = SparkLines.get().sinkLog(spark, location, files.conf());
      logs.putIfAbsent(log.location(), log);
    }
    return List.copyOf(logs.values());
  }

  /** Writes an empty entry for every fillable gap of one file sink's log. */
  public static io.stateshift.SinkLogRepair repair(
      org.apache.spark.sql.SparkSession spark, String checkpointLocation, String fileSinkOutput) {
    CheckpointFiles files =
        CheckpointFiles.at(checkpointLocation, SessionSettings.hadoopConf(spark));
    Checkpoint checkpoint = Checkpoint.load(files);
    SinkLog log = SparkLines.get().sinkLog(spark, fileSinkOutput, files.conf());
    List<Long> filled = new ArrayList<>();
    List<String> unfillable = new ArrayList<>();
    for (Gap gap : find(checkpoint, log)) {
      if (gap.fillable()) {
        log.addEmpty(gap.batchId());
        filled.add(gap.batchId());
      } else {
        unfillable.add(gap.explanation());
      }
    }
    return new io.stateshift.SinkLogRepair(log.location(), filled, unfillable);
  }

  private static Gap classify(Checkpoint checkpoint, long id, boolean breaksReadersNow) {
    String effect =
        breaksReadersNow
            ? "every batch read of the output and the sink's next compaction fail on it"
            : "the sink's next compaction and reads after its next batch will fail on it";
    if (isRepartitionBatch(checkpoint, id)) {
      return new Gap(
          id,
          true,
          "batch "
              + id
              + " is a repartition batch (it read no input) and "
              + "has no entry in the file sink's log; "
              + effect
              + ". An empty entry is its true "
              + "record: 'stateshift repair-sink-log' writes it, and a restart with "
              + "StateShiftExtensions does so itself");
    }
    return new Gap(
        id,
        false,
        "batch "
            + id
            + " read input but has no entry in the file sink's "
            + "log; "
            + effect
            + ". Its output is not recorded and cannot be restored from the "
            + "checkpoint: restore the sink's _spark_metadata folder from a backup");
  }

  /**
   * A committed batch that repeats the batch before it (same source offsets, watermark and batch
   * time): a repartition batch, which runs no query plan.
   */
  static boolean isRepartitionBatch(Checkpoint checkpoint, long id) {
    if (id <= 0 || id > checkpoint.lastCommittedBatch()) {
      return false;
    }
    Optional<OffsetLogEntry> entry = offsets(checkpoint, id);
    Optional<OffsetLogEntry> before = offsets(checkpoint, id - 1);
    return entry.isPresent()
        && before.isPresent()
        && entry.get().sourceOffsets().equals(before.get().sourceOffsets())
        && entry.get().batchWatermarkMs() == before.get().batchWatermarkMs()
        && entry.get().batchTimestampMs() == before.get().batchTimestampMs();
  }

  private static Optional<OffsetLogEntry> offsets(Checkpoint checkpoint, long id) {
    try {
      return Optional.of(checkpoint.offsets(id));
    } catch (RuntimeException purged) {
      return Optional.empty();
    }
  }
}
