package io.stateshift.spark;

import io.stateshift.spark.state.ScalaBridge;
import java.util.List;
import org.apache.spark.SparkConf;
import org.apache.spark.sql.streaming.StreamingQueryListener;

/** Spark's own ways of doing things, for checks that stateshift fits them. */
public final class SparkCalls {
  private SparkCalls() {}

  /**
   * Instantiates the listeners named by {@code spark.sql.streaming.streamingQueryListeners} in
   * {@code conf} exactly as Spark's StreamingQueryManager does (SparkConf constructor, else the
   * no-argument one).
   */
  public static List<StreamingQueryListener> loadStreamingQueryListeners(SparkConf conf) {
    String names = conf.get("spark.sql.streaming.streamingQueryListeners", "");
    return ScalaBridge.javaList(
        org.apache.spark.util.Utils.loadExtensions(
            StreamingQueryListener.class,
            ScalaBridge.seq(List.of(names.split("\\s*,\\s*"))),
            conf));
  }
}
