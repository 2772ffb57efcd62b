import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.stream.Stream;

/**
 * Writes the current results table of docs/performance.md from bench/results: for each benchmark
 * command (options that only say where files go left out, heap included), the newest results file,
 * one row per case it measured. Run by bench/run after a benchmark, or alone with bench/table.
 *
 * <p>Usage: {@code java -cp <jackson> bench/ResultsTable.java <results dir> <markdown file>}. The
 * table replaces what stands between the markers {@code <!-- results:begin -->} and {@code
 * <!-- results:end -->}; the table of every Spark line (fresh-process stateshift against the
 * line's built-in runner, or the replay where it has none) what stands between {@code
 * <!-- lines:begin -->} and {@code <!-- lines:end -->}. Each row names its Spark version.
 */
public class ResultsTable {
  private static final String BEGIN = "<!-- results:begin -->";
  private static final String END = "<!-- results:end -->";
  private static final String LINES_BEGIN = "<!-- lines:begin -->";
  private static final String LINES_END = "<!-- lines:end -->";
  private static final ObjectMapper JSON = new ObjectMapper();

  public static void main(String[] args) throws IOException {
    Path resultsDir = Path.of(args[0]);
    Path doc = Path.of(args[1]);
    Map<String, Path> newest = new LinkedHashMap<>();
    List<Path> files;
    try (Stream<Path> listing = Files.list(resultsDir)) {
      files = listing.filter(p -> p.getFileName().toString().matches("repartition-.*\\.json"))
          .sorted().toList(); // the names sort by time
    }
    List<Path> superseded = new ArrayList<>();
    for (Path file : files) {
      JsonNode env = JSON.readTree(file.toFile()).path("environment");
      Path older = newest.put(commandKey(env), file);
      if (older != null) {
        superseded.add(older);
      }
    }
    List<Row> rows = new ArrayList<>();
    List<Row> lineRows = new ArrayList<>();
    for (Path file : newest.values()) {
      JsonNode results = JSON.readTree(file.toFile());
      if (!results.path("failure").isNull() && !results.path("failure").isMissingNode()) {
        continue; // a run that stopped on a failure is no current result
      }
      String name = file.getFileName().toString().replaceFirst("\\.json$", "");
      long heapMb = results.path("environment").path("maxHeapBytes").asLong() >> 20;
      String master = results.path("environment").path("master").asText();
      String spark = results.path("environment").path("spark").asText();
      String line = line(results.path("environment"));
      for (JsonNode c : results.path("cases")) {
        rows.add(new Row(c.path("shape").asText(), provider(c, master),
            c.path("keys").asLong(), -c.path("from").asLong(), line, name,
            row(c, name, heapMb, master, spark)));
        String[] lineRow = lineRow(c, name, master, spark);
        if (lineRow != null) {
          lineRows.add(new Row(c.path("shape").asText(), provider(c, master),
              c.path("keys").asLong(), -c.path("from").asLong(), line, name, lineRow));
        }
      }
    }
    Comparator<Row> order = Comparator.comparing(Row::shape).thenComparing(Row::provider)
        .thenComparingLong(Row::keys).thenComparingLong(Row::from)
        .thenComparing(Row::line, Comparator.reverseOrder()).thenComparing(Row::file);
    rows.sort(order);
    lineRows.sort(Comparator.comparing(Row::line, Comparator.reverseOrder())
        .thenComparing(Row::provider).thenComparingLong(Row::keys).thenComparingLong(Row::from)
        .thenComparing(Row::file));
    StringBuilder table = new StringBuilder();
    table.append("| case | Spark | from->to | results file | stateshift s | built-in s | built-in / "
        + "stateshift | floor s | stateshift / floor | cold stateshift s | cold built-in s | cold "
        + "built-in / stateshift | on-demand restart s (plain restart s) | stateshift peak heap "
        + "MB (-Xmx) | stateshift rows/s | ms per store above floor | migrate to the other provider s "
        + "(migrate / stateshift) | from a prepared layout s (prepared / stateshift) | erase of 1% "
        + "of the keys s (erase / stateshift) |\n");
    table.append("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n");
    for (Row r : rows) {
      table.append("| ").append(String.join(" | ", r.cells())).append(" |\n");
    }
    StringBuilder lines = new StringBuilder();
    lines.append("| Spark | case | keys | from->to | stateshift s | cold stateshift s | "
        + "compared with | its time s | ratio (cold) | ratio (warm) | results file |\n");
    lines.append("|---|---|---|---|---|---|---|---|---|---|---|\n");
    for (Row r : lineRows) {
      lines.append("| ").append(String.join(" | ", r.cells())).append(" |\n");
    }
    String text = Files.readString(doc);
    String updated = replaceBetween(replaceBetween(text, BEGIN, END, table, doc), LINES_BEGIN,
        LINES_END, lines, doc);
    if (!updated.equals(text)) {
      Files.writeString(doc, updated);
    }
    System.err.println("bench: " + doc + ": " + rows.size() + " row(s) from " + newest.size()
        + " results file(s)");
    for (Path old : superseded) {
      String stem = old.getFileName().toString().replaceFirst("\\.json$", "");
      System.err.println("bench: superseded by a newer run of the same command (git rm it): "
          + resultsDir.resolve(stem) + ".{md,json}");
    }
  }

  private static String replaceBetween(String text, String begin, String end,
      CharSequence content, Path doc) {
    int b = text.indexOf(begin);
    int e = text.indexOf(end);
    if (b < 0 || e < b) {
      throw new IllegalStateException(doc + " has no " + begin + " ... " + end + " markers");
    }
    return text.substring(0, b + begin.length()) + "\n" + content + text.substring(e);
  }

  /** The Spark line of a results file: recorded since the benchmark ran on every line. */
  static String line(JsonNode env) {
    if (env.hasNonNull("sparkLine")) {
      return env.path("sparkLine").asText();
    }
    String[] v = env.path("spark").asText("4.2").split("\\.");
    return v.length >= 2 ? v[0] + "." + v[1] : env.path("spark").asText();
  }

  /**
   * A row of the table of every Spark line: a case with fresh-process stateshift times and the
   * line's comparison (Spark's built-in runner in a fresh process where the line has one, else
   * the replay, which runs in the benchmark's warm JVM), on the local disk in local mode.
   */
  private static String[] lineRow(JsonNode c, String file, String master, String spark) {
    JsonNode m = c.path("methods");
    if (!c.path("checkpointFs").asText("local").equals("local") || master.startsWith("spark://")
        || !m.path("cold-stateshift").has("minMillis")) {
      return null;
    }
    boolean builtin = m.path("cold-builtin").has("minMillis");
    if (!builtin && !m.path("replay").has("minMillis")) {
      return null;
    }
    double cold = m.path("cold-stateshift").path("minMillis").asDouble();
    double warm = m.path("stateshift").path("minMillis").asDouble();
    JsonNode other = builtin ? m.path("cold-builtin") : m.path("replay");
    JsonNode otherWarm = builtin ? m.path("builtin") : m.path("replay");
    double o = other.path("minMillis").asDouble();
    return new String[] {
        spark,
        c.path("shape").asText() + ", " + provider(c, master),
        String.format(Locale.ROOT, "%,d", c.path("keys").asLong()),
        c.path("from").asText() + "->" + c.path("to").asText(),
        seconds(m.path("stateshift").path("minMillis")),
        seconds(m.path("cold-stateshift").path("minMillis")),
        builtin ? "built-in runner, fresh process" : "replay, in the benchmark's JVM",
        seconds(other.path("minMillis")),
        String.format(Locale.ROOT, "%.2f", o / cold),
        otherWarm.has("minMillis") && warm > 0
            ? String.format(Locale.ROOT, "%.2f", otherWarm.path("minMillis").asDouble() / warm)
            : "-",
        "`" + file + "`"};
  }

  /**
   * The state store, where the checkpoint was when not on the local disk (--fs), and the cluster
   * when not in local mode (--master standalone).
   */
  static String provider(JsonNode c, String master) {
    String fs = c.path("checkpointFs").asText("local");
    return c.path("provider").asText() + switch (fs) {
      case "hdfs" -> ", checkpoint on HDFS";
      case "s3" -> ", checkpoint on S3";
      default -> "";
    } + (master.startsWith("spark://") ? ", standalone cluster of 2 Workers" : "");
  }

  /** One row of the table and what it is sorted by. */
  private record Row(String shape, String provider, long keys, long from, String line,
      String file, String[] cells) {}

  /** The command without the options that only say where files go, plus the heap. */
  private static String commandKey(JsonNode env) {
    List<String> words = new ArrayList<>(List.of(env.path("command").asText().split(" ")));
    List<String> kept = new ArrayList<>();
    for (int i = 0; i < words.size(); i++) {
      String w = words.get(i);
      if (w.equals("--work-dir") || w.equals("--out")) {
        i++;
      } else if (!w.equals("--keep") && !w.equals("--no-warmup") && !w.startsWith("--work-dir=")
          && !w.startsWith("--out=")) {
        kept.add(w);
      }
    }
    return String.join(" ", kept) + " heap=" + env.path("maxHeapBytes").asLong() + " line="
        + line(env);
  }

  private static String[] row(JsonNode c, String file, long heapMb, String master,
      String spark) {
    JsonNode m = c.path("methods");
    JsonNode ratios = c.path("ratiosOfMin");
    String onDemand = m.has("ondemand") && m.has("restart")
        ? seconds(m.path("ondemand").path("minMillis")) + " ("
            + seconds(m.path("restart").path("minMillis")) + ")"
        : "-";
    String migrate = m.has("migrate") && m.path("migrate").has("minMillis")
        ? seconds(m.path("migrate").path("minMillis")) + " ("
            + ratio(ratios.path("migrate/stateshift")) + ")"
        : "-";
    String prepared = m.has("prepared") && m.path("prepared").has("minMillis")
        ? seconds(m.path("prepared").path("minMillis")) + " ("
            + ratio(ratios.path("prepared/stateshift")) + ")"
        : "-";
    String erase = m.has("erase") && m.path("erase").has("minMillis")
        && m.path("stateshift").has("minMillis")
        ? seconds(m.path("erase").path("minMillis")) + " (" + String.format(Locale.ROOT, "%.2f",
            m.path("erase").path("minMillis").asDouble()
                / m.path("stateshift").path("minMillis").asDouble()) + ")"
        : "-";
    String heap = m.has("stateshift")
        ? (m.path("stateshift").path("maxHeapPeakBytes").asLong() >> 20) + " (" + heapMb + ")"
        : "-";
    return new String[] {
        c.path("shape").asText() + ", " + provider(c, master) + ", "
            + String.format(Locale.ROOT, "%,d", c.path("keys").asLong()) + " keys",
        spark,
        c.path("from").asText() + "->" + c.path("to").asText(),
        "`" + file + "`",
        minMedian(m.path("stateshift")),
        minMedian(m.path("builtin")),
        ratio(ratios.path("builtin/stateshift")),
        minMedian(m.path("floor")),
        ratio(ratios.path("stateshift/floor")),
        minMedian(m.path("cold-stateshift")),
        minMedian(m.path("cold-builtin")),
        ratio(ratios.path("coldBuiltin/coldStateshift")),
        onDemand,
        heap,
        c.path("stateshiftRowsPerSecond").isNumber()
            ? String.format(Locale.ROOT, "%,.0f", c.path("stateshiftRowsPerSecond").asDouble())
            : "-",
        c.path("stateshiftMsPerStoreAboveFloor").isNumber()
            ? String.format(Locale.ROOT, "%.1f",
                c.path("stateshiftMsPerStoreAboveFloor").asDouble())
            : "-",
        migrate,
        prepared,
        erase};
  }

  private static String minMedian(JsonNode method) {
    if (method.isMissingNode() || method.path("minMillis").isMissingNode()) {
      return "-";
    }
    return seconds(method.path("minMillis")) + " / " + seconds(method.path("medianMillis"));
  }

  /** Seconds as the results files print them. */
  private static String seconds(JsonNode millis) {
    double s = millis.asDouble() / 1000;
    return String.format(Locale.ROOT, s < 10 ? "%.2f" : "%.1f", s);
  }

  private static String ratio(JsonNode value) {
    return value.isNumber() ? String.format(Locale.ROOT, "%.2f", value.asDouble()) : "-";
  }
}
