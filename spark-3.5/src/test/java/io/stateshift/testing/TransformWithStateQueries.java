package io.stateshift.testing;

import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.KeyValueGroupedDataset;
import org.apache.spark.sql.Row;

/** Spark 3.5 has no transformWithState: the tests that run these queries are left out. */
final class TransformWithStateQueries {
  private TransformWithStateQueries() {}

  static Dataset<Row> apply(KeyValueGroupedDataset<String, Row> byDevice, boolean eventTime) {
    throw new UnsupportedOperationException("transformWithState came with Spark 4.0");
  }
}
