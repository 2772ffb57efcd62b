package io.stateshift.testing;

import static org.apache.spark.sql.functions.col;
import static org.apache.spark.sql.functions.window;

import java.util.function.Function;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;

/** The stateful queries the oracle tests run, each with the output mode its sink needs. */
public enum StatefulQueries {
  WINDOWED_COUNT(
      "append",
      events ->
          events
              .withWatermark("ts", "10 minutes")
              .groupBy(window(col("ts"), "5 minutes"), col("device"))
              .count()
              .select(
                  col("window.start").as("window_start"),
                  col("window.end").as("window_end"),
                  col("device"),
                  col("count"))),
  GROUPED_COUNT("complete", events -> events.groupBy(col("device")).count()),
  DEDUP("append", events -> events.dropDuplicates("eventId")),
  DEDUP_WITHIN_WATERMARK(
      "append",
      events -> events.withWatermark("ts", "10 minutes").dropDuplicatesWithinWatermark("eventId")),
  DEDUP_THEN_WINDOWED_COUNT(
      "append",
      events ->
          events
              .withWatermark("ts", "10 minutes")
              .dropDuplicates("eventId", "ts")
              .groupBy(window(col("ts"), "5 minutes"), col("device"))
              .count()
              .select(
                  col("window.start").as("window_start"),
                  col("window.end").as("window_end"),
                  col("device"),
                  col("count")));

  private final String outputMode;
  private final Function<Dataset<Row>, Dataset<Row>> query;

  StatefulQueries(String outputMode, Function<Dataset<Row>, Dataset<Row>> query) {
    this.outputMode = outputMode;
    this.query = query;
  }

  public String outputMode() {
    return outputMode;
  }

  public Dataset<Row> apply(Dataset<Row> events) {
    return query.apply(events);
  }
}
