package io.stateshift.doctor;

import io.stateshift.config.StateShiftConf;
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

  public static final String PREFIX = StateShiftConf.DOCTOR_PREFIX;

  /** Every setting with its default, as {@link StateShiftConf} declares them. */
  public static final Map<String, String> DEFAULTS = defaults();

  private static Map<String, String> defaults() {
    Map<String, String> d = new LinkedHashMap<>();
    for (StateShiftConf.Setting<?> setting : StateShiftConf.all()) {
      if (setting.key().startsWith(PREFIX)) {
        d.put(setting.key().substring(PREFIX.length()), setting.defaultText());
      }
    }
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
