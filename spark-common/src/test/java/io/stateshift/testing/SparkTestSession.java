package io.stateshift.testing;

import java.util.Map;
import org.apache.spark.sql.SparkSession;

/**
 * One local Spark session for the whole test JVM: starting Spark is the slowest part of a test.
 * After each test class its settings are put back ({@link #restoreSettings}, called by {@link
 * SessionSettingsReset}), so a setting a suite left behind (200 shuffle partitions, a store) does
 * not change the next suite's queries.
 */
public final class SparkTestSession {
  private static SparkSession spark;
  private static Map<String, String> initialSettings;

  private SparkTestSession() {}

  public static synchronized SparkSession get() {
    if (spark == null) {
      spark =
          SparkSession.builder()
              .master("local[2]")
              .appName("stateshift-tests")
              .config("spark.ui.enabled", "false")
              // a real metrics sink, so the monitor's metrics are checked where users read them
              .config(
                  "spark.metrics.conf.*.sink.jmx.class", "org.apache.spark.metrics.sink.JmxSink")
              .config("spark.sql.shuffle.partitions", "4")
              .config("spark.sql.session.timeZone", "UTC")
              .config(
                  "spark.sql.extensions",
                  "io.stateshift.StateShiftExtensions,io.delta.sql.DeltaSparkSessionExtension")
              .config("spark.databricks.delta.properties.defaults.checkpointInterval", "1000")
              .config(
                  "spark.sql.catalog.spark_catalog",
                  "org.apache.spark.sql.delta.catalog.DeltaCatalog")
              // Spark's periodic state maintenance deletes old versions of stopped queries' stores
              // (per minBatchesToRetain); a tick during a byte-for-byte checkpoint check would be
              // counted against the tool under test, so it never fires within a test JVM.
              .config("spark.sql.streaming.stateStore.maintenanceInterval", "24h")
              .config("spark.databricks.delta.snapshotPartitions", "2")
              .config("spark.sql.adaptive.enabled", "false")
              .getOrCreate();
      spark.sparkContext().setLogLevel("WARN");
      initialSettings = settings();
    }
    return spark;
  }

  /** Puts the session's settings back to those it started with; nothing when never started. */
  static synchronized void restoreSettings() {
    if (spark == null) {
      return;
    }
    Map<String, String> now = settings();
    for (String key : now.keySet()) {
      if (!initialSettings.containsKey(key)) {
        spark.conf().unset(key);
      }
    }
    initialSettings.forEach(
        (key, value) -> {
          if (!value.equals(now.get(key))) {
            spark.conf().set(key, value);
          }
        });
  }

  private static Map<String, String> settings() {
    return Map.copyOf(io.stateshift.spark.state.ScalaBridge.javaMap(spark.conf().getAll()));
  }
}
