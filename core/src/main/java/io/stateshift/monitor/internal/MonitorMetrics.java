package io.stateshift.monitor.internal;

import com.codahale.metrics.Counter;
import com.codahale.metrics.Gauge;
import com.codahale.metrics.MetricRegistry;
import io.stateshift.checkpoint.spi.SparkLines;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

/**
 * The monitor's metrics, as one Spark metrics source named {@code stateshift}: registered with the
 * driver's metrics system, so every configured sink (JMX, Prometheus servlet, CSV, Graphite...)
 * exports them as {@code <app id>.driver.stateshift.<query>.<metric>}. Gauges appear as queries,
 * operators and sources appear; Dropwizard forwards metrics added to a registered child registry.
 */
public final class MonitorMetrics {
  public static final String SOURCE_NAME = "stateshift";
  private static final MonitorMetrics SHARED = new MonitorMetrics();

  private final MetricRegistry registry = new MetricRegistry();
  private final Map<String, Double> values = new ConcurrentHashMap<>();

  private MonitorMetrics() {}

  /** The one source of this JVM, registered with the current Spark application's metrics system. */
  public static MonitorMetrics shared() {
    SparkLines.get().registerMetrics(SOURCE_NAME, SHARED.registry);
    return SHARED;
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
}
