package io.stateshift.report;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.stateshift.HistoryEntry;
import io.stateshift.doctor.DoctorReport;
import io.stateshift.doctor.Finding;
import io.stateshift.monitor.ProgressHistory;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Instant;
import java.util.List;

/**
 * One self-contained HTML page (no network needed to view it): the data as JSON inside the page and
 * a small script that draws the charts as inline SVG when the page loads.
 */
public final class HtmlReport {
  private static final ObjectMapper JSON = new ObjectMapper();

  private HtmlReport() {}

  /** Writes the page; {@code history} may be null (then the time charts say so). */
  public static void write(DoctorReport report, ProgressHistory history, Path out) {
    write(report, history, List.of(), out);
  }

  /**
   * Writes the page, with the checkpoint's repartitions and migrations ({@code changes}, from
   * {@code StateShift.history}) marked on its time axes.
   */
  public static void write(
      DoctorReport report, ProgressHistory history, List<HistoryEntry> changes, Path out) {
    try {
      if (out.getParent() != null) {
        Files.createDirectories(out.getParent());
      }
      Files.writeString(out, render(report, history, changes), StandardCharsets.UTF_8);
    } catch (IOException e) {
      throw new UncheckedIOException(
          "Cannot write the report to " + out + ": " + e.getMessage(), e);
    }
  }

  public static String render(DoctorReport report, ProgressHistory history) {
    return render(report, history, List.of());
  }

  public static String render(
      DoctorReport report, ProgressHistory history, List<HistoryEntry> changes) {
    ObjectNode data = JSON.createObjectNode();
    data.put("checkpoint", report.checkpoint());
    data.put("queryId", report.queryId());
    data.put("generatedAt", Instant.now().toString());
    data.put("provider", report.stateStoreProvider());
    data.put("partitions", report.partitions());
    data.put("recommendedPartitions", report.recommendedPartitions());
    data.put("cores", report.cores());
    data.put("worst", report.worst().name());
    ArrayNode batches = data.putArray("batches");
    List<String> operators = history == null ? List.of() : history.operators();
    if (history != null) {
      for (ProgressHistory.Batch b : history.batches()) {
        ObjectNode n = batches.addObject();
        n.put("batchId", b.batchId());
        n.put("runId", b.runId());
        n.put("t", b.timestampMs());
        n.put("durationMs", b.durationMs());
        n.put("triggerMs", b.triggerIntervalMs());
        n.put("inputRate", b.inputRowsPerSecond());
        n.put("processingRate", b.processedRowsPerSecond());
        n.put("inputRows", b.inputRows());
        ObjectNode state = n.putObject("stateRows");
        b.stateRows().forEach(state::put);
        ObjectNode bytes = n.putObject("stateBytes");
        // a store that reports neither size: no point rather than a false zero
        b.stateBytes().forEach((op, v) -> bytes.put(op, v > 0 ? v : null));
        if (b.watermarkDelayMs() >= 0) {
          n.put("watermarkLagMs", b.watermarkDelayMs());
        } else {
          n.putNull("watermarkLagMs");
        }
      }
    }
    ArrayNode marks = data.putArray("changes");
    for (HistoryEntry h : changes) {
      if (h.startedAt().isEmpty() || h.outcome() != HistoryEntry.Outcome.COMPLETED) {
        continue;
      }
      ObjectNode m = marks.addObject();
      m.put("t", h.startedAt().get().toEpochMilli());
      m.put("kind", h.kind().name().toLowerCase(java.util.Locale.ROOT));
      m.put("from", h.fromPartitions());
      m.put("to", h.toPartitions());
      m.put("batch", h.batch());
    }
    data.set("operators", JSON.valueToTree(operators));
    // Without a history, state over time comes from the retained state versions.
    data.set("growth", JSON.valueToTree(report.stateGrowth()));
    data.set("stores", JSON.valueToTree(report.storePartitions()));
    data.set("sources", JSON.valueToTree(report.sourceBatches()));
    ArrayNode findings = data.putArray("findings");
    for (Finding f : report.findings()) {
      findings.add(JSON.valueToTree(f));
    }
    String json;
    try {
      json = JSON.writeValueAsString(data).replace("</", "<\\/").replace("<!--", "<\\!--");
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
    return TEMPLATE
        .replace("/*DATA*/null", json)
        .replace("{{title}}", escape("stateshift report: " + report.checkpoint()));
  }

  private static String escape(String text) {
    return text.replace("&", "&amp;")
        .replace("<", "&lt;")
        .replace(">", "&gt;")
        .replace("\"", "&quot;");
  }

  private static final String TEMPLATE =
      """
      <!DOCTYPE html>
      <html lang="en"><head><meta charset="utf-8">
      <meta name="viewport" content="width=device-width, initial-scale=1">
      <title>{{title}}</title>
      <style>
      body{font-family:system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:24px;color:#1d2433;background:#f7f8fa}
      h1{font-size:20px;margin:0 0 4px} h2{font-size:16px;margin:0 0 8px}
      .meta{color:#5b6475;font-size:13px;margin-bottom:16px}
      .grid{display:grid;grid-template-columns:repeat(auto-fit,minmax(520px,1fr));gap:16px}
      .card{background:#fff;border:1px solid #dde1e8;border-radius:8px;padding:14px}
      .empty{color:#8a93a3;font-style:italic;padding:40px 0;text-align:center}
      table{border-collapse:collapse;width:100%;font-size:13px} td,th{border-top:1px solid #e6e9ef;padding:6px;vertical-align:top;text-align:left}
      .sev{font-weight:600;border-radius:4px;padding:1px 6px;font-size:12px}
      .ERROR{background:#fde2e1;color:#a4161a}.WARNING{background:#fff1cc;color:#8a5a00}.INFO{background:#e3f0ff;color:#1d4e89}
      .legend{font-size:12px;color:#5b6475} svg text{font-size:11px;fill:#5b6475}
      code{background:#f0f2f5;padding:1px 3px;border-radius:3px}
      </style></head>
      <body>
      <h1>stateshift report</h1>
      <div class="meta" id="meta"></div>
      <div class="grid">
        <div class="card"><h2>Batch duration vs trigger interval</h2><div id="duration"></div></div>
        <div class="card"><h2>Input vs processing rate</h2><div id="rates"></div></div>
        <div class="card"><h2>State rows over time, per operator</h2><div id="state"></div></div>
        <div class="card"><h2>State size over time, per operator (RocksDB's SST files, else memory)</h2><div id="bytes"></div></div>
        <div class="card"><h2>Watermark lag (newest event time minus watermark)</h2><div id="lag"></div></div>
        <div class="card"><h2>Rows per state partition (skew)</h2><div id="skew"></div></div>
      </div>
      <div class="card" style="margin-top:16px"><h2>Doctor's findings</h2><div id="findings"></div></div>
      <script>
      const DATA = /*DATA*/null;
      const NS = 'http://www.w3.org/2000/svg';
      const COLORS = ['#2f6fdb','#e4572e','#17a589','#a05195','#f2a541','#5b6475'];
      function el(name, attrs, parent, text) {
        const e = document.createElementNS(NS, name);
        for (const k in attrs) e.setAttribute(k, attrs[k]);
        if (text !== undefined) e.textContent = text;
        if (parent) parent.appendChild(e);
        return e;
      }
      // numbers with a unit: 'ms' (shown in ms, s, min), 'bytes' (B, KB, MB, GB), else a suffix
      function fmt(v, unit) {
        const a = Math.abs(v);
        const num = x => (Math.round(x * 10) / 10).toString();
        if (unit === 'ms') {
          if (a >= 120000) return num(v / 60000) + ' min';
          if (a >= 1000) return num(v / 1000) + ' s';
          return num(v) + ' ms';
        }
        if (unit === 'bytes') {
          if (a >= 1024 * 1024 * 1024) return num(v / 1073741824) + ' GB';
          if (a >= 1024 * 1024) return num(v / 1048576) + ' MB';
          if (a >= 1024) return num(v / 1024) + ' KB';
          return num(v) + ' B';
        }
        const suffix = unit ? ' ' + unit : '';
        if (a >= 1e6) return num(v / 1e6) + 'M' + suffix;
        if (a >= 1e3) return num(v / 1e3) + 'k' + suffix;
        return num(v) + suffix;
      }
      // a round step (1, 2 or 5 times a power of ten; powers of 1024 for bytes) near span/n
      function niceStep(span, n, unit) {
        if (span <= 0) return 1;
        const raw = span / n;
        if (unit === 'ms') {
          for (const m of [1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000, 10000, 15000, 30000,
              60000, 120000, 300000, 600000, 900000, 1800000, 3600000, 7200000, 21600000, 86400000]) {
            if (m >= raw) return m;
          }
        }
        if (unit === 'bytes' && raw >= 1024) {
          const p = Math.pow(1024, Math.floor(Math.log(raw) / Math.log(1024)));
          for (const m of [1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024]) if (m * p >= raw) return m * p;
        }
        const p = Math.pow(10, Math.floor(Math.log10(raw)));
        for (const m of [1, 2, 5, 10]) if (m * p >= raw) return m * p;
        return 10 * p;
      }
      const TIME_STEPS = [1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200, 10800,
        21600, 43200, 86400].map(x => x * 1000);
      function clock(t, step) {
        const iso = new Date(t).toISOString();
        return step >= 60000 ? iso.substring(11, 16) : iso.substring(11, 19);
      }
      function empty(id, text) {
        const d = document.getElementById(id);
        d.innerHTML = '';
        const p = document.createElement('div');
        p.className = 'empty'; p.textContent = text; d.appendChild(p);
      }
      // series: [{name, values:[number|null], dashed, points}] over xs; opts: {time, unit, xLabel,
      // marks: [{t, label}]} (time: xs are epoch ms, drawn on a wall-clock axis in UTC)
      function lineChart(id, xs, series, opts) {
        const W = 520, H = 260, L = 64, R = 14, T = 18, B = 40;
        const unit = opts.unit;
        const host = document.getElementById(id);
        host.innerHTML = '';
        const svg = el('svg', {width: W, height: H, viewBox: '0 0 ' + W + ' ' + H, 'class': 'chart'}, host);
        let max = 0;
        series.forEach(s => s.values.forEach(v => { if (v !== null && v > max) max = v; }));
        const yStep = niceStep(max > 0 ? max : 1, 4, unit);
        const yMax = Math.max(yStep, Math.ceil((max > 0 ? max : 1) / yStep) * yStep);
        const marks = (opts.marks || []);
        let xMin = Math.min(...xs), xMax = Math.max(...xs);
        if (opts.time) marks.forEach(m => { xMin = Math.min(xMin, m.t); xMax = Math.max(xMax, m.t); });
        if (xMax === xMin) { xMin -= opts.time ? 1000 : 1; xMax += opts.time ? 1000 : 1; }
        const x = v => L + (v - xMin) / (xMax - xMin) * (W - L - R);
        const y = v => H - B - v / yMax * (H - T - B);
        el('line', {x1: L, y1: H - B, x2: W - R, y2: H - B, stroke: '#c4cad4'}, svg);
        el('line', {x1: L, y1: T, x2: L, y2: H - B, stroke: '#c4cad4'}, svg);
        for (let v = 0; v <= yMax + yStep / 2; v += yStep) {
          el('text', {x: L - 6, y: y(v) + 4, 'text-anchor': 'end', 'class': 'ytick'}, svg, fmt(v, unit));
          if (v > 0) el('line', {x1: L, y1: y(v), x2: W - R, y2: y(v), stroke: '#eef0f4'}, svg);
        }
        if (opts.time) {
          let step = TIME_STEPS.find(s => (xMax - xMin) / s <= 6) || 86400000;
          for (let t = Math.ceil(xMin / step) * step; t <= xMax; t += step) {
            el('text', {x: x(t), y: H - B + 16, 'text-anchor': 'middle', 'class': 'xtick'}, svg, clock(t, step));
          }
        } else {
          const xStep = Math.max(1, niceStep(xMax - xMin, 6));
          for (let v = Math.ceil(xMin / xStep) * xStep; v <= xMax; v += xStep) {
            el('text', {x: x(v), y: H - B + 16, 'text-anchor': 'middle', 'class': 'xtick'}, svg, v);
          }
        }
        el('text', {x: (L + W - R) / 2, y: H - 6, 'text-anchor': 'middle'}, svg, opts.xLabel);
        marks.forEach(m => {
          const mx = x(m.t);
          const g = el('g', {'class': 'change'}, svg);
          el('line', {x1: mx, y1: T, x2: mx, y2: H - B, stroke: '#a05195', 'stroke-width': 1.5,
            'stroke-dasharray': '3 3'}, g);
          el('text', {x: mx + 3, y: T - 4, 'text-anchor': 'start', style: 'fill:#a05195'}, g, m.label);
          el('title', {}, g, m.title);
        });
        let plotted = 0;
        series.forEach((s, si) => {
          const color = s.color || COLORS[si % COLORS.length];
          const pts = [];
          s.values.forEach((v, i) => { if (v !== null) pts.push([x(xs[i]), y(v), xs[i], v]); });
          if (pts.length > 1) {
            el('polyline', {points: pts.map(p => p[0] + ',' + p[1]).join(' '), fill: 'none',
              stroke: color, 'stroke-width': 2, 'stroke-dasharray': s.dashed ? '6 4' : 'none',
              'class': 'series', 'data-series': s.name}, svg);
          }
          if (s.points !== false) {
            pts.forEach(p => {
              const c = el('circle', {cx: p[0], cy: p[1], r: 3, fill: color, 'class': 'pt',
                'data-series': s.name}, svg);
              el('title', {}, c, s.name + ' at ' + (opts.time ? new Date(p[2]).toISOString()
                : 'batch ' + p[2]) + ': ' + fmt(p[3], unit));
              plotted++;
            });
          }
        });
        svg.setAttribute('data-points', plotted);
        svg.setAttribute('data-marks', marks.length);
        const legend = document.createElement('div');
        legend.className = 'legend';
        legend.innerHTML = series.map((s, si) => '<span style="color:' + (s.color || COLORS[si % COLORS.length])
          + '">&#9632;</span> ' + s.name.replace(/</g, '&lt;')).join(' &nbsp; ')
          + (marks.length ? ' &nbsp; <span style="color:#a05195">&#9474;</span> repartition or migration' : '');
        host.appendChild(legend);
      }
      function barChart(id, stores) {
        const host = document.getElementById(id);
        host.innerHTML = '';
        if (!stores.length) { empty(id, 'No state partitions were read.'); return; }
        const W = 520, H = 260, L = 56, R = 12, T = 12, B = 40;
        const svg = el('svg', {width: W, height: H, viewBox: '0 0 ' + W + ' ' + H, 'class': 'chart'}, host);
        const parts = Math.max(...stores.map(s => s.rows.length));
        let max = 1;
        stores.forEach(s => s.rows.forEach(v => { if (v > max) max = v; }));
        const groupW = (W - L - R) / parts, barW = Math.max(2, groupW * 0.8 / stores.length);
        const y = v => H - B - v / max * (H - T - B);
        el('line', {x1: L, y1: H - B, x2: W - R, y2: H - B, stroke: '#c4cad4'}, svg);
        for (let i = 0; i <= 4; i++) {
          el('text', {x: L - 6, y: y(max * i / 4) + 4, 'text-anchor': 'end'}, svg, fmt(max * i / 4, 'rows'));
        }
        let bars = 0;
        stores.forEach((s, si) => {
          const total = s.rows.reduce((a, b) => a + b, 0), mean = total / s.rows.length;
          s.rows.forEach((v, p) => {
            const bx = L + p * groupW + groupW * 0.1 + si * barW;
            const r = el('rect', {x: bx, y: y(v), width: barW - 1, height: H - B - y(v),
              fill: COLORS[si % COLORS.length], 'class': 'bar', 'data-partition': p}, svg);
            el('title', {}, r, 'operator ' + s.operatorId + ' ' + s.storeName + ', partition ' + p + ': ' + v + ' rows');
            bars++;
          });
          el('line', {x1: L, y1: y(mean), x2: W - R, y2: y(mean), stroke: COLORS[si % COLORS.length],
            'stroke-dasharray': '4 3', 'class': 'mean'}, svg);
        });
        for (let p = 0; p < parts; p += Math.max(1, Math.ceil(parts / 16))) {
          el('text', {x: L + p * groupW + groupW / 2, y: H - B + 16, 'text-anchor': 'middle'}, svg, p);
        }
        el('text', {x: (L + W - R) / 2, y: H - 6, 'text-anchor': 'middle'}, svg, 'state partition (dashed: mean)');
        svg.setAttribute('data-points', bars);
        const legend = document.createElement('div');
        legend.className = 'legend';
        legend.textContent = stores.map(s => {
          const total = s.rows.reduce((a, b) => a + b, 0);
          const skew = total ? Math.max(...s.rows) / (total / s.rows.length) : 1;
          return 'operator ' + s.operatorId + ' (' + s.operatorName + ') ' + s.storeName + ': '
            + total + ' rows, skew ' + skew.toFixed(2);
        }).join('; ');
        host.appendChild(legend);
      }
      function findings(list) {
        const host = document.getElementById('findings');
        const table = document.createElement('table');
        table.id = 'findings-table';
        table.innerHTML = '<tr><th>severity</th><th>finding</th><th>evidence</th><th>fix</th></tr>';
        const order = {ERROR: 0, WARNING: 1, INFO: 2};
        list.slice().sort((a, b) => order[a.severity] - order[b.severity]).forEach(f => {
          const tr = document.createElement('tr');
          tr.className = 'finding';
          const cells = [f.severity, f.code + ': ' + f.title, f.evidence, f.fix];
          cells.forEach((text, i) => {
            const td = document.createElement('td');
            if (i === 0) { const s = document.createElement('span'); s.className = 'sev ' + text; s.textContent = text; td.appendChild(s); }
            else td.textContent = text;
            tr.appendChild(td);
          });
          table.appendChild(tr);
        });
        host.appendChild(table);
      }
      function render() {
        document.getElementById('meta').textContent = 'checkpoint ' + DATA.checkpoint + ' \\u00b7 query '
          + DATA.queryId + ' \\u00b7 ' + (DATA.provider || '-').split('.').pop() + ', '
          + DATA.partitions + ' partitions (recommended ' + DATA.recommendedPartitions + ' for '
          + DATA.cores + ' cores) \\u00b7 generated ' + DATA.generatedAt;
        const b = DATA.batches;
        const marks = DATA.changes.map(c => ({t: c.t, label: c.from + '\u2192' + c.to,
          title: c.kind + ' ' + c.from + ' \u2192 ' + c.to + ' partitions (batch ' + c.batch + ') at '
            + new Date(c.t).toISOString()}));
        const time = {time: true, xLabel: 'time (UTC)', marks: marks};
        if (b.length) {
          const xs = b.map(r => r.t);
          lineChart('duration', xs, [
            {name: 'batch duration', values: b.map(r => r.durationMs)},
            {name: 'trigger interval', values: b.map(r => r.triggerMs > 0 ? r.triggerMs : null),
              dashed: true, points: false, color: '#e4572e'}], Object.assign({unit: 'ms'}, time));
          lineChart('rates', xs, [
            {name: 'input rows/s', values: b.map(r => r.inputRate)},
            {name: 'processed rows/s', values: b.map(r => r.processingRate)}],
            Object.assign({unit: 'rows/s'}, time));
          const ops = DATA.operators.length ? DATA.operators : [];
          if (ops.length) {
            lineChart('state', xs, ops.map(op => ({name: 'operator ' + op,
              values: b.map(r => r.stateRows[op] === undefined ? null : r.stateRows[op])})),
              Object.assign({unit: 'rows'}, time));
            lineChart('bytes', xs, ops.map(op => ({name: 'operator ' + op,
              values: b.map(r => !r.stateBytes || r.stateBytes[op] == null ? null : r.stateBytes[op])})),
              Object.assign({unit: 'bytes'}, time));
          } else {
            empty('state', 'The query keeps no state.');
            empty('bytes', 'The query keeps no state.');
          }
          if (b.some(r => r.watermarkLagMs !== null)) {
            lineChart('lag', xs, [{name: 'watermark lag', values: b.map(r => r.watermarkLagMs)}],
              Object.assign({unit: 'ms'}, time));
          } else {
            empty('lag', 'The query sets no watermark (withWatermark), so there is no lag to show.');
          }
        } else {
          const none = 'No progress history given (--history: a folder StreamMonitor writes).';
          ['duration', 'rates', 'bytes', 'lag'].forEach(id => empty(id, none));
          if (DATA.growth.length) {
            const xs = [...new Set(DATA.growth.flatMap(g => g.batches))].sort((p, q) => p - q);
            lineChart('state', xs, DATA.growth.map(g => ({name: 'operator ' + g.operatorId + ':' + g.operatorName,
              values: xs.map(x => { const i = g.batches.indexOf(x); return i < 0 ? null : g.rows[i]; })})),
              {unit: 'rows', xLabel: 'batch (from retained state versions)'});
          } else {
            empty('state', 'No state.');
          }
        }
        barChart('skew', DATA.stores);
        findings(DATA.findings);
        document.body.setAttribute('data-rendered', 'true');
      }
      render();
      </script>
      </body></html>
      """;
}
