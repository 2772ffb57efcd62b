package io.stateshift.spark.state;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.stateshift.StateShiftException;
import io.stateshift.StateShiftException.Reason;
import io.stateshift.checkpoint.Checkpoint;
import io.stateshift.checkpoint.CheckpointFiles;
import io.stateshift.checkpoint.OffsetLogEntry;
import io.stateshift.checkpoint.ParallelSteps;
import io.stateshift.checkpoint.StateCheckpointIds;
import io.stateshift.checkpoint.StateLayout;
import io.stateshift.checkpoint.StateSize;
import io.stateshift.checkpoint.StatefulOperator;
import io.stateshift.checkpoint.StoreSpec;
import io.stateshift.checkpoint.spi.LayoutReading;
import io.stateshift.checkpoint.spi.SparkLines;
import io.stateshift.config.StateShiftConf;
import io.stateshift.spark.line.LineCalls;
import io.stateshift.spark.line.LineFeatures;
import io.stateshift.spark.line.StoreCalls;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.zip.ZipEntry;
import java.util.zip.ZipInputStream;
import org.apache.hadoop.fs.FileStatus;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.execution.streaming.state.StateStoreColFamilySchema;
import org.apache.spark.sql.execution.streaming.state.StateStoreConf;
import org.apache.spark.sql.internal.SQLConf;

/**
 * Reads and validates the {@link StateLayout} of a checkpoint: the commit and offset logs, the
 * partition folders and their files, and the schema of every store as Spark 4.2 wrote it.
 */
final class LayoutReader {
  private static final String HDFS_PROVIDER = StateLayout.HDFS_PROVIDER;
  private static final String ROCKSDB_PROVIDER = StateLayout.ROCKSDB_PROVIDER;
  private static final String JOIN = StateLayout.JOIN;
  private static final String FLAT_MAP_GROUPS_WITH_STATE = StateLayout.FLAT_MAP_GROUPS_WITH_STATE;
  private static final String TRANSFORM_WITH_STATE = StateLayout.TRANSFORM_WITH_STATE;
  private static final java.util.Set<String> SUPPORTED_OPERATORS = StateLayout.SUPPORTED_OPERATORS;
  private static final String SUPPORTED_DESCRIPTION = StateLayout.SUPPORTED_DESCRIPTION;
  private static final String JOIN_FORMAT = StateLayout.JOIN_FORMAT;
  private static final String FMGWS_FORMAT = StateLayout.FMGWS_FORMAT;

  /** The join format Spark assumes for checkpoints that do not record one (Spark 2.3). */
  private static final int LEGACY_JOIN_FORMAT = 1;

  private LayoutReader() {}

  static StateLayout read(SparkSession spark, Checkpoint checkpoint, LayoutReading reading) {
    return read(
        spark,
        checkpoint,
        reading.requireSupported(),
        reading.allowPendingBatch(),
        reading.tolerateExtraFolders());
  }

  private static StateLayout read(
      SparkSession spark,
      Checkpoint checkpoint,
      boolean requireSupported,
      boolean allowPendingBatch,
      boolean tolerateExtraFolders) {
    CheckpointFiles files = checkpoint.files();
    long committed = checkpoint.lastCommittedBatch();
    long planned = checkpoint.lastPlannedBatch();
    if (committed < 0 && allowPendingBatch) {
      throw new StateShiftException(
          Reason.UNCOMMITTED_BATCH,
          "Checkpoint "
              + files.root()
              + " has no committed batch yet. Run the query until it "
              + "commits one batch, stop it, then change the partition count.");
    }
    if (planned < 0) {
      throw new StateShiftException(
          Reason.UNCOMMITTED_BATCH,
          "Checkpoint "
              + files.root()
              + " has no batch yet. Run the query until it commits one "
              + "batch, stop it, then repartition.");
    }
    if (committed < planned && !allowPendingBatch) {
      throw new StateShiftException(
          Reason.UNCOMMITTED_BATCH,
          "The last planned batch "
              + planned
              + " of checkpoint "
              + files.root()
              + " was not "
              + "committed (last committed: "
              + committed
              + "). Its state must be completed with "
              + "the old layout first, or an exactly-once sink could see its output twice. Start "
              + "the query once without changes so it finishes batch "
              + planned
              + ", stop it, "
              + "then repartition.");
    }
    List<StatefulOperator> operators = checkpoint.operators();
    if (operators.isEmpty()) {
      throw new StateShiftException(
          Reason.STATELESS_QUERY,
          "Checkpoint "
              + files.root()
              + " belongs to a stateless query (no state/ folder): the checkpoint has no "
              + "state, so there is nothing for stateshift to change. A stateless query takes "
              + "spark.sql.shuffle.partitions anew at each start.");
    }
    OffsetLogEntry offsets = checkpoint.offsets(committed);
    checkpoint.commitText(committed);
    int partitions = offsets.shufflePartitions();
    if (partitions <= 0) {
      throw Checkpoint.corrupt(
          files, "offsets/" + committed + " records no valid " + OffsetLogEntry.SHUFFLE_PARTITIONS);
    }
    Map<String, String> conf = offsets.conf();
    int joinFormat = joinFormat(files, conf, committed);
    if (requireSupported) {
      for (StatefulOperator op : operators) {
        if (!SUPPORTED_OPERATORS.contains(op.name())) {
          throw new StateShiftException(
              Reason.UNSUPPORTED_OPERATOR,
              "Operator "
                  + op.id()
                  + " ("
                  + op.name()
                  + ") cannot be repartitioned by this "
                  + "version of stateshift; supported are "
                  + SUPPORTED_DESCRIPTION
                  + ". The "
                  + "checkpoint was not changed. To change the partition count of this query, "
                  + "start it on a new checkpoint with the new spark.sql.shuffle.partitions.");
        }
        if (op.name().equals(JOIN) && joinFormat > JoinStateFormat3Layout.FORMAT) {
          throw JoinStateFormat3Layout.unsupportedFormat(op, joinFormat);
        }
      }
    }
    // Checkpoints written with useStrictDistribution=false (or before Spark 3.3) may have placed
    // aggregation, dedup, session window and flatMapGroupsWithState state by a subset of the key.
    // No guess is needed: reading does not depend on placement, every key is written where the
    // full partition key puts it, and the switch records useStrictDistribution=true so the
    // restarted query places new rows the same way (OffsetLogEntry.withShufflePartitions).
    String provider = Optional.ofNullable(offsets.providerClass()).orElse(HDFS_PROVIDER);
    if (!provider.equals(HDFS_PROVIDER) && !provider.equals(ROCKSDB_PROVIDER)) {
      throw new StateShiftException(
          Reason.UNSUPPORTED_CHECKPOINT,
          "State store provider "
              + provider
              + " is not supported; stateshift repartitions the "
              + "HDFS-backed and RocksDB providers.");
    }
    StateCheckpointIds checkpointIds = checkpoint.checkpointIds(committed);
    if (checkpointIds != null) {
      checkCheckpointIds(files, checkpointIds, operators, partitions, provider, committed);
    }
    StateSize size =
        checkPartitionFolders(
            files,
            operators,
            partitions,
            committed + 1,
            provider.equals(ROCKSDB_PROVIDER),
            checkpointIds,
            tolerateExtraFolders);
    SQLConf sqlConf =
        org.apache.spark.sql.classic.SparkSession.class.cast(spark).sessionState().conf().clone();
    conf.forEach(sqlConf::setConfString);
    // What Spark continues a checkpoint of an older Spark with, where its offset log is silent
    OffsetLogDefaults.missingFrom(conf).forEach(sqlConf::setConfString);
    // Not in the offset log: the commit log tells the format, and the stores must use the same one.
    sqlConf.setConfString(
        StateCheckpointIds.FORMAT_VERSION_CONF, checkpointIds == null ? "1" : "2");
    Map<String, String> settings = Map.copyOf(ScalaBridge.javaMap(sqlConf.getAllConfs()));
    // built from the SQL conf at hand: no second SQLConf filled from the settings' copy
    StateStoreConf storeConf =
        new StateStoreConf(sqlConf, scala.collection.immutable.Map$.MODULE$.empty());
    if (StoreCalls.rowChecksumEnabled(storeConf) && !provider.equals(ROCKSDB_PROVIDER)) {
      throw new StateShiftException(
          Reason.UNSUPPORTED_CHECKPOINT,
          "Row checksums (spark.sql.streaming.stateStore.rowChecksum.enabled) on the HDFS-backed "
              + "store are not supported yet.");
    }
    List<StoreSpec> stores = new ArrayList<>();
    for (StatefulOperator op : operators) {
      boolean join = op.name().equals(JOIN);
      if (!SUPPORTED_OPERATORS.contains(op.name())
          || (join && joinFormat > JoinStateFormat3Layout.FORMAT)) {
        continue;
      }
      if (join && joinFormat == JoinStateFormat3Layout.FORMAT) {
        for (StatefulOperator.Store store : op.stores()) {
          stores.add(
              JoinStateFormat3Layout.storeSpec(checkpoint, op, store, stores.size(), provider));
        }
        continue;
      }
      if (op.name().equals(TRANSFORM_WITH_STATE)) {
        if (!LineFeatures.TRANSFORM_WITH_STATE) {
          throw new StateShiftException(
              Reason.UNSUPPORTED_OPERATOR,
              "Operator "
                  + op.id()
                  + " (transformWithState) of "
                  + files.root()
                  + ": stateshift's Spark "
                  + SparkLines.get().sparkLine()
                  + " line cannot move transformWithState state; on Spark 4.2 its line can."
                  + " The checkpoint was not changed.");
        }
        if (!provider.equals(ROCKSDB_PROVIDER)) { // Spark runs it on RocksDB only
          throw Checkpoint.corrupt(
              files,
              "operator "
                  + op.id()
                  + " (transformWithState) keeps "
                  + "its state in RocksDB column families, but the offset log names "
                  + provider,
              RESTORE);
        }
        for (StatefulOperator.Store store : op.stores()) {
          stores.add(
              TransformWithStateLayout.storeSpec(checkpoint, op, store, stores.size(), storeConf));
        }
        continue;
      }
      for (StatefulOperator.Store store : op.stores()) {
        StateStoreColFamilySchema schema = readSchema(files, op, store);
        if (requireSupported
            && op.name().equals(FLAT_MAP_GROUPS_WITH_STATE)
            && "1".equals(conf.getOrDefault(FMGWS_FORMAT, "1"))
            && java.util.Arrays.asList(schema.valueSchema().fieldNames())
                .contains("timeoutTimestamp")) {
          // Spark 4.2 records this format's timeout as an int in the schema but writes a long:
          // its own row validation then rejects the state when it is read outside the query.
          throw new StateShiftException(
              Reason.UNSUPPORTED_OPERATOR,
              "Operator "
                  + op.id()
                  + " (flatMapGroupsWithState with a timeout) uses state format "
                  + "1 ("
                  + FMGWS_FORMAT
                  + "), whose rows Spark 4.2's state validation rejects "
                  + "when read outside the query; this version of stateshift repartitions "
                  + "format 1 without a timeout, and format 2 (the default). The checkpoint was "
                  + "not changed. Start the query on a new checkpoint with the new partition "
                  + "count.");
        }
        stores.add(
            new StoreSpec(
                stores.size(),
                op.id(),
                op.name(),
                store.name(),
                store.numColsPrefixKey(),
                schema.keySchema(),
                schema.valueSchema(),
                join ? joinFormat : 0));
      }
    }
    return new StateLayout(
        checkpoint,
        committed,
        partitions,
        provider,
        operators,
        stores,
        settings,
        checkpointIds,
        size);
  }

  /** Format v2 is RocksDB only, and the ids must cover every partition of every operator. */
  private static void checkCheckpointIds(
      CheckpointFiles files,
      StateCheckpointIds ids,
      List<StatefulOperator> operators,
      int partitions,
      String provider,
      long committed) {
    if (!provider.equals(ROCKSDB_PROVIDER)) {
      throw Checkpoint.corrupt(
          files,
          "commits/"
              + committed
              + " records state checkpoint ids "
              + "(format v2), which only the RocksDB state store writes, but the offset log names "
              + provider,
          RESTORE);
    }
    for (StatefulOperator op : operators) {
      if (ids.partitionsOf(op.id()) != partitions) {
        throw Checkpoint.corrupt(
            files,
            "commits/"
                + committed
                + " records state checkpoint ids "
                + "for "
                + Math.max(0, ids.partitionsOf(op.id()))
                + " partitions of operator "
                + op.id()
                + ", but the offset log records "
                + partitions
                + " partitions",
            RESTORE);
      }
      for (StatefulOperator.Store store : op.stores()) {
        for (int p = 0; p < partitions; p++) {
          if (ids.idOf(op.id(), p, store.name()) == null) {
            throw Checkpoint.corrupt(
                files,
                "commits/"
                    + committed
                    + " records no state "
                    + "checkpoint id for operator "
                    + op.id()
                    + " partition "
                    + p
                    + " store "
                    + store.name(),
                RESTORE);
          }
        }
      }
    }
  }

  /** The join state format the checkpoint's offset log records, as Spark reads it back. */
  private static int joinFormat(CheckpointFiles files, Map<String, String> conf, long batch) {
    String value = conf.get(JOIN_FORMAT);
    if (value == null) {
      return LEGACY_JOIN_FORMAT;
    }
    try {
      return Integer.parseInt(value.trim());
    } catch (NumberFormatException e) {
      throw Checkpoint.corrupt(
          files,
          "offsets/" + batch + " records " + JOIN_FORMAT + "=" + value + ", which is not a number",
          RESTORE);
    }
  }

  private static final String RESTORE = Checkpoint.RESTORE;
  private static final Pattern HDFS_FILE = Pattern.compile("(\\d+)(_[^.]*)?\\.(delta|snapshot)");

  /** A RocksDB version file: its version, an optional {@code _<id>}, and {@code zip|changelog}. */
  static final Pattern ROCKSDB_FILE = Pattern.compile("(\\d+)(_[^.]*)?\\.(zip|changelog)");

  private static final ObjectMapper JSON = new ObjectMapper();

  /**
   * Checks, from listings and the small RocksDB version files only, that every partition holds the
   * files Spark needs to load the state of the last committed batch (version {@code version}): the
   * newest snapshot at or below it and every delta or changelog after that snapshot, none of them
   * empty; for RocksDB, every SST and log file the snapshot's zip names, with the size the zip
   * records. Damage found here is refused before anything is written. Returns the bytes and files
   * those listings hold.
   */
  private static StateSize checkPartitionFolders(
      CheckpointFiles files,
      List<StatefulOperator> operators,
      int partitions,
      long version,
      boolean rocksDb,
      StateCheckpointIds checkpointIds,
      boolean tolerateExtraFolders) {
    Tally listed = new Tally();
    for (StatefulOperator op : operators) {
      for (FileStatus child :
          tolerateExtraFolders
              ? List.<FileStatus>of()
              : files.list(files.path("state/" + op.id()))) {
        String name = child.getPath().getName();
        if (name.matches("\\d+") && Integer.parseInt(name) >= partitions) {
          throw Checkpoint.corrupt(
              files,
              "state/"
                  + op.id()
                  + "/"
                  + name
                  + " is a partition "
                  + "folder beyond the "
                  + partitions
                  + " partitions the offset log records",
              RESTORE);
        }
      }
      Map<String, Map<String, FileStatus>> below = files.filesBelow(files.path("state/" + op.id()));
      List<int[]> folders = new ArrayList<>(); // store index, partition
      for (int s = 0; s < op.stores().size(); s++) {
        for (int p = 0; p < partitions; p++) {
          folders.add(new int[] {s, p});
        }
      }
      // one listing per folder, the folders on a few threads: on an object store each is a request
      ParallelSteps.run(
          folders,
          StateShiftConf.DRIVER_IO_THREADS.onDriver(),
          "validate",
          folder -> {
            StatefulOperator.Store store = op.stores().get(folder[0]);
            int p = folder[1];
            String dir = StatefulOperator.storeDir(op.id(), p, store.name());
            // a second request only where the listing holds no file
            Map<String, Long> sizes = fileSizes(files, below, dir);
            listed.add(sizes);
            if (rocksDb) {
              listed.addReplay(sizes, version);
            }
            if (sizes.isEmpty() && !files.isDirectory(files.path(dir))) {
              throw Checkpoint.corrupt(
                  files,
                  "the partition folder "
                      + dir
                      + " is missing (the "
                      + "offset log records "
                      + partitions
                      + " partitions, so it holds the state of "
                      + "partition "
                      + p
                      + ")",
                  RESTORE);
            }
            if (checkpointIds != null) {
              checkRocksDbFilesById(
                  files,
                  below,
                  dir,
                  sizes,
                  version,
                  checkpointIds.idOf(op.id(), p, store.name()),
                  listed);
            } else if (rocksDb) {
              checkRocksDbFiles(files, below, dir, sizes, version, listed);
            } else {
              checkChain(files, dir, sizes, HDFS_FILE, "snapshot", version);
            }
          });
    }
    return new StateSize(listed.bytes, listed.files, listed.replayBytes);
  }

  /** The bytes and files of the listings made (from several threads). */
  private static final class Tally {
    long bytes;
    long files;
    long replayBytes;

    synchronized void add(Map<String, Long> sizes) {
      files += sizes.size();
      sizes.values().forEach(size -> bytes += size);
    }

    /** The changelog files of a RocksDB partition folder after its newest zip at or below. */
    void addReplay(Map<String, Long> sizes, long version) {
      long snapshot = 0;
      for (String name : sizes.keySet()) {
        java.util.regex.Matcher m = ROCKSDB_FILE.matcher(name);
        if (m.matches() && m.group(3).equals("zip")) {
          long v = Long.parseLong(m.group(1));
          if (v <= version) {
            snapshot = Math.max(snapshot, v);
          }
        }
      }
      long replay = 0;
      for (Map.Entry<String, Long> file : sizes.entrySet()) {
        java.util.regex.Matcher m = ROCKSDB_FILE.matcher(file.getKey());
        if (m.matches() && m.group(3).equals("changelog")) {
          long v = Long.parseLong(m.group(1));
          if (v > snapshot && v <= version) {
            replay += file.getValue();
          }
        }
      }
      synchronized (this) {
        replayBytes += replay;
      }
    }
  }

  /** {@code below}: the listing of the whole operator folder, where one was made, or null. */
  private static Map<String, Long> fileSizes(
      CheckpointFiles files, Map<String, Map<String, FileStatus>> below, String dir) {
    if (below != null) {
      Map<String, Long> sizes = new HashMap<>();
      below.getOrDefault(dir, Map.of()).forEach((name, file) -> sizes.put(name, file.getLen()));
      return sizes;
    }
    Map<String, Long> sizes = new HashMap<>();
    for (FileStatus file : files.list(files.path(dir))) {
      if (file.isFile()) {
        sizes.put(file.getPath().getName(), file.getLen());
      }
    }
    return sizes;
  }

  /**
   * Spark loads a version from the newest full snapshot at or below it (version 0 is the empty
   * state) and the incremental files of every version after it: checks those are all there and not
   * empty. Returns the name of the snapshot file used, or null when the chain starts empty.
   */
  private static String checkChain(
      CheckpointFiles files,
      String dir,
      Map<String, Long> sizes,
      Pattern pattern,
      String snapshotSuffix,
      long version) {
    Map<Long, String> snapshots = new HashMap<>();
    Map<Long, String> increments = new HashMap<>();
    for (String name : sizes.keySet()) {
      Matcher m = pattern.matcher(name);
      if (m.matches()) {
        long v = Long.parseLong(m.group(1));
        (m.group(3).equals(snapshotSuffix) ? snapshots : increments).put(v, name);
      }
    }
    long from =
        snapshots.keySet().stream()
            .filter(v -> v <= version)
            .mapToLong(Long::longValue)
            .max()
            .orElse(0);
    for (long v = from + 1; v <= version; v++) {
      if (!increments.containsKey(v)) {
        throw Checkpoint.corrupt(
            files,
            dir
                + " has no state file for version "
                + v
                + (v == version
                    ? " (the state of committed batch " + (version - 1) + ")"
                    : ", which the state of committed batch "
                        + (version - 1)
                        + " (version "
                        + version
                        + ") is built from"),
            RESTORE);
      }
      checkNotEmpty(files, dir, increments.get(v), sizes);
    }
    String snapshot = snapshots.get(from);
    if (snapshot != null) {
      checkNotEmpty(files, dir, snapshot, sizes);
    }
    return snapshot;
  }

  private static void checkNotEmpty(
      CheckpointFiles files, String dir, String name, Map<String, Long> sizes) {
    if (sizes.get(name) == 0) {
      throw Checkpoint.corrupt(files, dir + "/" + name + " is empty (0 bytes)", RESTORE);
    }
  }

  /**
   * Format v2: the committed version is the file named by its unique id, a snapshot or a changelog
   * (whose header names the files it builds on; Spark follows that lineage when loading).
   */
  private static void checkRocksDbFilesById(
      CheckpointFiles files,
      Map<String, Map<String, FileStatus>> below,
      String dir,
      Map<String, Long> sizes,
      long version,
      String id,
      Tally listed) {
    String zip = version + "_" + id + ".zip";
    String changelog = version + "_" + id + ".changelog";
    if (sizes.containsKey(zip)) {
      checkNotEmpty(files, dir, zip, sizes);
      checkZipFiles(files, below, dir, zip, listed);
    } else if (sizes.containsKey(changelog)) {
      checkNotEmpty(files, dir, changelog, sizes);
    } else {
      throw Checkpoint.corrupt(
          files,
          dir
              + " has neither "
              + zip
              + " nor "
              + changelog
              + ", the state of committed batch "
              + (version - 1)
              + " its commit log names",
          RESTORE);
    }
  }

  private static void checkRocksDbFiles(
      CheckpointFiles files,
      Map<String, Map<String, FileStatus>> below,
      String dir,
      Map<String, Long> sizes,
      long version,
      Tally listed) {
    String zip = checkChain(files, dir, sizes, ROCKSDB_FILE, "zip", version);
    if (zip == null) {
      return; // changelog checkpointing, no snapshot yet: the changelogs hold all of the state
    }
    checkZipFiles(files, below, dir, zip, listed);
  }

  /** Every SST and log file a RocksDB version zip names is there, with the size it records. */
  private static void checkZipFiles(
      CheckpointFiles files,
      Map<String, Map<String, FileStatus>> below,
      String dir,
      String zip,
      Tally listed) {
    JsonNode metadata =
        rocksDbZipMetadata(
            files,
            dir + "/" + zip,
            below == null ? null : below.getOrDefault(dir, Map.of()).get(zip));
    Map<String, Map<String, Long>> listings = new HashMap<>();
    for (String[] kind :
        new String[][] {
          {"sstFiles", "dfsSstFileName", "SSTs"}, {"logFiles", "dfsLogFileName", "logs"}
        }) {
      JsonNode list = metadata.get(kind[0]);
      if (list == null || list.isNull()) {
        continue;
      }
      for (JsonNode file : list) {
        String name = file.path(kind[1]).asText("");
        long expected = file.path("sizeBytes").asLong(-1);
        if (name.isEmpty()) {
          throw Checkpoint.corrupt(
              files,
              dir
                  + "/"
                  + zip
                  + " is not a RocksDB checkpoint Spark "
                  + "can read (a file entry without a name)",
              RESTORE);
        }
        String sub = dir + "/" + kind[2];
        Long actual =
            listings
                .computeIfAbsent(
                    sub,
                    d -> {
                      Map<String, Long> listing = fileSizes(files, below, d);
                      listed.add(listing);
                      return listing;
                    })
                .get(name);
        if (actual == null) {
          throw Checkpoint.corrupt(
              files,
              sub + "/" + name + ", which " + dir + "/" + zip + " needs, is missing",
              RESTORE);
        }
        if (expected >= 0 && actual != expected) {
          throw Checkpoint.corrupt(
              files,
              sub
                  + "/"
                  + name
                  + " has "
                  + actual
                  + " bytes but "
                  + dir
                  + "/"
                  + zip
                  + " records "
                  + expected
                  + " (truncated or replaced)",
              RESTORE);
        }
      }
    }
  }

  /** The checkpoint metadata inside a RocksDB version zip: "v1", then JSON naming its files. */
  /**
   * {@code listed}: the zip's status from a listing (no request for it before the read), or null.
   */
  private static JsonNode rocksDbZipMetadata(CheckpointFiles files, String zip, FileStatus listed) {
    if (listed != null) {
      return files.readOnce(listed, status -> readZipMetadata(files, zip, status));
    }
    return readZipMetadata(files, zip, null);
  }

  private static JsonNode readZipMetadata(CheckpointFiles files, String zip, FileStatus listed) {
    String problem;
    try (ZipInputStream in =
        new ZipInputStream(
            listed != null
                ? WholeFileReads.open(files.fs(), listed)
                : files.fs().open(files.path(zip)))) {
      problem = "it has no 'metadata' entry";
      for (ZipEntry entry; (entry = in.getNextEntry()) != null; ) {
        if (!entry.getName().equals("metadata")) {
          continue;
        }
        String text = new String(in.readAllBytes(), StandardCharsets.UTF_8);
        int lineBreak = text.indexOf('\n');
        // Spark 4.0 writes v2 where its JVM's first RocksDB commit had checkpoint format v2
        if (lineBreak < 0 || !text.substring(0, lineBreak).matches("v[12]")) {
          problem = "its metadata does not start with the version line v1 or v2";
          break;
        }
        JsonNode node = JSON.readTree(text.substring(lineBreak + 1));
        if (node == null || !node.isObject() || !node.has("sstFiles")) {
          problem = "its metadata names no sstFiles";
          break;
        }
        return node;
      }
    } catch (Exception e) {
      problem = e.getMessage() == null ? e.getClass().getSimpleName() : e.getMessage();
    }
    throw Checkpoint.corrupt(
        files, zip + " is not a RocksDB checkpoint Spark can read (" + problem + ")", RESTORE);
  }

  private static StateStoreColFamilySchema readSchema(
      CheckpointFiles files, StatefulOperator op, StatefulOperator.Store store) {
    return readSchema(files, op.id(), store.name());
  }

  /** The key and value schema of a store, from the schema file Spark wrote in partition 0. */
  static StateStoreColFamilySchema readSchema(
      CheckpointFiles files, long operatorId, String storeName) {
    StatefulOperator.Store store = new StatefulOperator.Store(storeName, 0);
    String schemaFile =
        StatefulOperator.storeDir(operatorId, 0, store.name()) + "/_metadata/schema";
    if (!files.exists(files.path(schemaFile))) {
      throw Checkpoint.corrupt(
          files,
          "the state schema of operator "
              + operatorId
              + " store "
              + store.name()
              + " ("
              + schemaFile
              + ") is missing",
          "Restore the checkpoint from a "
              + "backup. (Spark writes this file unless "
              + "spark.sql.streaming.stateStore.stateSchemaCheck is false; stateshift needs it to "
              + "place keys.)");
    }
    // Read through the checkpoint's cached FileSystem, not the checker's own file manager: on
    // s3a that one wraps a fresh S3AFileSystem that a finalizer closes once the checker is
    // unreachable, which can happen while its stream is still being read.
    try (org.apache.hadoop.fs.FSDataInputStream in = files.fs().open(files.path(schemaFile))) {
      List<StateStoreColFamilySchema> schemas = LineCalls.readSchemaFile(in);
      return schemas.stream()
          .filter(s -> s.colFamilyName().equals("default"))
          .findFirst()
          .orElseThrow(() -> new IllegalStateException("no default column family"));
    } catch (Exception e) { // Spark also throws checked exceptions here (EOFException, ...)
      if (isIoFailure(e)) {
        throw new StateShiftException(
            Reason.FAILED,
            "Could not read "
                + schemaFile
                + " of "
                + files.root()
                + " ("
                + e
                + "). This is an I/O error, not damage: check that the file system is "
                + "reachable and run again. Nothing was changed.",
            e);
      }
      throw Checkpoint.corrupt(
          files,
          "the state schema of operator "
              + operatorId
              + " store "
              + store.name()
              + " ("
              + schemaFile
              + ") cannot be read ("
              + (e.getMessage() == null ? e.getClass().getName() : e.getMessage())
              + ")",
          RESTORE);
    }
  }

  /**
   * Whether reading failed on the way to the bytes (the file system: run again) rather than on the
   * bytes themselves (a file cut short or garbled: damage).
   */
  static boolean isIoFailure(Throwable e) {
    for (Throwable t = e; t != null; t = t.getCause()) {
      if (t instanceof java.util.concurrent.RejectedExecutionException) {
        return true;
      }
      if (t instanceof java.io.IOException
          && !(t instanceof java.io.EOFException)
          && !(t instanceof java.io.CharConversionException)
          && !(t instanceof java.io.UTFDataFormatException)
          && !t.getClass().getName().contains("Json")) {
        return true;
      }
    }
    return false;
  }
}
