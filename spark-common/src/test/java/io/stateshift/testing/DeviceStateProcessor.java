package io.stateshift.testing;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.apache.spark.sql.Encoders;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.streaming.ExpiredTimerInfo;
import org.apache.spark.sql.streaming.ListState;
import org.apache.spark.sql.streaming.MapState;
import org.apache.spark.sql.streaming.OutputMode;
import org.apache.spark.sql.streaming.StatefulProcessor;
import org.apache.spark.sql.streaming.TTLConfig;
import org.apache.spark.sql.streaming.TimeMode;
import org.apache.spark.sql.streaming.TimerValues;
import org.apache.spark.sql.streaming.ValueState;
import scala.jdk.javaapi.CollectionConverters;

/**
 * A transformWithState processor that uses every kind of state and timer, and whose output shows
 * what its state holds. Per device: a running count (value state), the event ids (list state) and
 * the events per minute of event time (map state), each twice: once kept for an hour, once, in
 * processing-time mode, with a TTL shorter than the gap between batches. Each batch with input for
 * a device writes one line with what the earlier batches left (expired short-TTL entries must be
 * absent, the others present) and what the state holds after the batch; it also registers a timer,
 * a processing-time one a second later or an event-time one a minute after the device's latest
 * event, which writes one line when it fires.
 */
public final class DeviceStateProcessor extends StatefulProcessor<String, Row, String> {
  /** Shorter than the time between two batches of the tests, which sleep longer between them. */
  public static final long SHORT_TTL_MS = 1_000;

  public static final long PROCESSING_TIMER_MS = 1_000;
  public static final long EVENT_TIMER_MS = 60_000;

  private final boolean eventTime;
  private transient ValueState<Long> count;
  private transient ValueState<Long> lastBatchCount;
  private transient ListState<String> ids;
  private transient ListState<String> lastBatchIds;
  private transient MapState<Long, Long> perMinute;
  private transient MapState<Long, Long> lastBatchPerMinute;

  public DeviceStateProcessor(boolean eventTime) {
    this.eventTime = eventTime;
  }

  @Override
  public void init(OutputMode outputMode, TimeMode timeMode) {
    // TTL needs processing time; in event-time mode the same variables have none
    TTLConfig hour = eventTime ? TTLConfig.NONE() : new TTLConfig(Duration.ofHours(1));
    TTLConfig brief = eventTime ? TTLConfig.NONE() : new TTLConfig(Duration.ofMillis(SHORT_TTL_MS));
    count = getHandle().getValueState("count", Encoders.LONG(), hour);
    lastBatchCount = getHandle().getValueState("lastBatchCount", Encoders.LONG(), brief);
    ids = getHandle().getListState("ids", Encoders.STRING(), hour);
    lastBatchIds = getHandle().getListState("lastBatchIds", Encoders.STRING(), brief);
    perMinute = getHandle().getMapState("perMinute", Encoders.LONG(), Encoders.LONG(), hour);
    lastBatchPerMinute =
        getHandle().getMapState("lastBatchPerMinute", Encoders.LONG(), Encoders.LONG(), brief);
  }

  @Override
  public scala.collection.Iterator<String> handleInputRows(
      String device, scala.collection.Iterator<Row> rows, TimerValues timers) {
    String before = describe();
    if (eventTime) { // no TTL: forget the last batch by hand
      lastBatchIds.clear();
      lastBatchPerMinute.clear();
    }
    long n = 0;
    long latest = Long.MIN_VALUE;
    for (java.util.Iterator<Row> it = CollectionConverters.asJava(rows); it.hasNext(); ) {
      Row row = it.next();
      n++;
      long ts = row.getTimestamp(2).getTime();
      latest = Math.max(latest, ts);
      ids.appendValue(row.getString(0));
      lastBatchIds.appendValue(row.getString(0));
      long minute = ts / 60_000;
      perMinute.updateValue(
          minute, (perMinute.containsKey(minute) ? perMinute.getValue(minute) : 0L) + 1);
      lastBatchPerMinute.updateValue(
          minute,
          (lastBatchPerMinute.containsKey(minute) ? lastBatchPerMinute.getValue(minute) : 0L) + 1);
    }
    count.update((count.exists() ? count.get() : 0L) + n);
    lastBatchCount.update(n);
    getHandle()
        .registerTimer(
            eventTime
                ? latest + EVENT_TIMER_MS
                : timers.getCurrentProcessingTimeInMs() + PROCESSING_TIMER_MS);
    return single("input|" + device + "|before " + before + "|after " + describe());
  }

  @Override
  public scala.collection.Iterator<String> handleExpiredTimer(
      String device, TimerValues timers, ExpiredTimerInfo expired) {
    // the event-time expiry follows from the input; a processing-time one from the wall clock
    String when = eventTime ? "|at " + expired.getExpiryTimeInMs() : "";
    return single("timer|" + device + when + "|" + describe());
  }

  /** What the state of the device holds now; an expired entry reads as absent. */
  private String describe() {
    List<String> idList = new ArrayList<>();
    CollectionConverters.asJava(ids.get()).forEachRemaining(idList::add);
    idList.sort(null);
    long[] minutes = {0, 0};
    CollectionConverters.asJava(perMinute.iterator())
        .forEachRemaining(
            e -> {
              minutes[0]++;
              minutes[1] += e._2();
            });
    long lastBatchIdCount = lastBatchIds.get().size();
    long lastBatchMinutes = lastBatchPerMinute.keys().size();
    return "count="
        + (count.exists() ? count.get() : "none")
        + " lastBatchCount="
        + (lastBatchCount.exists() ? lastBatchCount.get() : "none")
        + " ids="
        + idList.size()
        + ":"
        + String.join(",", idList).hashCode()
        + " lastBatchIds="
        + lastBatchIdCount
        + " minutes="
        + minutes[0]
        + "/"
        + minutes[1]
        + " lastBatchMinutes="
        + lastBatchMinutes;
  }

  private static scala.collection.Iterator<String> single(String line) {
    return CollectionConverters.asScala(List.of(line).iterator());
  }
}
