package io.stateshift.monitor;

import static org.assertj.core.api.Assertions.assertThat;

import io.stateshift.testing.ChildJvm;
import io.stateshift.testing.PrometheusQueryMain;
import java.net.HttpURLConnection;
import java.net.ServerSocket;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * StreamMonitor's metrics on the driver's {@code /metrics/prometheus}, scraped over HTTP from a
 * query in a JVM of its own with Spark's UI on a free port and the PrometheusServlet enabled by
 * conf alone ({@link PrometheusQueryMain}, the conf docs/operations.md shows). With {@code
 * spark.metrics.namespace} set, the names carry no application id: the same names after every
 * restart, for alert rules.
 */
@Tag("cover")
class PrometheusScrapeTest {
  @TempDir Path tmp;

  @Test
  void monitorMetricsAreScrapedUnderStableNames() throws Exception {
    int port;
    try (ServerSocket socket = new ServerSocket(0)) {
      port = socket.getLocalPort();
    }
    Path marker = tmp.resolve("ui-url");
    Path log = tmp.resolve("query.log");
    Process child =
        ChildJvm.start(
            log,
            List.of(),
            PrometheusQueryMain.class.getName(),
            Integer.toString(port),
            tmp.resolve("checkpoint").toString(),
            marker.toString());
    try {
      long deadline = System.currentTimeMillis() + 180_000;
      while (!Files.exists(marker) && child.isAlive() && System.currentTimeMillis() < deadline) {
        Thread.sleep(200);
      }
      assertThat(marker).as("the query ran its batches; see " + log).exists();
      String ui = Files.readString(marker).strip();
      assertThat(ui).endsWith(":" + port);

      String scraped = get("http://127.0.0.1:" + port + "/metrics/prometheus");
      String prefix =
          "metrics_"
              + PrometheusQueryMain.NAMESPACE
              + "_driver_stateshift_"
              + PrometheusQueryMain.QUERY_NAME
              + "_";
      Map<String, Double> ours = new TreeMap<>();
      Matcher m =
          Pattern.compile(
                  "^("
                      + prefix
                      + "\\S+?)_(?:Value|Count)\\{type=\"(?:gauges|counters)\"\\} (\\S+)$",
                  Pattern.MULTILINE)
              .matcher(scraped);
      while (m.find()) {
        ours.put(m.group(1).substring(prefix.length()), Double.parseDouble(m.group(2)));
      }
      System.out.println("stateshift metrics on /metrics/prometheus: " + ours);
      assertThat(ours)
          .as("stateshift's metrics in:%n%s", scraped)
          .containsKeys(
              "batchDurationMs",
              "triggerIntervalMs",
              "inputRows",
              "inputRowsPerSecond",
              "processedRowsPerSecond",
              "batchId",
              "operator0_stateStoreSave_stateRows",
              "operator0_stateStoreSave_stateMemoryBytes");
      assertThat(ours.get("triggerIntervalMs")).isEqualTo(PrometheusQueryMain.TRIGGER_MS);
      assertThat(ours.get("batchId")).isGreaterThanOrEqualTo(3);
      assertThat(ours.get("batchDurationMs")).isPositive().isLessThan(120_000);
      assertThat(ours.get("operator0_stateStoreSave_stateRows"))
          .isPositive()
          .isLessThanOrEqualTo(50);
      assertThat(ours.get("operator0_stateStoreSave_stateMemoryBytes")).isPositive();
      assertThat(ours.get("inputRowsPerSecond")).isPositive();
      // Spark's own driver metrics sit beside them, under the same namespace
      assertThat(scraped).contains("metrics_" + PrometheusQueryMain.NAMESPACE + "_driver_");
    } finally {
      child.destroyForcibly();
      child.waitFor(30, TimeUnit.SECONDS);
    }
  }

  private static String get(String url) throws Exception {
    HttpURLConnection connection = (HttpURLConnection) URI.create(url).toURL().openConnection();
    connection.setConnectTimeout(10_000);
    connection.setReadTimeout(30_000);
    try (var in = connection.getInputStream()) {
      assertThat(connection.getResponseCode()).isEqualTo(200);
      return new String(in.readAllBytes(), StandardCharsets.UTF_8);
    } finally {
      connection.disconnect();
    }
  }
}
