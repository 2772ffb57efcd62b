package io.stateshift.testing;

import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import org.apache.spark.api.java.function.VoidFunction2;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.streaming.DataStreamReader;
import org.apache.spark.sql.streaming.StreamingQuery;
import org.apache.spark.sql.streaming.StreamingQueryProgress;
import org.apache.spark.sql.streaming.Trigger;

/**
 * Runs one of the {@link StatefulQueries} over the event files of a {@link StreamRun} until the
 * input is used up, with the source options a test chooses (StreamRun fixes one file per batch).
 */
public final class QueryRunner {
  private QueryRunner() {}

  /** {@code maxFilesPerTrigger} 0 means no limit: everything present goes into one batch. */
  public static List<StreamingQueryProgress> runAvailable(
      SparkSession spark,
      Path input,
      StatefulQueries query,
      Path checkpoint,
      Path sink,
      Map<String, String> sessionConf,
      int maxFilesPerTrigger) {
    Runnable restoreSettings = SessionConf.set(spark, sessionConf);
    try {
      DataStreamReader reader = spark.readStream().schema(StreamRun.EVENT_SCHEMA);
      if (maxFilesPerTrigger > 0) {
        reader = reader.option("maxFilesPerTrigger", maxFilesPerTrigger);
      }
      String sinkPath = sink.toString();
      StreamingQuery running =
          query
              .apply(reader.json(input.toString()))
              .writeStream()
              .outputMode(query.outputMode())
              .option("checkpointLocation", checkpoint.toString())
              .trigger(Trigger.AvailableNow())
              .foreachBatch(
                  (VoidFunction2<Dataset<Row>, Long>)
                      (batch, batchId) ->
                          batch.write().mode("overwrite").parquet(sinkPath + "/batch=" + batchId))
              .start();
      running.awaitTermination();
      return List.of(running.recentProgress());
    } catch (Exception e) {
      throw new IllegalStateException(e);
    } finally {
      restoreSettings.run();
    }
  }
}
