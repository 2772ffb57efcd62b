package io.stateshift.report;

import static org.assertj.core.api.Assertions.assertThat;

import io.stateshift.cli.StateShiftCli;
import io.stateshift.monitor.MonitorSettings;
import io.stateshift.monitor.ProgressHistory;
import io.stateshift.monitor.StreamMonitor;
import io.stateshift.testing.Chromium;
import io.stateshift.testing.SessionConf;
import io.stateshift.testing.SparkTestSession;
import io.stateshift.testing.StateStores;
import io.stateshift.testing.StatefulQueries;
import io.stateshift.testing.StreamRun;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.apache.spark.api.java.function.VoidFunction2;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.streaming.StreamingQuery;
import org.apache.spark.sql.streaming.Trigger;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The report page in a real headless browser: a real query runs with the monitor writing its
 * history, {@code stateshift report} writes the page, Chromium loads it from disk (no network) and
 * the DOM it dumps after the page's script ran must hold every chart with one point per batch of
 * the history and one bar per state partition.
 */
class ReportBrowserTest {
  private final SparkSession spark = SparkTestSession.get();

  @TempDir Path tmp;

  @Test
  void chartsRenderInHeadlessChromium() throws Exception {
    String chromium = Chromium.installed(); // installs it on a fresh machine (root, apt-get)

    Path history = tmp.resolve("history");
    Path checkpoint = tmp.resolve("checkpoint");
    StreamRun input = new StreamRun(spark, tmp.resolve("input"));
    for (int i = 0; i < 5; i++) {
      input.writeEvents(i, 200, 40);
    }
    StreamMonitor monitor =
        new StreamMonitor(
            MonitorSettings.defaultSettings()
                .with("history", history.toString())
                .with("idleTimeoutMs", "0"));
    spark.streams().addListener(monitor);
    Map<String, String> conf = StateStores.ROCKSDB_CHANGELOG.withPartitions(3);
    Runnable restoreSettings = SessionConf.set(spark, conf);
    try {
      runUntilCaughtUp(checkpoint, history, 5);
      // a repartition between two runs, to be marked on the time axes
      int moved =
          new StateShiftCli(System.out, System.err)
              .run(
                  new String[] {
                    "repartition",
                    "--checkpoint",
                    checkpoint.toString(),
                    "--partitions",
                    "4",
                    "--assume-stopped"
                  });
      assertThat(moved).isZero();
      for (int i = 5; i < 8; i++) {
        input.writeEvents(i, 200, 40);
      }
      runUntilCaughtUp(checkpoint, history, 8);
    } finally {
      spark.streams().removeListener(monitor);
      monitor.close();
      restoreSettings.run();
    }
    int batches = historyBatches(history);
    assertThat(batches).isGreaterThanOrEqualTo(8);

    Path page = tmp.resolve("report.html");
    int exit =
        new StateShiftCli(System.out, System.err)
            .run(
                new String[] {
                  "report",
                  "--checkpoint",
                  checkpoint.toString(),
                  "--history",
                  history.toString(),
                  "--cores",
                  "2",
                  "--out",
                  page.toString()
                });
    assertThat(exit).isZero();
    String html = Files.readString(page);
    assertThat(html)
        .as("self-contained: nothing loaded from elsewhere")
        .doesNotContainPattern("(src|href)\\s*=|<link|url\\(|@import|fetch\\(|XMLHttpRequest");

    String dom = dumpDom(chromium, page);
    assertThat(dom).contains("data-rendered=\"true\"");
    // every card holds a chart with data points: none is empty when a history exists
    assertThat(dom).doesNotContain("class=\"empty\"");
    for (String id : List.of("duration", "rates", "state", "bytes", "lag", "skew")) {
      Matcher points = Pattern.compile("data-points=\"(\\d+)\"").matcher(chart(dom, id));
      assertThat(points.find()).as(id).isTrue();
      assertThat(Integer.parseInt(points.group(1))).as(id).isPositive();
    }
    assertThat(countPoints(dom, "duration", "batch duration")).isEqualTo(batches);
    assertThat(countPoints(dom, "rates", "input rows/s")).isEqualTo(batches);
    assertThat(countPoints(dom, "rates", "processed rows/s")).isEqualTo(batches);
    assertThat(countPoints(dom, "state", "operator 0:stateStoreSave")).isEqualTo(batches);
    assertThat(countPoints(dom, "bytes", "operator 0:stateStoreSave")).isEqualTo(batches);
    assertThat(countPoints(dom, "lag", "watermark lag")).isPositive();
    assertThat(chart(dom, "duration")).contains("trigger interval").contains("<polyline");
    // the repartition is marked on every time axis
    for (String id : List.of("duration", "rates", "state", "bytes", "lag")) {
      assertThat(count(chart(dom, id), "class=\"change\"")).as(id).isEqualTo(1);
      assertThat(chart(dom, id)).as(id).contains("3\u21924");
    }
    // a wall-clock axis in rounded steps (hh:mm:ss), values with their units
    assertThat(chart(dom, "duration"))
        .containsPattern("class=\"xtick\"[^>]*>\\d\\d:\\d\\d(:\\d\\d)?<")
        .containsPattern("class=\"ytick\"[^>]*>[\\d.]+ (ms|s)<")
        .contains("time (UTC)");
    assertThat(chart(dom, "bytes")).containsPattern("class=\"ytick\"[^>]*>[\\d.]+ (B|KB|MB)<");
    assertThat(count(chart(dom, "skew"), "class=\"bar\"")).isEqualTo(4);
    assertThat(count(dom, "class=\"finding\"")).isPositive();
    assertThat(dom).contains("PARTITIONS");

    // as a person sees it: a screenshot with the charts drawn in colour, not a blank page
    java.awt.image.BufferedImage shot = screenshot(chromium, page);
    java.util.Set<Integer> colours = new java.util.HashSet<>();
    for (int y = 0; y < shot.getHeight(); y += 2) {
      for (int x = 0; x < shot.getWidth(); x += 2) {
        colours.add(shot.getRGB(x, y) & 0xffffff);
      }
    }
    // the series' colours are on the page: blue, orange-red, and the marks' purple
    assertThat(colours).as("colours in the screenshot").hasSizeGreaterThan(50);
    assertThat(colours.stream().anyMatch(c -> near(c, 0x2f6fdb))).as("blue series").isTrue();
    assertThat(colours.stream().anyMatch(c -> near(c, 0xa05195))).as("marks").isTrue();
  }

  private static boolean near(int rgb, int target) {
    int d = 0;
    for (int shift = 0; shift <= 16; shift += 8) {
      d += Math.abs(((rgb >> shift) & 0xff) - ((target >> shift) & 0xff));
    }
    return d < 30;
  }

  /** Runs the query until it has processed every input file, and the history has the batches. */
  private void runUntilCaughtUp(Path checkpoint, Path history, int batches) throws Exception {
    StreamingQuery query =
        StatefulQueries.WINDOWED_COUNT
            .apply(
                spark
                    .readStream()
                    .schema(StreamRun.EVENT_SCHEMA)
                    .option("maxFilesPerTrigger", 1)
                    .json(tmp.resolve("input").toString()))
            .writeStream()
            .queryName("report_demo")
            .outputMode("append")
            .trigger(Trigger.ProcessingTime(250))
            .foreachBatch((VoidFunction2<Dataset<Row>, Long>) (batch, id) -> batch.count())
            .option("checkpointLocation", checkpoint.toString())
            .start();
    query.processAllAvailable();
    query.stop();
    long deadline = System.currentTimeMillis() + 10_000; // the listener runs asynchronously
    while (historyBatches(history) < batches && System.currentTimeMillis() < deadline) {
      Thread.sleep(100);
    }
  }

  /** A PNG screenshot of the page in headless Chromium, as a person would see it. */
  private java.awt.image.BufferedImage screenshot(String chromium, Path page) throws Exception {
    Path profile = Files.createTempDirectory(tmp, "chromium-shot");
    Path png = tmp.resolve("report.png");
    Path err = tmp.resolve("chromium-shot.log");
    Process process =
        new ProcessBuilder(
                chromium,
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                "--no-first-run",
                "--disable-background-networking",
                "--disable-component-update",
                "--disable-sync",
                "--disable-dev-shm-usage",
                "--hide-scrollbars",
                "--window-size=1200,1800",
                "--user-data-dir=" + profile,
                "--screenshot=" + png,
                page.toUri().toString())
            .redirectErrorStream(true)
            .redirectOutput(err.toFile())
            .start();
    if (!process.waitFor(90, TimeUnit.SECONDS)) {
      process.destroyForcibly();
      throw new AssertionError("Chromium did not finish in 90 s: " + Files.readString(err));
    }
    assertThat(png).as("screenshot; Chromium's log: %s", Files.readString(err)).exists();
    return javax.imageio.ImageIO.read(png.toFile());
  }

  private int historyBatches(Path history) {
    if (!Files.exists(history)) {
      return 0;
    }
    return ProgressHistory.read(history.toString(), spark.sparkContext().hadoopConfiguration())
        .batches()
        .size();
  }

  /** Runs headless Chromium on the page and returns the DOM after its scripts ran. */
  private String dumpDom(String chromium, Path page) throws Exception {
    Path profile = Files.createTempDirectory(tmp, "chromium-profile");
    List<String> command =
        new ArrayList<>(
            List.of(
                chromium,
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                "--disable-quic",
                "--no-first-run",
                "--disable-background-networking",
                "--disable-component-update",
                "--disable-sync",
                "--disable-dev-shm-usage",
                "--user-data-dir=" + profile,
                "--dump-dom",
                page.toUri().toString()));
    Path out = tmp.resolve("dom.html");
    Path err = tmp.resolve("chromium.log");
    Process process =
        new ProcessBuilder(command)
            .redirectOutput(out.toFile())
            .redirectError(err.toFile())
            .start();
    if (!process.waitFor(90, TimeUnit.SECONDS)) {
      process.destroyForcibly();
      throw new AssertionError("Chromium did not finish in 90 s: " + Files.readString(err));
    }
    String dom = Files.readString(out, StandardCharsets.UTF_8);
    assertThat(dom).as("Chromium output; its log: %s", Files.readString(err)).contains("<svg");
    return dom;
  }

  /** The markup of one chart's container, from its id to the next card. */
  private static String chart(String dom, String id) {
    int start = dom.indexOf("id=\"" + id + "\"");
    assertThat(start).as("chart " + id).isPositive();
    int end = dom.indexOf("class=\"card\"", start);
    return dom.substring(start, end < 0 ? dom.length() : end);
  }

  private static int countPoints(String dom, String chartId, String series) {
    return count(chart(dom, chartId), "class=\"pt\" data-series=\"" + series + "\"");
  }

  private static int count(String text, String needle) {
    Matcher m = Pattern.compile(Pattern.quote(needle)).matcher(text);
    int n = 0;
    while (m.find()) {
      n++;
    }
    return n;
  }
}
