package io.stateshift.spark.line;

import io.stateshift.checkpoint.StoreSpec;
import io.stateshift.spark.state.ScalaBridge;
import java.io.File;
import java.util.ArrayList;
import java.util.List;
import org.apache.spark.sql.execution.streaming.state.KeyStateEncoderSpec;
import org.apache.spark.sql.execution.streaming.state.NoPrefixKeyStateEncoder;
import org.apache.spark.sql.execution.streaming.state.RocksDB;
import org.apache.spark.sql.execution.streaming.state.RocksDBCheckpointMetadata;
import org.apache.spark.sql.execution.streaming.state.RocksDBCheckpointMetadata$;
import org.apache.spark.sql.execution.streaming.state.RocksDBConf;
import org.apache.spark.sql.execution.streaming.state.RocksDBFileManager;
import org.apache.spark.sql.execution.streaming.state.RocksDBFileMapping;
import org.apache.spark.sql.execution.streaming.state.RocksDBImmutableFile;
import org.apache.spark.sql.execution.streaming.state.RocksDBKeyStateEncoder;
import org.apache.spark.sql.execution.streaming.state.RocksDBSnapshotFile;
import org.apache.spark.sql.execution.streaming.state.RocksDBStateEncoder;
import org.apache.spark.sql.execution.streaming.state.RocksDBValueStateEncoder;
import org.apache.spark.sql.execution.streaming.state.StateStoreConf;
import org.apache.spark.sql.execution.streaming.state.UnsafeRowDataEncoder;
import org.rocksdb.Options;
import org.rocksdb.RocksIterator;
import scala.Option;

/**
 * Calls into Spark's RocksDB classes that are the same from Spark 4.0 on (spark-3.5 has its own): a
 * store's encoders, a version's download, its column families, the database's options, a new
 * version's upload names, metadata and upload, an iterator's entry copied into an array.
 */
public final class RocksDbCalls {
  private RocksDbCalls() {}

  /**
   * Downloads version {@code version} of a store into {@code dir} with Spark's file manager (a
   * fresh file mapping, the version's checkpoint id where it has one).
   */
  public static RocksDBCheckpointMetadata loadCheckpointFromDfs(
      RocksDBFileManager files, long version, File dir, Option<String> checkpointId) {
    return files.loadCheckpointFromDfs(version, dir, new RocksDBFileMapping(), checkpointId);
  }

  /** Whether a version's metadata names column families (transformWithState's stores). */
  public static boolean hasColumnFamilies(RocksDBCheckpointMetadata metadata) {
    return metadata.columnFamilyMapping().isDefined()
        && metadata.columnFamilyMapping().get().nonEmpty();
  }

  /** The options Spark's RocksDB opens its database with. */
  public static Options rocksDbOptions(RocksDB db) {
    return db.rocksDbOptions();
  }

  /** Stops a store's automatic compactions before it loads; whether it could. */
  public static boolean disableAutoCompactions(RocksDB db) {
    rocksDbOptions(db).setDisableAutoCompactions(true);
    return true;
  }

  /** Spark's RocksDB key and value encoders for one store (UnsafeRow encoding). */
  public static StoredCodec codec(StoreSpec spec) {
    KeyStateEncoderSpec keySpec = LineCalls.keyEncoderSpec(spec);
    UnsafeRowDataEncoder data = new UnsafeRowDataEncoder(keySpec, spec.valueSchema());
    RocksDBKeyStateEncoder keys = RocksDBStateEncoder.getKeyEncoder(data, keySpec, false);
    RocksDBValueStateEncoder values = StoreCalls.valueEncoder(data, spec.valueSchema());
    return new StoredCodec(
        keys::encodeKey,
        values::encodeValue,
        keys::decodeKey,
        values::decodeValue,
        keys instanceof NoPrefixKeyStateEncoder);
  }

  /** Whether new versions get unique checkpoint ids (state checkpoint format v2). */
  public static boolean checkpointIdsEnabled(StateStoreConf conf) {
    return conf.enableStateStoreCheckpointIds();
  }

  /** The latencies of the store's last commit, by step, as text; null where it has none. */
  public static String commitLatency(RocksDB db) {
    return db.metricsOpt().isDefined()
        ? db.metricsOpt().get().lastCommitLatencyMs().toString()
        : null;
  }

  /**
   * Copies the iterator's key into {@code into} as far as it fits; returns the key's whole length.
   */
  public static int key(RocksIterator it, byte[] into) {
    return it.key(into, 0, into.length);
  }

  /**
   * Copies the iterator's value into {@code into} as far as it fits; returns the value's length.
   */
  public static int value(RocksIterator it, byte[] into) {
    return it.value(into, 0, into.length);
  }

  /**
   * The files of the closed RocksDB folder {@code dir}, none uploaded before, with the names
   * Spark's file mapping gives them as {@code version}.
   */
  public static NewRocksDbFiles newFiles(RocksDBFileManager files, File dir, long version) {
    scala.collection.Map<String, RocksDBSnapshotFile> mapping = newMapping(files, dir, version);
    scala.Tuple2<scala.collection.immutable.Seq<File>, scala.collection.immutable.Seq<File>> local =
        files.listRocksDBFiles(dir);
    List<File> immutable = ScalaBridge.javaList(local._1());
    List<RocksDBImmutableFile> uploads = new ArrayList<>();
    for (File file : immutable) {
      Option<RocksDBSnapshotFile> mapped = mapping.get(file.getName());
      if (mapped.isEmpty() || mapped.get().isUploaded()) {
        throw new IllegalStateException(
            "The new RocksDB version in " + dir + " has no new upload name for " + file);
      }
      uploads.add(mapped.get().immutableFile());
    }
    return new NewRocksDbFiles(immutable, uploads, ScalaBridge.javaList(local._2()));
  }

  /** Spark's metadata of a version of {@code uploads} and {@code rows} keys, no column families. */
  public static RocksDBCheckpointMetadata newMetadata(
      List<RocksDBImmutableFile> uploads, long rows) {
    return RocksDBCheckpointMetadata$.MODULE$.apply(
        ScalaBridge.seq(uploads),
        rows,
        0L,
        Option.apply(ScalaBridge.<String, Object>emptyMap()),
        Option.apply(ScalaBridge.<String, Object>emptyMap()),
        Option.apply((Object) (short) 0));
  }

  /**
   * Uploads the closed RocksDB folder {@code dir}, none of whose files were uploaded before, as
   * {@code version} with {@code rows} keys through Spark's file manager.
   */
  public static void saveNewCheckpoint(
      RocksDBFileManager files, RocksDBConf conf, File dir, long version, long rows) {
    StateCalls.saveCheckpointToDfs(
        files, conf, dir, version, rows, newMapping(files, dir, version));
  }

  private static scala.collection.Map<String, RocksDBSnapshotFile> newMapping(
      RocksDBFileManager files, File dir, long version) {
    return new RocksDBFileMapping().createSnapshotFileMapping(files, dir, version)._2();
  }
}
