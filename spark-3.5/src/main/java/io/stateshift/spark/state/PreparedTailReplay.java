package io.stateshift.spark.state;

import io.stateshift.StateShiftException;
import io.stateshift.checkpoint.PlacementCheck;
import io.stateshift.checkpoint.PreparedManifest;
import io.stateshift.checkpoint.StoreSpec;
import io.stateshift.checkpoint.TailFiles;
import io.stateshift.checkpoint.spi.Redistribution;
import java.io.IOException;
import java.io.InputStream;
import java.io.Serializable;
import java.io.UncheckedIOException;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;
import org.apache.spark.sql.SparkSession;

/**
 * Spark 3.5: a prepared layout ({@code stateshift prepare}) is not replayed; its replay reads
 * RocksDB's changelogs with Spark 4's encoders. The repartition refuses before anything changes,
 * and the same repartition without the prepared layout runs.
 */
final class PreparedTailReplay implements Redistribution, Serializable {
  static final String UNAVAILABLE =
      "The replay of a prepared layout (stateshift prepare) needs Spark 4.0 or later; on Spark 3.5"
          + " repartition without it: delete the prepared layout, or run the repartition without"
          + " --prepared.";

  PreparedTailReplay(
      String checkpointRoot,
      String stagingRoot,
      Configuration hadoopConf,
      List<StoreSpec> stores,
      int oldPartitions,
      int newPartitions,
      long lastCommitted,
      String codecName,
      boolean rocksDb,
      PreparedManifest manifest,
      TailFiles logs,
      boolean checkpointIds) {
    throw new StateShiftException(StateShiftException.Reason.UNSUPPORTED_CHECKPOINT, UNAVAILABLE);
  }

  @Override
  public Redistribution checkPlacement(Map<Integer, PlacementCheck.Mode> modes) {
    return this;
  }

  @Override
  public String writeStrategy(SparkSession spark) {
    return "prepared-tail-replay (unavailable on Spark 3.5)";
  }

  @Override
  public Outcome run(SparkSession spark) {
    throw new StateShiftException(StateShiftException.Reason.UNSUPPORTED_CHECKPOINT, UNAVAILABLE);
  }

  /** The SHA-256 of a file's bytes, as lowercase hex. */
  static String sha256(FileSystem fs, Path file) {
    MessageDigest sha;
    try {
      sha = MessageDigest.getInstance("SHA-256");
    } catch (NoSuchAlgorithmException e) {
      throw new IllegalStateException(e);
    }
    byte[] buffer = new byte[1 << 16];
    try (InputStream in = fs.open(file)) {
      for (int n = in.read(buffer); n >= 0; n = in.read(buffer)) {
        sha.update(buffer, 0, n);
      }
    } catch (IOException e) {
      throw new UncheckedIOException("Cannot read " + file + ": " + e.getMessage(), e);
    }
    return HexFormat.of().formatHex(sha.digest());
  }
}
