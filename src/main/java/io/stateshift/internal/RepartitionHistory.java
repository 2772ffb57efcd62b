package io.stateshift.internal;

import com.fasterxml.jackson.databind.ObjectMapper;

/**
 * Completed repartitions, one JSON file each under {@code _stateshift/history/}: what rollback and
 * verify need (counts before, batch ids, where dropped partitions were moved).
 */
final class RepartitionHistory {
  private static final ObjectMapper JSON = new ObjectMapper();

  private RepartitionHistory() {}

  static void record(CheckpointFiles files, RepartitionJournal journal) {
    try {
      files.replace(files.path(RepartitionJournal.DIR + "/history/" + journal.newBatch() + "-"
          + journal.attemptId() + ".json"), JSON.writeValueAsString(journal));
    } catch (com.fasterxml.jackson.core.JsonProcessingException e) {
      throw new IllegalStateException(e);
    }
  }
}
