package io.stateshift.testing;

import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import org.apache.spark.api.java.function.VoidFunction2;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.streaming.StreamingQuery;
import org.apache.spark.sql.streaming.Trigger;

/**
 * A stateful query watched by a StreamMonitor named in conf, in a JVM of its own whose driver
 * serves Spark's UI on a given port with Spark's PrometheusServlet at {@code /metrics/prometheus},
 * set up by conf alone as docs/operations.md shows it. The test scrapes it over HTTP.
 *
 * <p>Arguments: uiPort checkpoint marker. Writes the UI's URL to the marker once the query has run
 * 4 batches with input, then runs until the test kills it (at most 5 minutes).
 */
public final class PrometheusQueryMain {
  public static final String QUERY_NAME = "device_counts";
  public static final String NAMESPACE = "fleet";
  public static final long TRIGGER_MS = 500;

  private PrometheusQueryMain() {}

  public static void main(String[] args) throws Exception {
    SparkSession spark =
        SparkSession.builder()
            .master("local[2]")
            .appName("stateshift-prometheus")
            .config("spark.ui.enabled", "true")
            .config("spark.ui.port", args[0])
            .config("spark.port.maxRetries", "0")
            .config("spark.ui.prometheus.enabled", "true")
            .config(
                "spark.metrics.conf.*.sink.prometheusServlet.class",
                "org.apache.spark.metrics.sink.PrometheusServlet")
            .config("spark.metrics.conf.*.sink.prometheusServlet.path", "/metrics/prometheus")
            .config("spark.metrics.namespace", NAMESPACE)
            .config(
                "spark.sql.streaming.streamingQueryListeners",
                "io.stateshift.monitor.StreamMonitor")
            .config("spark.stateshift.monitor.idleTimeoutMs", "0")
            .config("spark.sql.shuffle.partitions", "2")
            .config("spark.sql.session.timeZone", "UTC")
            .config("spark.sql.adaptive.enabled", "false")
            .getOrCreate();
    spark.sparkContext().setLogLevel("WARN");
    StreamingQuery query =
        spark
            .readStream()
            .format("rate")
            .option("rowsPerSecond", 200)
            .load()
            .selectExpr("value % 50 AS device")
            .groupBy("device")
            .count()
            .writeStream()
            .queryName(QUERY_NAME)
            .outputMode("update")
            .option("checkpointLocation", args[1])
            .trigger(Trigger.ProcessingTime(TRIGGER_MS))
            .foreachBatch((VoidFunction2<Dataset<Row>, Long>) (batch, id) -> batch.count())
            .start();
    long deadline = System.currentTimeMillis() + 300_000;
    while (System.currentTimeMillis() < deadline) {
      long done =
          java.util.Arrays.stream(query.recentProgress()).filter(p -> p.numInputRows() > 0).count();
      if (done >= 4 || query.exception().isDefined()) {
        break;
      }
      Thread.sleep(200);
    }
    if (query.exception().isDefined()) {
      throw query.exception().get();
    }
    spark.sparkContext().listenerBus().waitUntilEmpty();
    Path marker = Path.of(args[2]);
    Path partial = marker.resolveSibling(marker.getFileName() + ".tmp");
    Files.writeString(partial, spark.sparkContext().uiWebUrl().get());
    Files.move(partial, marker, StandardCopyOption.ATOMIC_MOVE);
    query.awaitTermination(Math.max(1, deadline - System.currentTimeMillis()));
    spark.stop();
  }
}
