package io.stateshift.protocol;

import io.stateshift.StateShiftException;
import io.stateshift.StateShiftException.Reason;
import io.stateshift.checkpoint.OffsetLogEntry;
import io.stateshift.checkpoint.StateCheckpointIds;
import io.stateshift.checkpoint.StateLayout;
import io.stateshift.checkpoint.StatefulOperator;
import io.stateshift.checkpoint.StoreSpec;
import io.stateshift.checkpoint.spi.SparkLines;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;

/**
 * A change of a checkpoint's state store provider (HDFS-backed and RocksDB, both ways): the names
 * users give, what Spark allows, and what the user must set in the session afterwards.
 *
 * <p>Spark pins {@code spark.sql.streaming.stateStore.providerClass} in the offset log ({@code
 * OffsetSeqMetadata.relevantSQLConfs}) and, when a query restarts, overrides the session's value
 * with the logged one ({@code OffsetSeqMetadata.setSessionConf}, with a warning where they differ).
 * A migration therefore records the new provider in the offset log entry of its batch, and the
 * restarted query opens its stores with it whatever the session says. RocksDB's changelog
 * checkpointing is not pinned: the RocksDB state is written as a full snapshot, which the provider
 * loads with changelog checkpointing on or off, so the session decides it at every start.
 */
public final class ProviderMigration {
  /** Spark's setting that turns RocksDB's changelog checkpointing on. */
  public static final String CHANGELOG_CHECKPOINTING =
      "spark.sql.streaming.stateStore.rocksdb.changelogCheckpointing.enabled";

  static final String ROW_CHECKSUM = "spark.sql.streaming.stateStore.rowChecksum.enabled";

  private ProviderMigration() {}

  /**
   * The provider class a user's name stands for: {@code rocksdb} or {@code hdfs} (any case), or one
   * of the two class names.
   */
  public static String resolve(String name) {
    if (name == null || name.isBlank()) {
      throw new StateShiftException(
          Reason.INVALID_ARGUMENT, "No provider given: pass rocksdb or hdfs.");
    }
    String trimmed = name.trim();
    switch (trimmed.toLowerCase(Locale.ROOT)) {
      case "rocksdb":
        return StateLayout.ROCKSDB_PROVIDER;
      case "hdfs":
      case "hdfs-backed":
        return StateLayout.HDFS_PROVIDER;
      default:
        if (trimmed.equals(StateLayout.ROCKSDB_PROVIDER)
            || trimmed.equals(StateLayout.HDFS_PROVIDER)) {
          return trimmed;
        }
        throw new StateShiftException(
            Reason.INVALID_ARGUMENT,
            "Unknown state store provider '"
                + name
                + "': pass rocksdb or hdfs (stateshift moves state between Spark's RocksDB and "
                + "HDFS-backed state stores).");
    }
  }

  /** How users know a provider class: {@code RocksDB}, {@code HDFS-backed}, else the class. */
  public static String shortName(String providerClass) {
    if (StateLayout.ROCKSDB_PROVIDER.equals(providerClass)) {
      return "RocksDB";
    }
    if (StateLayout.HDFS_PROVIDER.equals(providerClass)) {
      return "HDFS-backed";
    }
    return providerClass;
  }

  /** The command-line name of a provider class: {@code rocksdb} or {@code hdfs}. */
  public static String optionName(String providerClass) {
    return StateLayout.ROCKSDB_PROVIDER.equals(providerClass) ? "rocksdb" : "hdfs";
  }

  /**
   * The state checkpoint format a user's number stands for: 1 or 2.
   *
   * @throws StateShiftException for any other number
   */
  public static int formatVersion(int version) {
    if (version != 1 && version != 2) {
      throw new StateShiftException(
          Reason.INVALID_ARGUMENT,
          "Unknown state checkpoint format version "
              + version
              + ": pass 1 or 2 (Spark's "
              + StateCheckpointIds.FORMAT_VERSION_CONF
              + ").");
    }
    return version;
  }

  /**
   * Refuses, before anything is written, a migration of this layout to provider {@code target} and
   * state checkpoint format {@code targetFormat} that is a no-op or that Spark could not run.
   */
  public static void check(StateLayout layout, String target, int targetFormat, String checkpoint) {
    int format = layout.checkpointFormatVersion();
    if (targetFormat == 2 && !SparkLines.get().checkpointFormatV2()) {
      throw new StateShiftException(
          Reason.UNSUPPORTED_CHECKPOINT,
          "Cannot migrate "
              + checkpoint
              + " to state checkpoint format v2: Spark "
              + SparkLines.get().sparkLine()
              + " has no format v2 ("
              + StateCheckpointIds.FORMAT_VERSION_CONF
              + "=2 came with Spark 4.0). The checkpoint was not changed; keep format v1, or "
              + "migrate once the query runs on Spark 4.0 or later.");
    }
    if (layout.provider().equals(target) && format == targetFormat) {
      throw new StateShiftException(
          Reason.SAME_PROVIDER,
          "The state of "
              + checkpoint
              + " is already in the "
              + shortName(target)
              + " state store with state checkpoint format v"
              + format
              + "; nothing to migrate. To change only the partition count, run "
              + "'stateshift repartition --checkpoint "
              + checkpoint
              + " --partitions <n>'.");
    }
    if (targetFormat == 2 && !target.equals(StateLayout.ROCKSDB_PROVIDER)) {
      throw new StateShiftException(
          Reason.UNSUPPORTED_CHECKPOINT,
          "Cannot migrate "
              + checkpoint
              + " to state checkpoint format v2 on the HDFS-backed state store: Spark supports "
              + "format v2 ("
              + StateCheckpointIds.FORMAT_VERSION_CONF
              + "=2) on RocksDB only. The checkpoint was not changed; migrate with "
              + "--provider rocksdb --format-version 2, or keep format v1.");
    }
    if (!target.equals(StateLayout.HDFS_PROVIDER)) {
      return;
    }
    List<String> needRocksDb = new ArrayList<>();
    for (StatefulOperator op : layout.operators()) {
      if (op.name().equals(StateLayout.TRANSFORM_WITH_STATE)) {
        needRocksDb.add("operator " + op.id() + " (transformWithState)");
      }
    }
    for (StoreSpec spec : layout.stores()) {
      if (spec.hasColumnFamilies() && spec.operatorName().equals(StateLayout.JOIN)) {
        String what = "operator " + spec.operatorId() + " (stream-stream join, state format 3)";
        if (!needRocksDb.contains(what)) {
          needRocksDb.add(what);
        }
      }
    }
    if (!needRocksDb.isEmpty()) {
      throw new StateShiftException(
          Reason.UNSUPPORTED_OPERATOR,
          "Cannot migrate "
              + checkpoint
              + " to the HDFS-backed state store: "
              + String.join(", ", needRocksDb)
              + " keeps its state in RocksDB column families, which Spark runs on RocksDB only. "
              + "The checkpoint was not changed; keep it on RocksDB (to change the partition "
              + "count, run 'stateshift repartition').");
    }
    if ("true".equals(layout.storeConf().get(ROW_CHECKSUM))) {
      throw new StateShiftException(
          Reason.UNSUPPORTED_CHECKPOINT,
          "Cannot migrate "
              + checkpoint
              + " to the HDFS-backed state store: its state carries row checksums ("
              + ROW_CHECKSUM
              + "=true), which stateshift does not write for the HDFS-backed store yet. The "
              + "checkpoint was not changed.");
    }
  }

  /**
   * What the user must know or set in the session to run the migrated query, one line each: the
   * provider comes from the offset log, for RocksDB changelog checkpointing is the session's, and
   * the state checkpoint format ({@code formatVersion}, 1 or 2; 0 when unknown) is the session's at
   * every start: Spark does not record it in the offset log.
   */
  public static List<String> sessionNotes(String target, int formatVersion) {
    List<String> notes = sessionNotes(target);
    if (formatVersion == 2) {
      notes.add(
          "Set "
              + StateCheckpointIds.FORMAT_VERSION_CONF
              + "=2 in the session at every start: the state is in state checkpoint format v2, "
              + "which Spark does not record in the checkpoint, and a start with format v1 fails.");
    } else if (formatVersion == 1) {
      notes.add(
          "Leave "
              + StateCheckpointIds.FORMAT_VERSION_CONF
              + " unset (or set it to 1) in the session at every start: the state is in state "
              + "checkpoint format v1, which Spark does not record in the checkpoint, and a start "
              + "with format v2 fails.");
    }
    return notes;
  }

  /**
   * What the user must know or set in the session to run the migrated query, one line each: the
   * provider comes from the offset log, and for RocksDB, changelog checkpointing is the session's.
   */
  public static List<String> sessionNotes(String target) {
    List<String> notes = new ArrayList<>();
    notes.add(
        "Nothing to set for the provider: the restarted query takes "
            + OffsetLogEntry.PROVIDER_CLASS
            + "="
            + target
            + " from the checkpoint's offset log, whatever its session sets (Spark logs a "
            + "warning where the session differs; set it there too to silence it).");
    if (target.equals(StateLayout.ROCKSDB_PROVIDER)) {
      notes.add(
          "Changelog checkpointing is the session's choice: the state was written as a full "
              + "RocksDB snapshot, which loads with it on or off; set "
              + CHANGELOG_CHECKPOINTING
              + "=true in the session to use it.");
    }
    return notes;
  }
}
