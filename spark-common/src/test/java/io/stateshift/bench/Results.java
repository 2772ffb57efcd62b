package io.stateshift.bench;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/** What the benchmark measured: one {@link Case} per shape, provider, key count and direction. */
final class Results {
  private Results() {}

  static final String STATESHIFT = "stateshift";
  static final String BUILTIN = "builtin";
  static final String REPLAY = "replay";
  static final String FLOOR = "floor";
  static final String COLD_STATESHIFT = "cold-stateshift";
  static final String COLD_BUILTIN = "cold-builtin";

  /** Restart of the query with {@code spark.sql.streaming.stateStore.partitions} set. */
  static final String ONDEMAND = "ondemand";

  /** Plain restart of the query, no repartition: what {@link #ONDEMAND} costs beyond it. */
  static final String RESTART = "restart";

  /**
   * stateshift with the check of every key's old partition turned off: beside {@link #STATESHIFT}
   * in one run, what the check costs.
   */
  static final String UNCHECKED = "unchecked";

  /**
   * stateshift's migration to the other state store provider (HDFS-backed and RocksDB) with the
   * same partition change: beside {@link #STATESHIFT} in one run, what changing the provider costs.
   */
  static final String MIGRATE = "migrate";

  /**
   * The repartition from a layout {@code stateshift prepare} wrote before a tail batch: beside
   * {@link #STATESHIFT} (the full path) in one run, what preparing saves at the restart.
   */
  static final String PREPARED = "prepared";

  /**
   * stateshift's edit of the same checkpoint, deleting about 1% of the keys ({@code pmod(hash(key),
   * 100) = 0}) and keeping the partition count: the erase beside the repartition it is compared
   * with.
   */
  static final String ERASE = "erase";

  static final List<String> WARM = List.of(STATESHIFT, BUILTIN, REPLAY, FLOOR);
  static final List<String> ALL_WARM =
      List.of(
          STATESHIFT,
          BUILTIN,
          REPLAY,
          FLOOR,
          ONDEMAND,
          RESTART,
          UNCHECKED,
          MIGRATE,
          PREPARED,
          ERASE);

  /** One timed run of one method. */
  static final class Run {
    int repetition;
    long millis;
    long heapBaselineBytes;
    long heapPeakBytes;
    long heapPeakAfterGcBytes;
    List<Map<String, Object>> stages = List.of();
    Map<String, Long> phases = Map.of();
    Map<String, Object> check = new LinkedHashMap<>();

    Map<String, Object> toJson() {
      Map<String, Object> m = new LinkedHashMap<>();
      m.put("repetition", repetition);
      m.put("millis", millis);
      m.put("heapBaselineBytes", heapBaselineBytes);
      m.put("heapPeakBytes", heapPeakBytes);
      m.put("heapPeakAfterGcBytes", heapPeakAfterGcBytes);
      if (!phases.isEmpty()) {
        m.put("phasesMillis", phases);
      }
      m.put("check", check);
      m.put("stages", stages);
      return m;
    }
  }

  /** The runs of one method in one case; {@code skipped} or {@code error} when there are none. */
  static final class Method {
    final List<Run> runs = new ArrayList<>();
    String skipped;
    String error;

    boolean hasTimes() {
      return !runs.isEmpty() && error == null;
    }

    long min() {
      return runs.stream().mapToLong(r -> r.millis).min().orElse(-1);
    }

    /** Median; with an even count, the mean of the two middle runs. */
    double median() {
      long[] t = runs.stream().mapToLong(r -> r.millis).sorted().toArray();
      if (t.length == 0) {
        return -1;
      }
      return t.length % 2 == 1 ? t[t.length / 2] : (t[t.length / 2 - 1] + t[t.length / 2]) / 2.0;
    }

    long maxPeakHeap() {
      return runs.stream().mapToLong(r -> r.heapPeakBytes).max().orElse(-1);
    }

    long maxPeakAfterGc() {
      return runs.stream().mapToLong(r -> r.heapPeakAfterGcBytes).max().orElse(-1);
    }

    Run fastest() {
      return runs.stream().min(java.util.Comparator.comparingLong(r -> r.millis)).orElse(null);
    }

    Map<String, Object> toJson() {
      Map<String, Object> m = new LinkedHashMap<>();
      if (skipped != null) {
        m.put("skipped", skipped);
      }
      if (error != null) {
        m.put("error", error);
      }
      if (!runs.isEmpty()) {
        m.put("minMillis", min());
        m.put("medianMillis", median());
        m.put("maxHeapPeakBytes", maxPeakHeap());
        m.put("maxHeapPeakAfterGcBytes", maxPeakAfterGc());
      }
      List<Object> list = new ArrayList<>();
      runs.forEach(r -> list.add(r.toJson()));
      m.put("runs", list);
      return m;
    }
  }

  /** One shape x provider x keys x direction. */
  static final class Case {
    String shape;
    String provider;
    long keys;
    int from;
    int to;

    /** Where the timed copies lived: local, hdfs or s3 ({@code --fs}). */
    String fs = "local";

    long stateBytes;
    long stateFiles;
    long rowsBefore;
    long buildMillis;
    int buildBatches;

    /** The state store, and where the copies lived when not on the local disk. */
    String providerLabel() {
      return provider
          + switch (fs) {
            case "hdfs" -> ", checkpoint on HDFS";
            case "s3" -> ", checkpoint on S3";
            default -> "";
          };
    }

    /** State stores per partition (a join has four). */
    int storesPerPartition = 1;

    final Map<String, Method> methods = new LinkedHashMap<>();

    Method method(String name) {
      return methods.computeIfAbsent(name, n -> new Method());
    }

    /** a / b of the fastest runs, or NaN when either is missing. */
    double ratio(String a, String b) {
      Method ma = methods.get(a);
      Method mb = methods.get(b);
      if (ma == null || mb == null || !ma.hasTimes() || !mb.hasTimes() || mb.min() <= 0) {
        return Double.NaN;
      }
      return (double) ma.min() / mb.min();
    }

    /** (on-demand restart - plain restart) / stateshift command, of the min times; or NaN. */
    double onDemandOverCommand() {
      Method od = methods.get(ONDEMAND);
      Method rs = methods.get(RESTART);
      Method ss = methods.get(STATESHIFT);
      if (od == null
          || rs == null
          || ss == null
          || !od.hasTimes()
          || !rs.hasTimes()
          || !ss.hasTimes()
          || ss.min() <= 0) {
        return Double.NaN;
      }
      return (double) (od.min() - rs.min()) / ss.min();
    }

    double stateshiftRowsPerSecond() {
      Method m = methods.get(STATESHIFT);
      return m == null || !m.hasTimes() ? Double.NaN : rowsBefore * 1000.0 / m.min();
    }

    /**
     * stateshift's time above the floor per store it opens, read or written ((from + to) x stores
     * per partition), in ms: what each store costs beyond its bytes, an upper bound of the fixed
     * cost per store; NaN without both times.
     */
    double stateshiftMsPerStore() {
      Method ss = methods.get(STATESHIFT);
      Method floor = methods.get(FLOOR);
      if (ss == null || floor == null || !ss.hasTimes() || !floor.hasTimes()) {
        return Double.NaN;
      }
      return (double) (ss.min() - floor.min()) / ((long) (from + to) * storesPerPartition);
    }

    Map<String, Object> toJson() {
      Map<String, Object> m = new LinkedHashMap<>();
      m.put("shape", shape);
      m.put("provider", provider);
      m.put("keys", keys);
      m.put("from", from);
      m.put("to", to);
      m.put("checkpointFs", fs);
      m.put("stateBytes", stateBytes);
      m.put("stateFiles", stateFiles);
      m.put("rows", rowsBefore);
      m.put("buildMillis", buildMillis);
      m.put("buildBatches", buildBatches);
      Map<String, Object> ratios = new LinkedHashMap<>();
      ratios.put("builtin/stateshift", finite(ratio(BUILTIN, STATESHIFT)));
      ratios.put("replay/stateshift", finite(ratio(REPLAY, STATESHIFT)));
      ratios.put("stateshift/floor", finite(ratio(STATESHIFT, FLOOR)));
      ratios.put("coldBuiltin/coldStateshift", finite(ratio(COLD_BUILTIN, COLD_STATESHIFT)));
      ratios.put("(ondemand-restart)/stateshift", finite(onDemandOverCommand()));
      ratios.put("stateshift/unchecked", finite(ratio(STATESHIFT, UNCHECKED)));
      ratios.put("migrate/stateshift", finite(ratio(MIGRATE, STATESHIFT)));
      ratios.put("prepared/stateshift", finite(ratio(PREPARED, STATESHIFT)));
      ratios.put("erase/stateshift", finite(ratio(ERASE, STATESHIFT)));
      m.put("ratiosOfMin", ratios);
      m.put("stateshiftRowsPerSecond", finite(stateshiftRowsPerSecond()));
      m.put("storesPerPartition", storesPerPartition);
      m.put("stateshiftMsPerStoreAboveFloor", finite(stateshiftMsPerStore()));
      Map<String, Object> ms = new LinkedHashMap<>();
      methods.forEach((k, v) -> ms.put(k, v.toJson()));
      m.put("methods", ms);
      return m;
    }
  }

  static Object finite(double d) {
    return Double.isFinite(d) ? d : null;
  }
}
