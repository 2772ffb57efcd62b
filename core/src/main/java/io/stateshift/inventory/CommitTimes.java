package io.stateshift.inventory;

import io.stateshift.checkpoint.CheckpointFiles;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import org.apache.hadoop.fs.FileStatus;

/**
 * When a stream ran its batches, from the modification times of its retained offset and commit log
 * files: Spark writes {@code offsets/N} when it plans batch N and {@code commits/N} when the batch
 * is done, so the time between the two is the batch's run and the time between batches is idle. A
 * checkpoint copied file by file carries the copy's times, not the stream's.
 *
 * @param batches committed batches retained in the commit log
 * @param firstMs when the first of them was planned (its offset file, else its commit)
 * @param lastMs when the last of them was committed; null without committed batches
 * @param batchesPerHour batches per hour between the two (one less than the batches, over the time
 *     from the first's start to the last's end); null with fewer than two batches
 * @param busyShare the share of that time spent between a batch's offset and commit files; null
 *     with fewer than two batches
 * @param medianBatchMs the median time from a batch's offset file to its commit file
 */
public record CommitTimes(
    int batches,
    Long firstMs,
    Long lastMs,
    Double batchesPerHour,
    Double busyShare,
    Long medianBatchMs) {

  /** Reads both logs' listings (no file is opened). */
  public static CommitTimes of(CheckpointFiles files) {
    Map<Long, Long> planned = times(files, "offsets");
    TreeMap<Long, Long> committed = times(files, "commits");
    if (committed.isEmpty()) {
      return new CommitTimes(0, null, null, null, null, null);
    }
    long first = planned.getOrDefault(committed.firstKey(), committed.firstEntry().getValue());
    long last = committed.lastEntry().getValue();
    List<Long> runs = new ArrayList<>();
    long busy = 0;
    for (Map.Entry<Long, Long> c : committed.entrySet()) {
      Long start = planned.get(c.getKey());
      if (start != null) {
        long run = Math.max(0, c.getValue() - start);
        runs.add(run);
        busy += run;
      }
    }
    runs.sort(Long::compare);
    Long median = runs.isEmpty() ? null : runs.get(runs.size() / 2);
    long span = last - first;
    if (committed.size() < 2 || span <= 0) {
      return new CommitTimes(committed.size(), first, last, null, null, median);
    }
    double perHour = (committed.size() - 1) * 3_600_000.0 / span;
    double busyShare = Math.min(1.0, busy / (double) span);
    return new CommitTimes(committed.size(), first, last, perHour, busyShare, median);
  }

  /** The idle share: 1 - busy share; null when the busy share is unknown. */
  public Double idleShare() {
    return busyShare == null ? null : 1.0 - busyShare;
  }

  private static TreeMap<Long, Long> times(CheckpointFiles files, String log) {
    TreeMap<Long, Long> out = new TreeMap<>();
    for (FileStatus status : files.list(files.path(log))) {
      String name = status.getPath().getName();
      if (status.isFile() && name.matches("\\d+")) {
        out.put(Long.parseLong(name), status.getModificationTime());
      }
    }
    return out;
  }
}
