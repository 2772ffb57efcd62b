package io.stateshift.doctor;

import java.util.LinkedHashMap;
import java.util.Map;
import java.util.function.Function;

/**
 * The thresholds the doctor judges by. Each is a Spark setting {@code spark.stateshift.doctor.*}
 * (session conf or {@code --conf}) or set on {@link Doctor#setting}; the defaults are in {@link
 * #DEFAULTS}.
 */
public record DoctorSettings(
    long largeStateBytes,
    long targetPartitionBytes,
    double skewRatio,
    long skewMinRows,
    int growthMinPoints,
    double levelOffRatio,
    int growthMaxVersions,
    double batchSizeRatio,
    int minRetainedBatches) {

  public static final String PREFIX = "spark.stateshift.doctor.";

  /** Every setting with its default, in the order the README lists them. */
  public static final Map<String, String> DEFAULTS = defaults();

  private static Map<String, String> defaults() {
    Map<String, String> d = new LinkedHashMap<>();
    d.put("largeStateBytes", Long.toString(512L << 20)); // above this, HDFS-backed -> RocksDB
    d.put("targetPartitionBytes", Long.toString(256L << 20)); // state per partition to aim for
    d.put("skewRatio", "2.0"); // largest partition / mean partition, by rows
    d.put("skewMinRows", "10000"); // below this many rows skew does not matter
    d.put("growthMinPoints", "4"); // state versions needed to judge growth
    d.put(
        "levelOffRatio",
        "0.5"); // growth in the newer half / older half that counts as not levelling off
    d.put("growthMaxVersions", "8"); // state versions counted when no history is given
    d.put("batchSizeRatio", "10"); // a batch this many times the median batch is a burst
    d.put("minRetainedBatches", "10"); // fewer retained batches than this is too few to recover
    return java.util.Collections.unmodifiableMap(d);
  }

  /** Resolves each setting from {@code lookup} (full key), falling back to the default. */
  public static DoctorSettings resolve(Function<String, String> lookup) {
    Function<String, String> get =
        name -> {
          String value = lookup.apply(PREFIX + name);
          return value == null || value.isBlank() ? DEFAULTS.get(name) : value.trim();
        };
    try {
      return new DoctorSettings(
          Long.parseLong(get.apply("largeStateBytes")),
          Long.parseLong(get.apply("targetPartitionBytes")),
          Double.parseDouble(get.apply("skewRatio")),
          Long.parseLong(get.apply("skewMinRows")),
          Integer.parseInt(get.apply("growthMinPoints")),
          Double.parseDouble(get.apply("levelOffRatio")),
          Integer.parseInt(get.apply("growthMaxVersions")),
          Double.parseDouble(get.apply("batchSizeRatio")),
          Integer.parseInt(get.apply("minRetainedBatches")));
    } catch (NumberFormatException e) {
      throw new io.stateshift.StateShiftException(
          io.stateshift.StateShiftException.Reason.INVALID_ARGUMENT,
          "A "
              + PREFIX
              + "* setting is not a number ("
              + e.getMessage()
              + "). Defaults: "
              + DEFAULTS
              + ".");
    }
  }
}
