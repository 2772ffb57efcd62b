package io.stateshift.testing;

import static org.apache.spark.sql.functions.col;
import static org.apache.spark.sql.functions.expr;
import static org.apache.spark.sql.functions.session_window;
import static org.apache.spark.sql.functions.window;

import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.function.Function;
import org.apache.spark.api.java.function.FlatMapGroupsWithStateFunction;
import org.apache.spark.api.java.function.MapFunction;
import org.apache.spark.api.java.function.MapGroupsWithStateFunction;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Encoders;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.streaming.GroupState;
import org.apache.spark.sql.streaming.GroupStateTimeout;
import org.apache.spark.sql.streaming.OutputMode;
import scala.Tuple2;
import scala.Tuple3;

/**
 * Queries for the stateful operators beyond aggregation and deduplication: stream-stream joins,
 * session windows and flatMapGroupsWithState. Each reads the event files through {@link Sources} (a
 * join reads them twice, as its two sides) and names the output mode its sink needs.
 */
public enum OperatorQueries {
  JOIN_INNER("append", s -> join(s, "inner")),
  JOIN_LEFT_OUTER("append", s -> join(s, "left_outer")),
  JOIN_RIGHT_OUTER("append", s -> join(s, "right_outer")),
  JOIN_FULL_OUTER("append", s -> join(s, "full_outer")),
  JOIN_LEFT_SEMI("append", s -> join(s, "left_semi")),
  JOIN_THEN_WINDOWED_COUNT(
      "append",
      s ->
          join(s, "inner")
              .groupBy(window(col("lts"), "5 minutes"), col("lkey"))
              .count()
              .select(col("window.start").as("window_start"), col("lkey"), col("count"))),
  SESSION_WINDOW_COUNT(
      "append",
      s ->
          s.events()
              .withWatermark("ts", "1 minute")
              .groupBy(session_window(col("ts"), "30 seconds"), col("device"))
              .count()
              .select(
                  col("session_window.start").as("session_start"),
                  col("session_window.end").as("session_end"),
                  col("device"),
                  col("count"))),
  /**
   * flatMapGroupsWithState, append mode, event-time timeout: one row per device when it times out.
   */
  FLAT_MAP_EVENT_TIME_TIMEOUT(
      "append",
      s ->
          byDevice(s, "1 minute")
              .flatMapGroupsWithState(
                  new CountUntilEventTimeout(),
                  OutputMode.Append(),
                  state(),
                  output(),
                  GroupStateTimeout.EventTimeTimeout())
              .toDF("device", "count", "kind")),
  /** mapGroupsWithState (update mode), event-time timeout: a row per device and batch. */
  MAP_EVENT_TIME_TIMEOUT(
      "update",
      s ->
          byDevice(s, "1 minute")
              .mapGroupsWithState(
                  new RunningCountWithEventTimeout(),
                  state(),
                  output(),
                  GroupStateTimeout.EventTimeTimeout())
              .toDF("device", "count", "kind")),
  /** mapGroupsWithState (update mode) without a timeout: a running count per device. */
  MAP_NO_TIMEOUT(
      "update",
      s ->
          byDevice(s, null)
              .mapGroupsWithState(
                  new RunningCount(), state(), output(), GroupStateTimeout.NoTimeout())
              .toDF("device", "count", "kind")),
  /** flatMapGroupsWithState, append mode, processing-time timeout of three seconds. */
  FLAT_MAP_PROCESSING_TIME_TIMEOUT(
      "append",
      s ->
          byDevice(s, null)
              .flatMapGroupsWithState(
                  new CountUntilProcessingTimeout(),
                  OutputMode.Append(),
                  state(),
                  output(),
                  GroupStateTimeout.ProcessingTimeTimeout())
              .toDF("device", "count", "kind")),
  /**
   * transformWithState in processing-time mode: value, list and map state with and without a short
   * TTL, processing-time timers ({@link DeviceStateProcessor}).
   */
  TWS_PROCESSING_TIME("append", s -> TransformWithStateQueries.apply(byDevice(s, null), false)),
  /** transformWithState in event-time mode: the same state without TTL, event-time timers. */
  TWS_EVENT_TIME("append", s -> TransformWithStateQueries.apply(byDevice(s, "1 minute"), true)),
  /**
   * A grouped count whose input is already hash partitioned by a subset of its key: with
   * useStrictDistribution=false Spark keeps that placement for the state (SPARK-38204).
   */
  COUNT_PLACED_BY_DEVICE(
      "complete",
      s ->
          s.events()
              .repartition(4, col("device"))
              .groupBy(col("device"), expr("minute(ts)").as("minute"))
              .count());

  public static final long PROCESSING_TIMEOUT_MS = 3_000;

  /** Where a query reads its events: a fresh streaming read of the event files on every call. */
  public interface Sources {
    Dataset<Row> events();
  }

  /** State: (count, latest event time in ms). */
  private static org.apache.spark.sql.Encoder<Tuple2<Long, Long>> state() {
    return Encoders.tuple(Encoders.LONG(), Encoders.LONG());
  }

  /** Output: (device, count, kind). */
  private static org.apache.spark.sql.Encoder<Tuple3<String, Long, String>> output() {
    return Encoders.tuple(Encoders.STRING(), Encoders.LONG(), Encoders.STRING());
  }

  private final String outputMode;
  private final Function<Sources, Dataset<Row>> query;

  OperatorQueries(String outputMode, Function<Sources, Dataset<Row>> query) {
    this.outputMode = outputMode;
    this.query = query;
  }

  public String outputMode() {
    return outputMode;
  }

  public Dataset<Row> apply(Sources sources) {
    return query.apply(sources);
  }

  public boolean isJoin() {
    return name().startsWith("JOIN");
  }

  /**
   * Both sides read the same files; each keeps its own share of the events (and every flush event,
   * so both watermarks move). A match is the same device within 30 seconds.
   */
  private static Dataset<Row> join(Sources sources, String type) {
    Dataset<Row> left =
        sources
            .events()
            .where("device = 'flush' OR pmod(hash(eventId), 2) = 0")
            .select(col("device").as("lkey"), col("ts").as("lts"), col("eventId").as("lid"))
            .withWatermark("lts", "10 minutes");
    Dataset<Row> right =
        sources
            .events()
            .where("device = 'flush' OR pmod(hash(eventId), 3) = 0")
            .select(col("device").as("rkey"), col("ts").as("rts"), col("eventId").as("rid"))
            .withWatermark("rts", "10 minutes");
    return left.join(
        right,
        expr(
            "lkey = rkey AND rts >= lts - INTERVAL 30 SECONDS "
                + "AND rts <= lts + INTERVAL 30 SECONDS"),
        type);
  }

  private static org.apache.spark.sql.KeyValueGroupedDataset<String, Row> byDevice(
      Sources sources, String watermark) {
    Dataset<Row> events = sources.events();
    if (watermark != null) {
      events = events.withWatermark("ts", watermark);
    }
    return events.groupByKey((MapFunction<Row, String>) r -> r.getString(1), Encoders.STRING());
  }

  /** State (count, latest event time in ms) after adding {@code rows}. */
  private static Tuple2<Long, Long> add(GroupState<Tuple2<Long, Long>> state, Iterator<Row> rows) {
    long count = state.exists() ? state.get()._1() : 0;
    long latest = state.exists() ? state.get()._2() : 0;
    while (rows.hasNext()) {
      Row row = rows.next();
      count++;
      latest = Math.max(latest, row.getTimestamp(2).getTime());
    }
    return new Tuple2<>(count, latest);
  }

  /** A device times out one minute (event time) after its latest event. */
  private static void setEventTimeout(GroupState<Tuple2<Long, Long>> state, long latest) {
    state.setTimeoutTimestamp(Math.max(latest + 60_000, state.getCurrentWatermarkMs() + 1));
  }

  static final class CountUntilEventTimeout
      implements FlatMapGroupsWithStateFunction<
          String, Row, Tuple2<Long, Long>, Tuple3<String, Long, String>> {
    @Override
    public Iterator<Tuple3<String, Long, String>> call(
        String device, Iterator<Row> rows, GroupState<Tuple2<Long, Long>> state) {
      List<Tuple3<String, Long, String>> out = new ArrayList<>();
      if (state.hasTimedOut()) {
        out.add(new Tuple3<>(device, state.get()._1(), "timeout"));
        state.remove();
      } else {
        Tuple2<Long, Long> next = add(state, rows);
        state.update(next);
        setEventTimeout(state, next._2());
      }
      return out.iterator();
    }
  }

  static final class RunningCountWithEventTimeout
      implements MapGroupsWithStateFunction<
          String, Row, Tuple2<Long, Long>, Tuple3<String, Long, String>> {
    @Override
    public Tuple3<String, Long, String> call(
        String device, Iterator<Row> rows, GroupState<Tuple2<Long, Long>> state) {
      if (state.hasTimedOut()) {
        long count = state.get()._1();
        state.remove();
        return new Tuple3<>(device, count, "timeout");
      }
      Tuple2<Long, Long> next = add(state, rows);
      state.update(next);
      setEventTimeout(state, next._2());
      return new Tuple3<>(device, next._1(), "running");
    }
  }

  static final class RunningCount
      implements MapGroupsWithStateFunction<
          String, Row, Tuple2<Long, Long>, Tuple3<String, Long, String>> {
    @Override
    public Tuple3<String, Long, String> call(
        String device, Iterator<Row> rows, GroupState<Tuple2<Long, Long>> state) {
      Tuple2<Long, Long> next = add(state, rows);
      state.update(next);
      return new Tuple3<>(device, next._1(), "running");
    }
  }

  static final class CountUntilProcessingTimeout
      implements FlatMapGroupsWithStateFunction<
          String, Row, Tuple2<Long, Long>, Tuple3<String, Long, String>> {
    @Override
    public Iterator<Tuple3<String, Long, String>> call(
        String device, Iterator<Row> rows, GroupState<Tuple2<Long, Long>> state) {
      if (state.hasTimedOut()) {
        long count = state.get()._1();
        state.remove();
        return List.of(new Tuple3<>(device, count, "timeout")).iterator();
      }
      state.update(add(state, rows));
      state.setTimeoutDuration(PROCESSING_TIMEOUT_MS);
      return List.<Tuple3<String, Long, String>>of().iterator();
    }
  }
}
