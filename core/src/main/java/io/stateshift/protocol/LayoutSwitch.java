package io.stateshift.protocol;

import io.stateshift.checkpoint.Checkpoint;
import io.stateshift.checkpoint.CheckpointFiles;
import io.stateshift.checkpoint.OffsetLogEntry;
import io.stateshift.checkpoint.ParallelSteps;
import io.stateshift.checkpoint.PreparedManifest;
import io.stateshift.checkpoint.StatefulOperator;
import io.stateshift.checkpoint.spi.SparkLines;
import io.stateshift.config.StateShiftConf;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.function.Consumer;
import org.apache.hadoop.fs.Path;
import org.apache.spark.sql.SparkSession;

/**
 * Phases SWITCHING and FINALIZING of a change, both idempotent so that an interrupted attempt can
 * be finished from its journal: the new batch's offsets, the staged files moved into place (the
 * files they replace aside first), the operator metadata, the sinks' entries and the commit; then
 * the old metadata rewritten, the dropped partitions and old format versions retired into the
 * attempt's folder, the history written and the journal deleted.
 */
final class LayoutSwitch {
  private final SparkSession spark;
  private final CheckpointFiles files;
  private final Consumer<String> progress;

  LayoutSwitch(SparkSession spark, CheckpointFiles files, Consumer<String> progress) {
    this.spark = spark;
    this.files = files;
    this.progress = progress;
  }

  void switchLayout(Checkpoint checkpoint, RepartitionJournal journal) {
    Path offsets = files.path("offsets/" + journal.newBatch());
    if (!files.exists(offsets)) {
      OffsetLogEntry entry =
          checkpoint.offsets(journal.baseBatch()).withShufflePartitions(journal.toPartitions());
      if (journal.changesProvider()) {
        entry = entry.withProviderClass(journal.toProvider());
      }
      files.writeNew(offsets, entry.toText());
    }
    FailPoints.reached("offsets");
    retireReplacedFiles(journal);
    FailPoints.reached(FailPoints.REPLACED);
    publishStagedFiles(journal);
    FailPoints.reached("published");
    for (StatefulOperator op : checkpoint.operators()) {
      Path v2 = files.path("state/" + op.id() + "/_metadata/v2/" + journal.newBatch());
      Optional<Path> latest = checkpoint.latestV2Metadata(op.id());
      if (latest.isPresent() && !files.exists(v2)) {
        files.writeNew(v2, checkpoint.metadataWithPartitions(latest.get(), journal.toPartitions()));
      }
    }
    // The batch is the sink's too: readers and compaction need an entry for every batch id.
    for (String sinkLog : journal.fileSinkLogs()) {
      SparkLines.get().sinkLog(spark, sinkLog, files.conf()).addEmpty(journal.newBatch());
      FailPoints.reached(FailPoints.SINK_LOG);
    }
    Path commit = files.path("commits/" + journal.newBatch());
    if (!files.exists(commit)) {
      files.writeNew(
          commit,
          journal.newCommit() != null
              ? journal.newCommit()
              : checkpoint.commitText(journal.baseBatch()));
    }
    FailPoints.reached("commit");
  }

  /** The checkpoint-relative paths the switch will create, from the staged files. */
  List<String> stagedFiles(RepartitionJournal journal) {
    Path staged = journal.stagedDir(files);
    String prefix = files.relativize(staged) + "/";
    return files.listFilesRecursively(staged).stream()
        .map(p -> files.relativize(p).substring(prefix.length()))
        .sorted()
        .toList();
  }

  /** Operator metadata v1 texts before the repartition, by operator id. */
  Map<String, String> v1Metadata(Checkpoint checkpoint) {
    Map<String, String> out = new LinkedHashMap<>();
    for (StatefulOperator op : checkpoint.operators()) {
      Path v1 = files.path("state/" + op.id() + "/_metadata/metadata");
      if (files.exists(v1)) {
        out.put(Long.toString(op.id()), files.readText(v1));
      }
    }
    return out;
  }

  /**
   * The old layout's files whose names new files take: from a prepared layout each new partition's
   * base is version N+1, where the old partition may have its own snapshot of N+1 (and Spark's
   * checksum file beside it). Only files of that version can collide (not the tail's log of N+2,
   * which the old partition never wrote), and only when named without a checkpoint id; SST file
   * names are unique.
   */
  List<String> replacedFiles(List<String> newFiles, long baseVersion) {
    List<String> candidates = new ArrayList<>();
    for (String relative : newFiles) {
      String name = relative.substring(relative.lastIndexOf('/') + 1);
      if (!relative.contains("/SSTs/")
          && (name.startsWith(baseVersion + ".") || name.startsWith("." + baseVersion + "."))) {
        candidates.add(relative);
        candidates.add(relative + ".crc");
      }
    }
    List<String> replaced = java.util.Collections.synchronizedList(new ArrayList<>());
    ParallelSteps.run(
        candidates,
        driverIoThreads(),
        "replaced",
        relative -> {
          if (files.exists(files.path(relative))) {
            replaced.add(relative);
          }
        });
    return replaced.stream().sorted().toList();
  }

  /**
   * For an evolution: the schema file the new one replaces; it moves aside at the switch and comes
   * back with a rollback.
   */
  List<String> replacedSchemaFiles(List<String> newFiles) {
    // a checksum file system (local disk) moves Spark's checksum file with the schema file
    return newFiles.stream()
        .filter(relative -> relative.endsWith("/_metadata/schema"))
        .filter(relative -> files.exists(files.path(relative)))
        .toList();
  }

  /**
   * Moves each replaced file into the attempt's retired folder, before the new file of that name
   * moves in. Idempotent: a file whose new one is in place already (its staged copy gone) stays,
   * and a move a crash interrupted is finished ({@link CheckpointFiles#rename}).
   */
  private void retireReplacedFiles(RepartitionJournal journal) {
    Path staged = journal.stagedDir(files);
    ParallelSteps.run(
        journal.replacedFiles(),
        driverIoThreads(),
        "retire",
        relative -> {
          if (journal.newFiles().contains(relative) && !files.exists(new Path(staged, relative))) {
            return; // the new file is in place
          }
          Path live = files.path(relative);
          if (files.exists(live)) {
            files.rename(live, new Path(journal.retiredDir(files), relative), false);
          }
        });
  }

  private void publishStagedFiles(RepartitionJournal journal) {
    Path staged = journal.stagedDir(files);
    String stagedPrefix = files.relativize(staged) + "/";
    CheckpointFiles.Mover mover = files.mover(staged, files.path("state"));
    List<Path> pending = mover.files();
    progress.accept("switching layout: moving " + pending.size() + " state files into place");
    // RocksDB's SST files first, the version files that name them last: two groups, in turn.
    for (boolean sstFiles : new boolean[] {true, false}) {
      List<Path> group =
          pending.stream()
              .filter(p -> p.getParent().getName().equals("SSTs") == sstFiles)
              .sorted(Comparator.comparing(Path::toString))
              .toList();
      ParallelSteps.run(
          group,
          driverIoThreads(),
          "switch",
          from -> {
            String relative = files.relativize(from).substring(stagedPrefix.length());
            mover.move(from, files.path(relative));
            FailPoints.reached("publish-first-file");
          });
    }
    mover.deleteMovedSources();
  }

  /** Driver threads for the switch's and the tidying's independent file steps. */
  private int driverIoThreads() {
    return Math.max(1, StateShiftConf.DRIVER_IO_THREADS.from(spark));
  }

  /** {@code details}: what this run knows of the attempt; null when it finishes another's. */
  void finalizeLayout(
      Checkpoint checkpoint, RepartitionJournal journal, HistoryLog.Details details) {
    for (StatefulOperator op : checkpoint.operators()) {
      Path v1 = files.path("state/" + op.id() + "/_metadata/metadata");
      String before = journal.replacedMetadata().get(Long.toString(op.id()));
      if (files.exists(v1)) {
        files.replace(v1, checkpoint.metadataWithPartitions(v1, journal.toPartitions()));
      } else if (before != null) {
        // An overwrite that is not atomic (delete, then rename) failed in between: the journal
        // kept the text, so the file is written again rather than lost.
        files.replace(v1, checkpoint.metadataWithPartitions(before, journal.toPartitions(), v1));
      }
      FailPoints.reached("metadata-v1");
      Path retired = new Path(journal.retiredDir(files), "state/" + op.id());
      CheckpointFiles.Mover mover = files.mover(files.path("state/" + op.id()), retired);
      ParallelSteps.run(
          java.util.stream.IntStream.range(journal.toPartitions(), journal.fromPartitions())
              .boxed()
              .toList(),
          driverIoThreads(),
          "retire",
          p -> {
            if (mover.moveTree(
                files.path("state/" + op.id() + "/" + p), new Path(retired, Integer.toString(p)))) {
              FailPoints.reached("retired");
            }
          });
      mover.deleteMovedSources();
      if (journal.changesFormat()) {
        retireOldFormatVersions(op.id(), journal);
      }
    }
    files.deleteQuietly(journal.stagedDir(files));
    // a prepared layout is of the old count: stale from here on
    files.deleteQuietly(files.path(PreparedManifest.DIR));
    deleteIfEmpty(files, RepartitionJournal.attemptDir(files, journal.attemptId()));
    deleteIfEmpty(files, files.path(RepartitionJournal.DIR + "/attempts"));
    RepartitionHistory.record(files, journal);
    HistoryLog.completed(files, journal, details, HistoryLog.Actor.of(spark));
    FailPoints.reached("history");
    RepartitionJournal.delete(files);
  }

  /**
   * After a change of state checkpoint format, the version files of the old format leave the
   * partition folders the change kept (into the attempt's retired folder, from which a rollback
   * puts them back): Spark lists a folder's versions by their names and cannot read a folder that
   * mixes {@code <version>.zip} with {@code <version>_<id>.zip}. The SST files they name stay.
   */
  private void retireOldFormatVersions(long operatorId, RepartitionJournal journal) {
    java.util.regex.Pattern old =
        journal.fromFormatVersion() == 2 ? OLD_FORMAT_V2_VERSION : OLD_FORMAT_V1_VERSION;
    int kept = Math.min(journal.fromPartitions(), journal.toPartitions());
    for (int p = 0; p < kept; p++) {
      String folder = "state/" + operatorId + "/" + p;
      Path live = files.path(folder);
      if (!files.exists(live)) {
        continue;
      }
      String prefix = files.relativize(live) + "/";
      List<Path> versions =
          files.listFilesRecursively(live).stream()
              .filter(
                  file ->
                      !file.getParent().getName().equals("SSTs")
                          && old.matcher(file.getName()).matches())
              .toList();
      ParallelSteps.run(
          versions,
          driverIoThreads(),
          "retire",
          file -> {
            String relative = files.relativize(file).substring(prefix.length());
            files.rename(file, new Path(journal.retiredDir(files), folder + "/" + relative), false);
            FailPoints.reached(FailPoints.RETIRED_FORMAT);
          });
    }
  }

  /**
   * A RocksDB version file of state checkpoint format v1, {@code <version>.zip|changelog}, or
   * Spark's checksum of one.
   */
  private static final java.util.regex.Pattern OLD_FORMAT_V1_VERSION =
      java.util.regex.Pattern.compile("\\d+\\.(zip|changelog)(\\.crc)?");

  /** The same of format v2, named by unique id: {@code <version>_<id>.zip|changelog}. */
  private static final java.util.regex.Pattern OLD_FORMAT_V2_VERSION =
      java.util.regex.Pattern.compile("\\d+_[^./]+\\.(zip|changelog)(\\.crc)?");

  static void deleteIfEmpty(CheckpointFiles files, Path dir) {
    if (files.exists(dir) && files.list(dir).isEmpty()) {
      files.deleteQuietly(dir);
    }
  }
}
