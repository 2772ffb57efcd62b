package io.stateshift.report;

import io.stateshift.doctor.Sizes;
import io.stateshift.inventory.FleetReport;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Locale;
import java.util.function.Function;

/**
 * The fleet view as one self-contained HTML page (no script, no network): the streams' table, two
 * bar charts (state bytes and busy share per stream, as inline SVG) and the recommendations with
 * their evidence, in the colours of the stream report.
 */
public final class FleetPage {
  private FleetPage() {}

  public static void write(FleetReport fleet, Path out) {
    try {
      if (out.getParent() != null) {
        Files.createDirectories(out.getParent());
      }
      Files.writeString(out, render(fleet), StandardCharsets.UTF_8);
    } catch (IOException e) {
      throw new UncheckedIOException(
          "Cannot write the fleet page to " + out + ": " + e.getMessage(), e);
    }
  }

  public static String render(FleetReport fleet) {
    StringBuilder html = new StringBuilder();
    html.append(
        """
        <!DOCTYPE html>
        <html lang="en"><head><meta charset="utf-8">
        <meta name="viewport" content="width=device-width, initial-scale=1">
        <title>stateshift fleet</title>
        <style>
        body{font-family:system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:24px;color:#1d2433;background:#f7f8fa}
        h1{font-size:20px;margin:0 0 4px} h2{font-size:16px;margin:0 0 8px} .meta{color:#5b6475;font-size:13px;margin-bottom:16px}
        section{background:#fff;border:1px solid #dde1e8;border-radius:8px;padding:14px;margin-bottom:16px}
        .charts{display:grid;grid-template-columns:repeat(auto-fit,minmax(520px,1fr));gap:16px}
        table{border-collapse:collapse;width:100%;font-size:13px} th,td{border-top:1px solid #e6e9ef;padding:6px;text-align:left;vertical-align:top}
        td.n{text-align:right;font-variant-numeric:tabular-nums} .sev{font-weight:600;border-radius:4px;padding:1px 6px;font-size:12px}
        .ERROR{background:#fde2e1;color:#a4161a}.WARNING{background:#fff1cc;color:#8a5a00}.INFO{background:#e3f0ff;color:#1d4e89}
        svg text{font-size:11px;fill:#5b6475} .kind{font-weight:600;font-size:12px;color:#1d4e89} .qid{color:#8a93a3;font-size:11px}
        </style></head>
        <body>
        <h1>stateshift fleet</h1>
        """);
    long bytes =
        fleet.streams().stream().mapToLong(s -> s.stateBytes() == null ? 0 : s.stateBytes()).sum();
    html.append("<div class=\"meta\">")
        .append(fleet.streams().size())
        .append(" stream(s), ")
        .append(esc(Sizes.bytes(bytes)))
        .append(" of state, ")
        .append(fleet.recommendations().size())
        .append(" recommendation(s) &middot; generated ")
        .append(esc(fleet.generatedAt()))
        .append("</div>\n");

    html.append("<section><h2>Streams</h2><table id=\"streams\"><tr>");
    for (String h :
        List.of(
            "stream",
            "state store",
            "partitions",
            "state rows",
            "state bytes",
            "batches/h",
            "idle",
            "trigger",
            "batch p50 / p95",
            "worst finding")) {
      html.append("<th>").append(h).append("</th>");
    }
    html.append("</tr>\n");
    for (FleetReport.Stream s : fleet.streams()) {
      html.append("<tr class=\"stream\" data-stream=\"").append(esc(s.name())).append("\">");
      html.append("<td>").append(esc(s.name()));
      if (s.queryId() != null) {
        html.append("<br><span class=\"qid\">").append(esc(s.queryId())).append("</span>");
      }
      html.append("</td>");
      cell(html, s.error() != null ? "?" : s.providerShortName(), false);
      cell(html, s.partitions() == null ? "-" : s.partitions().toString(), true);
      cell(html, s.stateRows() == null ? "-" : String.format("%,d", s.stateRows()), true);
      cell(html, s.stateBytes() == null ? "-" : Sizes.bytes(s.stateBytes()), true);
      cell(
          html,
          s.batchesPerHour() == null ? "-" : String.format(Locale.ROOT, "%.2f", s.batchesPerHour()),
          true);
      cell(
          html,
          s.idleShare() == null ? "-" : String.format(Locale.ROOT, "%.1f%%", s.idleShare() * 100),
          true);
      cell(html, s.triggerIntervalMs() == null ? "-" : s.triggerIntervalMs() + " ms", true);
      cell(
          html,
          s.batchDurationMsMedian() == null
              ? "-"
              : s.batchDurationMsMedian() + " / " + s.batchDurationMsP95() + " ms",
          true);
      html.append("<td>");
      String severity = s.worstSeverity();
      if (severity != null) {
        html.append("<span class=\"sev ").append(severity).append("\">");
        html.append(severity).append("</span> ");
      }
      html.append(esc(s.error() != null ? s.error() : s.worst() == null ? "-" : s.worst()));
      html.append("</td></tr>\n");
    }
    html.append("</table></section>\n");

    html.append("<div class=\"charts\">");
    html.append("<section><h2>State bytes per stream</h2>");
    bars(
        html,
        "bytes",
        fleet.streams(),
        s -> s.stateBytes() == null ? null : (double) s.stateBytes(),
        true);
    html.append("</section><section><h2>Busy share per stream (1 - idle)</h2>");
    bars(html, "busy", fleet.streams(), FleetReport.Stream::busyShare, false);
    html.append("</section></div>\n");

    html.append("<section><h2>Recommendations</h2>");
    if (fleet.recommendations().isEmpty()) {
      html.append("<p>No recommendation: every stream suits how it runs.</p>");
    } else {
      html.append(
          "<table id=\"recommendations\"><tr><th>recommendation</th><th>streams</th>"
              + "<th>evidence</th><th>action</th></tr>\n");
      for (FleetReport.Recommendation r : fleet.recommendations()) {
        html.append("<tr class=\"recommendation\" data-kind=\"").append(r.kind()).append("\">");
        html.append("<td><span class=\"kind\">")
            .append(r.kind())
            .append("</span><br>")
            .append(esc(r.title()))
            .append("</td>");
        cell(html, String.join(", ", r.streams()), false);
        cell(html, r.evidence(), false);
        cell(html, r.action(), false);
        html.append("</tr>\n");
      }
      html.append("</table>");
    }
    html.append("</section>\n</body></html>\n");
    return html.toString();
  }

  /** A horizontal bar per stream, scaled to the largest value; "-" where there is none. */
  private static void bars(
      StringBuilder html,
      String id,
      List<FleetReport.Stream> streams,
      Function<FleetReport.Stream, Double> value,
      boolean asBytes) {
    int rowHeight = 22;
    int width = 560;
    int label = 240;
    int height = Math.max(1, streams.size()) * rowHeight + 8;
    double max =
        streams.stream().map(value).filter(v -> v != null).mapToDouble(v -> v).max().orElse(0);
    html.append(
        String.format(
            "<svg id=\"%s\" width=\"%d\" height=\"%d\" viewBox=\"0 0 %d %d\">",
            id, width, height, width, height));
    int y = 4;
    for (FleetReport.Stream s : streams) {
      Double known = value.apply(s);
      double v = known == null ? 0 : known;
      double w = max <= 0 ? 0 : v / max * (width - label - 70);
      String name =
          s.name().length() > 38 ? "\u2026" + s.name().substring(s.name().length() - 37) : s.name();
      html.append(
          String.format(
              Locale.ROOT,
              "<text x=\"%d\" y=\"%d\" text-anchor=\"end\">%s</text>",
              label - 6,
              y + 15,
              esc(name)));
      html.append(
          String.format(
              Locale.ROOT,
              "<rect class=\"bar\" x=\"%d\" y=\"%d\" width=\"%.1f\" height=\"%d\" fill=\"#2f6fdb\">"
                  + "<title>%s</title></rect>",
              label,
              y + 3,
              w,
              rowHeight - 6,
              esc(s.name())));
      String text =
          known == null
              ? "-"
              : asBytes ? Sizes.bytes((long) v) : String.format(Locale.ROOT, "%.1f%%", v * 100);
      html.append(
          String.format(
              Locale.ROOT,
              "<text x=\"%.1f\" y=\"%d\">%s</text>",
              label + w + 6,
              y + 15,
              esc(text)));
      y += rowHeight;
    }
    html.append("</svg>");
  }

  private static void cell(StringBuilder html, String text, boolean numeric) {
    html.append(numeric ? "<td class=\"n\">" : "<td>")
        .append(esc(text).replace("\n", "<br>"))
        .append("</td>");
  }

  private static String esc(String text) {
    return text.replace("&", "&amp;")
        .replace("<", "&lt;")
        .replace(">", "&gt;")
        .replace("\"", "&quot;");
  }
}
