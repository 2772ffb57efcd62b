package io.stateshift.bench;

import org.apache.spark.sql.SparkSession;

/**
 * Spark's built-in offline repartition in a fresh JVM, for the benchmark's cold timings: {@code
 * BuiltinRepartitionMain <checkpoint> <partitions> [providerClass]}. Exit code 0 on success.
 */
public final class BuiltinRepartitionMain {
  private BuiltinRepartitionMain() {}

  public static void main(String[] args) {
    if (args.length < 2) {
      System.err.println("usage: BuiltinRepartitionMain <checkpoint> <partitions> [providerClass]");
      System.exit(2);
    }
    int exit = 0;
    SparkSession spark =
        SparkSession.builder()
            .master(System.getProperty("spark.master", "local[2]"))
            .appName("built-in repartition")
            .config("spark.ui.enabled", "false")
            .config("spark.sql.session.timeZone", "UTC")
            .getOrCreate();
    try {
      spark.sparkContext().setLogLevel("WARN");
      if (args.length > 2) {
        spark.conf().set("spark.sql.streaming.stateStore.providerClass", args[2]);
      }
      long start = System.nanoTime();
      spark.streams(); // the RocksDB path needs the StateStoreCoordinator this creates
      ((org.apache.spark.sql.classic.SparkSession) spark)
          .streamingCheckpointManager()
          .repartition(args[0], Integer.parseInt(args[1]), true);
      System.out.printf(
          "built-in repartition of %s to %s partitions: %d ms%n",
          args[0], args[1], (System.nanoTime() - start) / 1_000_000);
    } catch (RuntimeException e) {
      System.err.println("built-in repartition failed: " + e);
      e.printStackTrace();
      exit = 1;
    } finally {
      spark.stop();
    }
    System.exit(exit);
  }
}
