package io.stateshift.testing;

import java.nio.file.Files;
import java.nio.file.Path;
import org.apache.spark.api.java.function.VoidFunction2;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.streaming.StreamingQuery;
import org.apache.spark.sql.streaming.Trigger;

/**
 * The windowed-count query of {@link StreamRun} in a JVM of its own, so tests can run a query in
 * another process than the repartition, or kill one while it starts.
 *
 * <p>Arguments: input checkpoint sink store(HDFS|ROCKSDB_CHANGELOG) shufflePartitions
 * withExtension(true|false) mode(running|availableNow) statePartitions(0: unset) marker
 * batchesBeforeMarker. In {@code running} mode the query keeps running (processing-time trigger, no
 * batches without data) and the marker file is written once it has run that many batches with
 * input; in {@code availableNow} mode it processes what is there and exits.
 */
public final class RunningQueryMain {
  private RunningQueryMain() {}

  public static void main(String[] args) throws Exception {
    Path input = Path.of(args[0]);
    String checkpoint = args[1];
    String sink = args[2];
    StateStores store = StateStores.valueOf(args[3]);
    boolean extension = Boolean.parseBoolean(args[5]);
    boolean running = args[6].equals("running");
    SparkSession.Builder builder =
        SparkSession.builder()
            .master("local[2]")
            .appName("stateshift-child-query")
            .config("spark.ui.enabled", "false")
            .config("spark.sql.session.timeZone", "UTC")
            .config("spark.sql.adaptive.enabled", "false")
            .config("spark.sql.streaming.stateStore.maintenanceInterval", "24h")
            .config("spark.sql.shuffle.partitions", args[4])
            .config("spark.sql.streaming.noDataMicroBatches.enabled", Boolean.toString(!running));
    if (extension) {
      builder.config("spark.sql.extensions", "io.stateshift.StateShiftExtensions");
    }
    store.conf().forEach(builder::config);
    if (!args[7].equals("0")) {
      builder.config("spark.sql.streaming.stateStore.partitions", args[7]);
    }
    SparkSession spark = builder.getOrCreate();
    spark.sparkContext().setLogLevel("WARN");
    long batchesBeforeMarker = Long.parseLong(args[9]);
    Dataset<Row> events =
        spark
            .readStream()
            .schema(StreamRun.EVENT_SCHEMA)
            .option("maxFilesPerTrigger", 1)
            .json(input.toString());
    StreamingQuery query =
        StatefulQueries.WINDOWED_COUNT
            .apply(events)
            .writeStream()
            .outputMode("append")
            .option("checkpointLocation", checkpoint)
            .trigger(running ? Trigger.ProcessingTime(300) : Trigger.AvailableNow())
            .foreachBatch(
                (VoidFunction2<Dataset<Row>, Long>)
                    (batch, batchId) ->
                        batch.write().mode("overwrite").parquet(sink + "/batch=" + batchId))
            .start();
    if (!running) {
      query.awaitTermination();
      spark.stop();
      return;
    }
    while (true) { // wait until the batches the test expects have run
      long done =
          java.util.Arrays.stream(query.recentProgress()).filter(p -> p.numInputRows() > 0).count();
      if (done >= batchesBeforeMarker || query.exception().isDefined()) {
        break;
      }
      Thread.sleep(200);
    }
    if (query.exception().isDefined()) {
      throw query.exception().get();
    }
    Files.writeString(Path.of(args[8]), "running, query id " + query.id() + "\n");
    query.awaitTermination(); // until the test kills this process
  }
}
