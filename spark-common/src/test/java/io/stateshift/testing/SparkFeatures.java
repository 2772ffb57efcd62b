package io.stateshift.testing;

import io.stateshift.spark.line.StateCalls;
import org.apache.spark.sql.SparkSession;

/**
 * What the Spark under test has, for the suite's cases on what a line's Spark lacks: join state
 * format 3 before 4.1, transformWithState before 4.0, and Spark 4.0's statestore source, which
 * cannot read state checkpoint format v2. Scenarios leave those cases out, and checks made through
 * those readers are left to the output oracle.
 */
public final class SparkFeatures {
  private SparkFeatures() {}

  /** Whether Spark accepts {@code spark.sql.streaming.join.stateFormatVersion = format}. */
  public static boolean joinStateFormat(SparkSession spark, int format) {
    try {
      spark
          .newSession()
          .conf()
          .set("spark.sql.streaming.join.stateFormatVersion", Integer.toString(format));
      return true;
    } catch (IllegalArgumentException e) {
      return false;
    }
  }

  /**
   * Whether Spark writes operator metadata ({@code state/<op>/_metadata}, 4.0 and later): without
   * it, an operator's key placement is derived from its state schema.
   */
  public static boolean operatorMetadata(SparkSession spark) {
    return !spark.version().startsWith("3.");
  }

  /** Whether Spark has transformWithState (4.0 and later). */
  public static boolean transformWithState(SparkSession spark) {
    return !spark.version().startsWith("3.");
  }

  /**
   * Whether Spark's statestore source reads state checkpoint format v2: 4.0's loads a version by
   * its number alone, and fails on the unique ids in v2's file names.
   */
  public static boolean stateSourceReadsFormatV2(SparkSession spark) {
    return !spark.version().startsWith("4.0.");
  }

  /**
   * Whether the RocksDB file exchanges run (snapshots opened read-only, new versions committed
   * directly, the split in place): wherever the line's RocksDB fast paths are available.
   */
  public static boolean rocksDbFileExchanges(SparkSession spark) {
    return StateCalls.ROCKSDB_FAST_PATHS_UNAVAILABLE == null;
  }
}
