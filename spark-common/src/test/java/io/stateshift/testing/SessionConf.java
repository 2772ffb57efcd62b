package io.stateshift.testing;

import java.util.HashMap;
import java.util.Map;
import org.apache.spark.sql.SparkSession;
import scala.Option;

/**
 * Settings on the shared session for the length of a run. Putting back what was there, not
 * unsetting: an unset setting falls back to Spark's default, not to the test session's (200 shuffle
 * partitions instead of 4, which makes every later query in the JVM fifty times wider).
 */
public final class SessionConf {
  private SessionConf() {}

  /** Sets {@code settings} on the session; the returned action puts back what they replaced. */
  public static Runnable set(SparkSession spark, Map<String, String> settings) {
    Map<String, Option<String>> before = new HashMap<>();
    settings.forEach(
        (key, value) -> {
          before.putIfAbsent(key, spark.conf().getOption(key));
          spark.conf().set(key, value);
        });
    return () ->
        before.forEach(
            (key, value) -> {
              if (value.isDefined()) {
                spark.conf().set(key, value.get());
              } else {
                spark.conf().unset(key);
              }
            });
  }
}
