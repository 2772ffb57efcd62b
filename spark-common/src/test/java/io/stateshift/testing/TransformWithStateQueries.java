package io.stateshift.testing;

import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Encoders;
import org.apache.spark.sql.KeyValueGroupedDataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.streaming.OutputMode;
import org.apache.spark.sql.streaming.TimeMode;

/**
 * The transformWithState queries of {@link OperatorQueries} ({@link DeviceStateProcessor}), apart:
 * a line whose Spark has no transformWithState (3.5) compiles its own class of this name, which
 * refuses.
 */
final class TransformWithStateQueries {
  private TransformWithStateQueries() {}

  static Dataset<Row> apply(KeyValueGroupedDataset<String, Row> byDevice, boolean eventTime) {
    return byDevice
        .transformWithState(
            new DeviceStateProcessor(eventTime),
            eventTime ? TimeMode.EventTime() : TimeMode.ProcessingTime(),
            OutputMode.Append(),
            Encoders.STRING())
        .toDF("line");
  }
}
