package io.stateshift;

import io.stateshift.StateShiftException.Reason;
import io.stateshift.checkpoint.SessionSettings;
import java.io.IOException;
import java.io.UncheckedIOException;
import org.apache.hadoop.fs.FileStatus;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.SparkSession;

/** Reads a table a user names on the command line: a catalog table, or a path. */
final class Tables {
  private Tables() {}

  /**
   * A table of the session's catalog by that name, else the path: a Delta table (it has a {@code
   * _delta_log}), JSON files (their names end in {@code .json}) or parquet.
   */
  static Dataset<Row> read(SparkSession spark, String tableOrPath) {
    if (tableOrPath == null || tableOrPath.isBlank()) {
      throw new StateShiftException(
          Reason.INVALID_ARGUMENT, "The table to read is empty: name a table or a path.");
    }
    Path path = new Path(tableOrPath);
    try {
      FileSystem fs = path.getFileSystem(SessionSettings.hadoopConf(spark));
      if (!fs.exists(path)) {
        if (!tableOrPath.contains("/") && spark.catalog().tableExists(tableOrPath)) {
          return spark.table(tableOrPath);
        }
        throw new StateShiftException(
            Reason.INVALID_ARGUMENT,
            tableOrPath + " is neither a path that exists nor a table of the session's catalog.");
      }
      if (fs.exists(new Path(path, "_delta_log"))) {
        return spark.read().format("delta").load(tableOrPath);
      }
      boolean json = tableOrPath.endsWith(".json");
      if (fs.getFileStatus(path).isDirectory()) {
        for (FileStatus f : fs.listStatus(path)) {
          json |= f.getPath().getName().endsWith(".json");
        }
      }
      return json ? spark.read().json(tableOrPath) : spark.read().parquet(tableOrPath);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }
}
