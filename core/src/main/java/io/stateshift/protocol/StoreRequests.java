package io.stateshift.protocol;

import java.util.Map;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.statistics.IOStatistics;
import org.apache.hadoop.fs.statistics.IOStatisticsSupport;

/**
 * The requests a file system instance has sent to its store so far, where it counts them: S3A
 * counts every HTTP request its AWS SDK client makes as {@code store_io_request} in its
 * IOStatistics (retries counted apart). The count is the instance's, which the driver and the tasks
 * of a local master share (Hadoop caches one instance per file system and user).
 */
final class StoreRequests {
  static final String COUNTER = "store_io_request";

  private StoreRequests() {}

  /** The count so far, or -1 where the file system does not count its requests. */
  static long count(FileSystem fs) {
    try {
      IOStatistics statistics = IOStatisticsSupport.retrieveIOStatistics(fs);
      if (statistics == null) {
        return -1;
      }
      Map<String, Long> counters = statistics.counters();
      Long requests = counters.get(COUNTER);
      return requests == null ? -1 : requests;
    } catch (RuntimeException | LinkageError e) {
      return -1; // a file system without IOStatistics
    }
  }
}
