package io.stateshift.spark;

import com.codahale.metrics.MetricRegistry;
import io.stateshift.spark.state.ScalaBridge;
import java.util.Map;
import org.apache.spark.SparkEnv;
import org.apache.spark.metrics.source.Source;

/** A metrics registry of stateshift's, as a source of the driver's metrics system. */
public final class MetricsSource implements Source {
  private static SparkEnv registeredWith;

  private final String name;
  private final MetricRegistry registry;

  private MetricsSource(String name, MetricRegistry registry) {
    this.name = name;
    this.registry = registry;
  }

  /** Registers once per Spark application; a no-op without a running one. */
  static synchronized void register(String name, MetricRegistry registry) {
    SparkEnv env = SparkEnv.get();
    if (env != null && env != registeredWith) {
      env.metricsSystem().registerSource(new MetricsSource(name, registry));
      registeredWith = env;
    }
  }

  @Override
  public String sourceName() {
    return name;
  }

  @Override
  public MetricRegistry metricRegistry() {
    return registry;
  }

  /** The metrics Spark's metrics system holds for a source, with their full names. */
  public static Map<String, com.codahale.metrics.Metric> registeredInSpark(String sourceName) {
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
              (metric, value) -> {
                if (metric.contains("." + sourceName + ".")) {
                  out.put(metric, value);
                }
              });
      return out;
    } catch (ReflectiveOperationException e) {
      throw new IllegalStateException("Cannot read Spark's metrics registry", e);
    }
  }

  /** Whether the driver's metrics system lists a source by name. */
  public static boolean registeredBySourceName(String sourceName) {
    return !ScalaBridge.javaList(SparkEnv.get().metricsSystem().getSourcesByName(sourceName))
        .isEmpty();
  }
}
