package io.stateshift.monitor;

import io.stateshift.config.StateShiftConf;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Function;

/** The monitor's settings, {@code spark.stateshift.monitor.*}; defaults in {@link #DEFAULTS}. */
public record MonitorSettings(
    int consecutiveBatches,
    double levelOffRatio,
    long idleTimeoutMs,
    long triggerIntervalMs,
    String history,
    List<String> alertCallbacks,
    boolean fileBacklog,
    boolean metrics) {

  public static final String PREFIX = StateShiftConf.MONITOR_PREFIX;

  /**
   * Every setting (without the prefix) and its default, as {@link StateShiftConf} declares them.
   */
  public static final Map<String, String> DEFAULTS = defaults();

  private static Map<String, String> defaults() {
    Map<String, String> d = new LinkedHashMap<>();
    for (StateShiftConf.Setting<?> setting : StateShiftConf.all()) {
      if (setting.key().startsWith(PREFIX)) {
        d.put(setting.key().substring(PREFIX.length()), setting.defaultText());
      }
    }
    return Collections.unmodifiableMap(d);
  }

  public static MonitorSettings defaultSettings() {
    return resolve(key -> null);
  }

  /** Resolves each setting by its full key, falling back to the default. */
  public static MonitorSettings resolve(Function<String, String> lookup) {
    Function<String, String> get =
        name -> {
          String value = lookup.apply(PREFIX + name);
          return value == null ? DEFAULTS.get(name) : value.trim();
        };
    try {
      String interval = get.apply("triggerIntervalMs");
      String callbacks = get.apply("alertCallbacks");
      String history = get.apply("history");
      return new MonitorSettings(
          Integer.parseInt(get.apply("consecutiveBatches")),
          Double.parseDouble(get.apply("levelOffRatio")),
          Long.parseLong(get.apply("idleTimeoutMs")),
          interval.isEmpty() ? -1 : Long.parseLong(interval),
          history.isEmpty() ? null : history,
          callbacks.isEmpty() ? List.of() : List.of(callbacks.split("\\s*,\\s*")),
          Boolean.parseBoolean(get.apply("fileBacklog")),
          Boolean.parseBoolean(get.apply("metrics")));
    } catch (NumberFormatException e) {
      throw new IllegalArgumentException(
          "A "
              + PREFIX
              + "* setting is not a number ("
              + e.getMessage()
              + "); defaults: "
              + DEFAULTS,
          e);
    }
  }

  /** A copy with one setting changed, by its name without the prefix. */
  public MonitorSettings with(String name, String value) {
    Map<String, String> current = new LinkedHashMap<>();
    current.put("consecutiveBatches", Integer.toString(consecutiveBatches));
    current.put("levelOffRatio", Double.toString(levelOffRatio));
    current.put("idleTimeoutMs", Long.toString(idleTimeoutMs));
    current.put("triggerIntervalMs", triggerIntervalMs < 0 ? "" : Long.toString(triggerIntervalMs));
    current.put("history", history == null ? "" : history);
    current.put("alertCallbacks", String.join(",", alertCallbacks));
    current.put("fileBacklog", Boolean.toString(fileBacklog));
    current.put("metrics", Boolean.toString(metrics));
    if (!current.containsKey(name)) {
      throw new IllegalArgumentException(
          "Unknown monitor setting " + name + "; settings are " + DEFAULTS.keySet());
    }
    current.put(name, value);
    return resolve(key -> current.get(key.substring(PREFIX.length())));
  }
}
