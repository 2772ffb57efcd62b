package io.stateshift.protocol;

import io.stateshift.checkpoint.CheckpointFiles;
import java.util.Optional;
import org.apache.hadoop.fs.Path;

/**
 * The file sink of the query that runs on a checkpoint, as a query started with
 * StateShiftExtensions records it ({@code _stateshift/file-sink}, the sink log's location): the
 * checkpoint itself does not say where its query writes, and a repartition must give that log an
 * entry for its batch.
 */
public final class FileSinkRecord {
  private FileSinkRecord() {}

  private static Path path(CheckpointFiles files) {
    return files.path(RepartitionJournal.DIR + "/file-sink");
  }

  public static Optional<String> read(CheckpointFiles files) {
    Path path = path(files);
    if (!files.exists(path)) {
      return Optional.empty();
    }
    String text = files.readText(path).trim();
    return text.isEmpty() ? Optional.empty() : Optional.of(text);
  }

  /** Records the location unless it is on record already (a query restarts often). */
  public static void write(CheckpointFiles files, String sinkLogLocation) {
    if (read(files).filter(sinkLogLocation::equals).isPresent()) {
      return;
    }
    files.replace(path(files), sinkLogLocation);
  }
}
