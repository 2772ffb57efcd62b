package io.stateshift.spark.state;

import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.execution.QueryExecution;

/** Spark's plans of a Dataset, on every line (the classic Dataset from 4.0, the one before). */
final class Plans {
  private Plans() {}

  static QueryExecution queryExecution(Dataset<?> dataset) {
    // Class.cast, not a cast expression: on a line without classic Datasets it is the same class
    return org.apache.spark.sql.classic.Dataset.class.cast(dataset).queryExecution();
  }
}
