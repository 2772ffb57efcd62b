package io.stateshift.testing;

import static org.apache.spark.sql.functions.col;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import org.apache.spark.api.java.function.VoidFunction2;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.streaming.StreamingQuery;
import org.apache.spark.sql.streaming.StreamingQueryProgress;
import org.apache.spark.sql.streaming.Trigger;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.StructType;

/**
 * A small stateful streaming application as users submit it with spark-submit: everything it knows
 * about stateshift comes from the submit's conf. It runs its query over the input present and
 * writes what it saw to a result file, one {@code key=value} a line.
 *
 * <p>Arguments: input folder, checkpoint, sink folder, result file.
 */
public final class SubmitApp {
  /** The events {@link StreamRun} writes; repeated so the app jar needs no other class. */
  public static final StructType EVENT_SCHEMA =
      new StructType()
          .add("eventId", DataTypes.StringType)
          .add("device", DataTypes.StringType)
          .add("ts", DataTypes.TimestampType);

  private SubmitApp() {}

  /** The query: deduplicated events counted per device (two state stores), complete mode. */
  public static Dataset<Row> query(Dataset<Row> events) {
    return events.dropDuplicates("eventId").groupBy(col("device")).count();
  }

  /** Runs the query to the end of the input present; returns its progress. */
  public static List<StreamingQueryProgress> runAvailable(
      SparkSession spark, String input, String checkpoint, String sink) throws Exception {
    Dataset<Row> events =
        spark.readStream().schema(EVENT_SCHEMA).option("maxFilesPerTrigger", 1).json(input);
    StreamingQuery running =
        query(events)
            .writeStream()
            .outputMode("complete")
            .option("checkpointLocation", checkpoint)
            .trigger(Trigger.AvailableNow())
            .foreachBatch(
                (VoidFunction2<Dataset<Row>, Long>)
                    (batch, batchId) ->
                        batch.write().mode("overwrite").parquet(sink + "/batch=" + batchId))
            .start();
    running.awaitTermination();
    // the extension's listener completes the first progress (controlBatch.REPARTITION) as the
    // listener bus delivers it, after the query may have ended
    spark.sparkContext().listenerBus().waitUntilEmpty();
    return List.of(running.recentProgress());
  }

  public static void main(String[] args) throws Exception {
    SparkSession spark = SparkSession.builder().getOrCreate();
    try {
      List<StreamingQueryProgress> progress = runAvailable(spark, args[0], args[1], args[2]);
      List<String> out = new ArrayList<>();
      List<Long> instances = new ArrayList<>();
      for (StreamingQueryProgress p : progress) {
        for (var op : p.stateOperators()) {
          instances.add(op.numStateStoreInstances());
        }
      }
      out.add("stateInstances=" + instances);
      Long repartitionMs =
          progress.isEmpty() ? null : progress.get(0).durationMs().get("controlBatch.REPARTITION");
      out.add("repartitionMs=" + repartitionMs);
      if (spark.conf().getOption("spark.sql.catalog.stateshift").isDefined()) {
        List<Row> layout =
            spark
                .sql("CALL stateshift.system.inspect_state(checkpoint => '" + args[1] + "')")
                .collectAsList();
        out.add(
            "inspectPartitions="
                + layout.stream().map(r -> r.getAs("partitions")).distinct().toList());
        out.add("inspectStores=" + layout.size());
      }
      Files.write(Path.of(args[3]), out);
    } finally {
      spark.stop();
    }
  }
}
