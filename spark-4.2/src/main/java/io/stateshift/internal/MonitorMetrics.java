package io.stateshift.internal;

import com.codahale.metrics.Counter;
import com.codahale.metrics.Gauge;
import com.codahale.metrics.MetricRegistry;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import org.apache.spark.SparkEnv;
import org.apache.spark.metrics.source.Source;

/**
 * The monitor's metrics, as one Spark metrics source named {@code stateshift}: registered with the
 * driver's metrics system, so every configured sink (JMX, Prometheus servlet, CSV, Graphite...)
 * exports them as {@code <app id>.driver.stateshift.<query>.<metric>}. Gauges appear as queries,
 * operators and sources appear; Dropwizard forwards metrics added to a registered child registry.
 */
public final class MonitorMetrics implements Source {
  public static final String SOURCE_NAME = "stateshift";
  private static MonitorMetrics shared;
  private static SparkEnv registeredWith;

  private final MetricRegistry registry = new MetricRegistry();
  private final Map<String, Double> values = new ConcurrentHashMap<>();

  private MonitorMetrics() {}

  /** The one source of this JVM, registered with the current Spark application's metrics system. */
  public static synchronized MonitorMetrics shared() {
    if (shared == null) {
      shared = new MonitorMetrics();
    }
    SparkEnv env = SparkEnv.get();
    if (env != null && env != registeredWith) {
      env.metricsSystem().registerSource(shared);
      registeredWith = env;
    }
    return shared;
  }

  @Override
  public String sourceName() {
    return SOURCE_NAME;
  }

  @Override
  public MetricRegistry metricRegistry() {
    return registry;
  }

  /** Sets a gauge, creating it on first use. */
  public void set(String name, double value) {
    if (values.put(name, value) == null) {
      try {
        registry.register(name, (Gauge<Double>) () -> values.get(name));
      } catch (IllegalArgumentException alreadyThere) {
        // two monitors of one application share the gauge
      }
    }
  }

  public Counter counter(String name) {
    return registry.counter(name);
  }

  /** The metrics Spark's metrics system holds for this source, with their full names. */
  public static Map<String, com.codahale.metrics.Metric> registeredInSpark() {
    SparkEnv env = SparkEnv.get();
    try {
      java.lang.reflect.Field field =
          org.apache.spark.metrics.MetricsSystem.class.getDeclaredField("registry");
      field.setAccessible(true);
      MetricRegistry sparkRegistry = (MetricRegistry) field.get(env.metricsSystem());
      Map<String, com.codahale.metrics.Metric> out = new java.util.TreeMap<>();
      sparkRegistry
          .getMetrics()
          .forEach(
              (name, metric) -> {
                if (name.contains("." + SOURCE_NAME + ".")) {
                  out.put(name, metric);
                }
              });
      return out;
    } catch (ReflectiveOperationException e) {
      throw new IllegalStateException("Cannot read Spark's metrics registry", e);
    }
  }

  /** Whether the driver's metrics system lists this source by name. */
  public static boolean registeredBySourceName() {
    return !ScalaBridge.javaList(SparkEnv.get().metricsSystem().getSourcesByName(SOURCE_NAME))
        .isEmpty();
  }
}
