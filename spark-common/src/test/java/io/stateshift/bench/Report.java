package io.stateshift.bench;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.SerializationFeature;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/** The Markdown table and the JSON file of a benchmark run. */
final class Report {
  private Report() {}

  static String markdown(
      List<Results.Case> cases, Map<String, Object> environment, boolean cold, String failure) {
    StringBuilder out = new StringBuilder();
    out.append("# stateshift repartition benchmark, ")
        .append(environment.get("started"))
        .append("\n\n");
    out.append("`").append(environment.get("command")).append("`  \n");
    out.append(
        String.format(
            Locale.ROOT,
            "%s cores, %s, Java %s, Spark %s, -Xmx %d MB, %s; stateshift at %s%s%n%n",
            environment.get("cores"),
            environment.get("master"),
            environment.get("java"),
            environment.get("spark"),
            (Long) environment.get("maxHeapBytes") >> 20,
            environment.get("repetitionsText"),
            environment.get("gitCommit"),
            Boolean.TRUE.equals(environment.get("gitDirty"))
                ? " (working tree with uncommitted " + "changes)"
                : ""));
    if (failure != null) {
      out.append("**BENCHMARK FAILED:** ").append(failure).append("\n\n");
    }
    out.append(
        "Times in seconds, min / median of the warm runs (same JVM as the build, a fresh "
            + "copy of the checkpoint for every run). 1 = stateshift, 2 = Spark's built-in runner, "
            + "3 = replay of all input into a new checkpoint, 4 = floor (read all state once, write "
            + "the same bytes once), 5 = restart of the stopped query with "
            + "`spark.sql.streaming.stateStore.partitions` set (on-demand repartition, no new input), "
            + "6 = the same restart without the setting. Ratios use the min times; (5-6)/1 is what "
            + "the on-demand path costs relative to the command. Peak heap: highest used Java heap "
            + "during the run, garbage included, max over runs. (1-4) ms per store: stateshift's time "
            + "above the floor over the stores it opens, read or written ((from + to) x stores per "
            + "partition), an upper bound of the fixed cost of one store.\n\n");
    List<String> header =
        new ArrayList<>(
            List.of(
                "shape",
                "provider",
                "keys",
                "state MB",
                "from->to",
                "1 stateshift s",
                "2 built-in s",
                "3 replay s",
                "4 floor s",
                "2/1",
                "3/1",
                "1/4",
                "stateshift rows/s",
                "(1-4) ms per store",
                "peak heap MB 1 / 2 / 3 / 4"));
    boolean onDemand = cases.stream().anyMatch(c -> c.methods.containsKey(Results.ONDEMAND));
    if (onDemand) {
      header.addAll(List.of("5 on-demand restart s", "6 plain restart s", "(5-6)/1"));
    }
    boolean migrate = cases.stream().anyMatch(c -> c.methods.containsKey(Results.MIGRATE));
    if (migrate) {
      header.addAll(List.of("7 migrate to the other provider s", "7/1"));
    }
    boolean prepared = cases.stream().anyMatch(c -> c.methods.containsKey(Results.PREPARED));
    if (prepared) {
      header.addAll(List.of("8 from a prepared layout s", "8/1"));
    }
    if (cold) {
      header.addAll(List.of("cold 1 s", "cold 2 s", "cold 2/1"));
    }
    row(out, header);
    row(out, header.stream().map(h -> "---").toList());
    for (Results.Case c : cases) {
      List<String> cells = new ArrayList<>(caseColumns(c));
      cells.addAll(
          List.of(
              mb(c.stateBytes),
              c.from + "->" + c.to,
              time(c, Results.STATESHIFT),
              time(c, Results.BUILTIN),
              time(c, Results.REPLAY),
              time(c, Results.FLOOR),
              ratio(c.ratio(Results.BUILTIN, Results.STATESHIFT)),
              ratio(c.ratio(Results.REPLAY, Results.STATESHIFT)),
              ratio(c.ratio(Results.STATESHIFT, Results.FLOOR)),
              Double.isNaN(c.stateshiftRowsPerSecond())
                  ? "n/a"
                  : String.format(Locale.ROOT, "%,.0f", c.stateshiftRowsPerSecond()),
              Double.isNaN(c.stateshiftMsPerStore())
                  ? "n/a"
                  : String.format(Locale.ROOT, "%.1f", c.stateshiftMsPerStore()),
              String.join(
                  " / ",
                  heap(c, Results.STATESHIFT),
                  heap(c, Results.BUILTIN),
                  heap(c, Results.REPLAY),
                  heap(c, Results.FLOOR))));
      if (onDemand) {
        cells.addAll(
            List.of(
                time(c, Results.ONDEMAND),
                time(c, Results.RESTART),
                ratio(c.onDemandOverCommand())));
      }
      if (migrate) {
        cells.addAll(
            List.of(time(c, Results.MIGRATE), ratio(c.ratio(Results.MIGRATE, Results.STATESHIFT))));
      }
      if (prepared) {
        cells.addAll(
            List.of(
                time(c, Results.PREPARED), ratio(c.ratio(Results.PREPARED, Results.STATESHIFT))));
      }
      if (cold) {
        cells.addAll(
            List.of(
                time(c, Results.COLD_STATESHIFT),
                time(c, Results.COLD_BUILTIN),
                ratio(c.ratio(Results.COLD_BUILTIN, Results.COLD_STATESHIFT))));
      }
      row(out, cells);
    }
    out.append("\n## Where the time goes (fastest run of each)\n\n");
    out.append(
        "stateshift phases from `RepartitionResult.phaseMillis()`; Spark stages from a "
            + "listener: wall s x tasks (summed task CPU s). Live heap = highest heap left after a GC "
            + "during the run.\n\n");
    List<String> h2 =
        new ArrayList<>(
            List.of(
                "shape",
                "provider",
                "keys",
                "from->to",
                "stateshift phases s",
                "stateshift stages",
                "stateshift live heap MB",
                "built-in stages",
                "built-in live heap MB"));
    if (onDemand) {
      // query = the restart's time outside the repartition (start, checks, stop)
      h2.add("on-demand phases s");
    }
    row(out, h2);
    row(out, h2.stream().map(h -> "---").toList());
    for (Results.Case c : cases) {
      Results.Method ss = c.methods.get(Results.STATESHIFT);
      Results.Method bi = c.methods.get(Results.BUILTIN);
      Results.Run ssRun = ss == null ? null : ss.fastest();
      Results.Run biRun = bi == null ? null : bi.fastest();
      List<String> cells = new ArrayList<>(caseColumns(c));
      cells.addAll(
          List.of(
              c.from + "->" + c.to,
              phases(ssRun),
              stages(ssRun),
              ssRun == null ? "n/a" : mb(ssRun.heapPeakAfterGcBytes),
              stages(biRun),
              biRun == null ? "n/a" : mb(biRun.heapPeakAfterGcBytes)));
      if (onDemand) {
        Results.Method od = c.methods.get(Results.ONDEMAND);
        cells.add(phases(od == null ? null : od.fastest()));
      }
      row(out, cells);
    }
    return out.toString();
  }

  static void writeJson(Path file, Map<String, Object> root) {
    try {
      Files.createDirectories(file.getParent());
      new ObjectMapper().enable(SerializationFeature.INDENT_OUTPUT).writeValue(file.toFile(), root);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  private static void row(StringBuilder out, List<String> cells) {
    out.append("| ").append(String.join(" | ", cells)).append(" |\n");
  }

  private static String time(Results.Case c, String method) {
    Results.Method m = c.methods.get(method);
    if (m == null) {
      return "-";
    }
    if (m.error != null) {
      return "failed";
    }
    if (m.skipped != null && m.skipped.startsWith("refused")) {
      return "refused";
    }
    if (m.skipped != null || m.runs.isEmpty()) {
      return "n/a";
    }
    return secs(m.min()) + " / " + secs(m.median());
  }

  private static String heap(Results.Case c, String method) {
    Results.Method m = c.methods.get(method);
    return m == null || m.runs.isEmpty() ? "n/a" : Long.toString(m.maxPeakHeap() >> 20);
  }

  /** The columns that name a case: shape, provider and keys. */
  private static List<String> caseColumns(Results.Case c) {
    return List.of(c.shape, c.providerLabel(), String.format(Locale.ROOT, "%,d", c.keys));
  }

  private static String phases(Results.Run run) {
    if (run == null || run.phases.isEmpty()) {
      return "n/a";
    }
    return String.join(
        " ",
        run.phases.entrySet().stream().map(e -> e.getKey() + "=" + secs(e.getValue())).toList());
  }

  private static String stages(Results.Run run) {
    if (run == null || run.stages.isEmpty()) {
      return "n/a";
    }
    List<String> parts = new ArrayList<>();
    for (Map<String, Object> s : run.stages) {
      String name = String.valueOf(s.get("name"));
      int at = name.indexOf(" at ");
      String op = at > 0 ? name.substring(0, at) : name;
      String where = at > 0 ? name.substring(at + 4).replaceAll("\\.(java|scala):", ":") : "";
      Object cpu = s.get("taskCpuMillis");
      parts.add(
          String.format(
              Locale.ROOT,
              "%s@%s %s x%s (%s)",
              op,
              where,
              secs(((Number) s.get("wallMillis")).doubleValue()),
              s.get("tasks"),
              cpu == null ? "?" : secs(((Number) cpu).doubleValue())));
    }
    return String.join("; ", parts);
  }

  static String secs(double millis) {
    double s = millis / 1000.0;
    return String.format(Locale.ROOT, s < 10 ? "%.2f" : "%.1f", s);
  }

  static String mb(long bytes) {
    return String.format(Locale.ROOT, "%.1f", bytes / 1048576.0);
  }

  private static String ratio(double r) {
    return Double.isNaN(r) ? "n/a" : String.format(Locale.ROOT, "%.2f", r);
  }
}
