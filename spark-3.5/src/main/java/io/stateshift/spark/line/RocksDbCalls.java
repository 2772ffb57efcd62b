package io.stateshift.spark.line;

import io.stateshift.checkpoint.StoreSpec;
import io.stateshift.spark.state.ScalaBridge;
import java.io.File;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import org.apache.spark.sql.execution.streaming.state.NoPrefixKeyStateEncoder;
import org.apache.spark.sql.execution.streaming.state.RocksDB;
import org.apache.spark.sql.execution.streaming.state.RocksDBCheckpointMetadata;
import org.apache.spark.sql.execution.streaming.state.RocksDBCheckpointMetadata$;
import org.apache.spark.sql.execution.streaming.state.RocksDBConf;
import org.apache.spark.sql.execution.streaming.state.RocksDBFileManager;
import org.apache.spark.sql.execution.streaming.state.RocksDBFileMappings;
import org.apache.spark.sql.execution.streaming.state.RocksDBImmutableFile;
import org.apache.spark.sql.execution.streaming.state.RocksDBImmutableFile$;
import org.apache.spark.sql.execution.streaming.state.RocksDBStateEncoder;
import org.apache.spark.sql.execution.streaming.state.RocksDBStateEncoder$;
import org.apache.spark.sql.execution.streaming.state.StateStoreConf;
import org.rocksdb.Options;
import org.rocksdb.RocksIterator;

/**
 * Spark 3.5's RocksDB calls: no file mappings, checkpoint ids or column families; a version's
 * metadata is its files and key count (what Spark 4 writes as its v1 metadata, less the fields it
 * added), and its RocksDB JNI (8.3) copies an entry into an array through a buffer over it.
 */
public final class RocksDbCalls {
  private RocksDbCalls() {}

  /** Downloads version {@code version} of a store into {@code dir} with Spark's file manager. */
  public static RocksDBCheckpointMetadata loadCheckpointFromDfs(
      RocksDBFileManager files, long version, File dir, scala.Option<String> checkpointId) {
    if (checkpointId.isDefined()) {
      throw new IllegalStateException("Spark 3.5 has no state checkpoint format v2");
    }
    return files.loadCheckpointFromDfs(version, dir);
  }

  /** 3.5 has no column families. */
  public static boolean hasColumnFamilies(RocksDBCheckpointMetadata metadata) {
    return false;
  }

  /**
   * The options Spark 3.5's RocksDB opens its database with: a private val that Scala exposes under
   * its path, as Spark 4 does under {@code rocksDbOptions}.
   */
  public static Options rocksDbOptions(RocksDB db) {
    return db.org$apache$spark$sql$execution$streaming$state$RocksDB$$dbOptions();
  }

  /** Stops a store's automatic compactions before it loads; whether it could. */
  public static boolean disableAutoCompactions(RocksDB db) {
    rocksDbOptions(db).setDisableAutoCompactions(true);
    return true;
  }

  /**
   * Spark 3.5's RocksDB encoder for one store: its version byte before each row, the prefix-key
   * layout of session windows.
   */
  public static StoredCodec codec(StoreSpec spec) {
    RocksDBStateEncoder encoder =
        RocksDBStateEncoder$.MODULE$.getEncoder(
            spec.keySchema(), spec.valueSchema(), spec.numColsPrefixKey());
    return new StoredCodec(
        encoder::encodeKey,
        encoder::encodeValue,
        encoder::decodeKey,
        encoder::decodeValue,
        encoder instanceof NoPrefixKeyStateEncoder);
  }

  /** 3.5 has no state checkpoint format v2. */
  public static boolean checkpointIdsEnabled(StateStoreConf conf) {
    return false;
  }

  /** The latencies of the store's last commit, by step, as text. */
  public static String commitLatency(RocksDB db) {
    return db.metrics().lastCommitLatencyMs().toString();
  }

  /**
   * Copies the iterator's key into {@code into} as far as it fits; returns the key's whole length.
   */
  public static int key(RocksIterator it, byte[] into) {
    return it.key(ByteBuffer.wrap(into));
  }

  /**
   * Copies the iterator's value into {@code into} as far as it fits; returns the value's length.
   */
  public static int value(RocksIterator it, byte[] into) {
    return it.value(ByteBuffer.wrap(into));
  }

  /**
   * The files of the closed RocksDB folder {@code dir}, none uploaded before, with the names Spark
   * 3.5's upload gives them ({@code <base>-<uuid>.<extension>}); its listing of them is private,
   * and listed here as it lists them: SST files at the top level and {@code .log} files in {@code
   * archive} are immutable, the other top-level files go into the zip, but for an empty write-ahead
   * log, which a checkpoint of 3.5's RocksDB (8.3) leaves out and Spark's zip therefore never
   * holds.
   */
  public static NewRocksDbFiles newFiles(RocksDBFileManager files, File dir, long version) {
    List<File> immutable = new ArrayList<>();
    List<File> others = new ArrayList<>();
    File[] top = dir.listFiles();
    if (top == null) {
      throw new IllegalStateException("Cannot list the new RocksDB version in " + dir);
    }
    for (File file : top) {
      if (file.isDirectory()) {
        continue;
      }
      if (RocksDBImmutableFile$.MODULE$.isSstFile(file.getName())) {
        immutable.add(file);
      } else if (!emptyWriteAheadLog(file)) {
        others.add(file);
      }
    }
    File[] archived =
        new File(dir, RocksDBImmutableFile$.MODULE$.LOG_FILES_LOCAL_SUBDIR()).listFiles();
    for (File file : archived == null ? new File[0] : archived) {
      if (RocksDBImmutableFile$.MODULE$.isLogFile(file.getName())) {
        immutable.add(file);
      }
    }
    List<RocksDBImmutableFile> uploads = new ArrayList<>();
    for (File file : immutable) {
      String name = file.getName();
      int dot = name.lastIndexOf('.');
      String unique = name.substring(0, dot) + "-" + UUID.randomUUID() + name.substring(dot);
      uploads.add(RocksDBImmutableFile$.MODULE$.apply(name, unique, file.length()));
    }
    return new NewRocksDbFiles(immutable, uploads, others);
  }

  /** Spark 3.5's metadata of a version of {@code uploads} and {@code rows} keys. */
  public static RocksDBCheckpointMetadata newMetadata(
      List<RocksDBImmutableFile> uploads, long rows) {
    return RocksDBCheckpointMetadata$.MODULE$.apply(ScalaBridge.seq(uploads), rows);
  }

  /**
   * Uploads the closed RocksDB folder {@code dir}, none of whose files were uploaded before, as
   * {@code version} with {@code rows} keys through Spark's file manager (with empty file mappings:
   * every file under a new name), without an empty write-ahead log (as {@link #newFiles}).
   */
  public static void saveNewCheckpoint(
      RocksDBFileManager files, RocksDBConf conf, File dir, long version, long rows) {
    File[] top = dir.listFiles();
    for (File file : top == null ? new File[0] : top) {
      if (emptyWriteAheadLog(file)) {
        file.delete();
      }
    }
    files.saveCheckpointToDfs(
        dir,
        version,
        rows,
        new RocksDBFileMappings(new ConcurrentHashMap<>(), new ConcurrentHashMap<>()));
  }

  /** An empty write-ahead log, which the checkpoints of 3.5's RocksDB (8.3) leave out. */
  private static boolean emptyWriteAheadLog(File file) {
    return file.isFile()
        && RocksDBImmutableFile$.MODULE$.isLogFile(file.getName())
        && file.length() == 0;
  }
}
