package io.stateshift.spark;

import io.stateshift.spark.state.ScalaBridge;
import java.io.File;
import java.io.IOException;
import java.nio.file.Files;
import java.util.List;
import org.apache.spark.sql.execution.streaming.state.RocksDBCheckpointMetadata;
import org.apache.spark.sql.execution.streaming.state.RocksDBCheckpointMetadata$;
import org.apache.spark.sql.execution.streaming.state.RocksDBImmutableFile;
import org.apache.spark.sql.execution.streaming.state.RocksDBLogFile;
import org.apache.spark.sql.execution.streaming.state.RocksDBSstFile;

/**
 * First uses of Spark code that a fresh command would otherwise pay on its critical path, for the
 * command line to run ahead on the spare core while the main thread starts Spark. Each is the same
 * call Spark makes itself, on a throwaway input; none changes any state a command reads.
 */
public final class StartupWarmup {
  private StartupWarmup() {}

  /**
   * RocksDB's native library, which Spark's RocksDB wrapper loads before a task's first store:
   * RocksDB unpacks it from its jar (15 MB) into a temporary file first, 70 ms of CPU.
   */
  public static void rocksDbNativeLibrary() {
    org.rocksdb.RocksDB.loadLibrary();
  }

  /**
   * Writes and reads back a RocksDB checkpoint metadata file as Spark's provider does on every
   * commit and load: the first read reflects over Scala signatures (json4s), 0.25 s cold, during
   * which the first read tasks of a repartition would both wait.
   */
  public static void rocksDbCheckpointMetadata() throws IOException {
    File dir = Files.createTempDirectory("stateshift-warmup").toFile();
    File file = new File(dir, "metadata");
    // the command may exit before this thread is done: the JVM's exit removes both then
    dir.deleteOnExit();
    file.deleteOnExit();
    try {
      List<RocksDBImmutableFile> files =
          List.of(
              new RocksDBSstFile("000001.sst", "000001-warmup.sst", 1L),
              new RocksDBLogFile("000002.log", "000002-warmup.log", 1L));
      RocksDBCheckpointMetadata written =
          RocksDBCheckpointMetadata$.MODULE$.apply(ScalaBridge.seq(files), 1L);
      written.writeToFile(file);
      RocksDBCheckpointMetadata$.MODULE$.readFromFile(file);
    } finally {
      Files.deleteIfExists(file.toPath());
      Files.deleteIfExists(dir.toPath());
    }
  }
}
