package io.stateshift.cli;

import io.stateshift.checkpoint.spi.SparkLines;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Comparator;
import java.util.stream.Stream;
import org.apache.spark.SparkConf;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.streaming.StreamingQuery;
import org.apache.spark.sql.streaming.Trigger;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.StructType;

/**
 * The training run behind the launcher's class-data archive. Spark, Hadoop and RocksDB load about
 * 15,000 classes at every start; parsing and verifying them is half the CPU of a short command on 2
 * cores. After each build {@code ./stateshift} runs this class once with the JVM's {@code
 * -XX:ArchiveClassesAtExit}: it builds a tiny stateful checkpoint on each state store (RocksDB and
 * HDFS-backed) and runs the CLI's {@code repartition}, {@code inspect} and {@code verify} on them,
 * so the archive holds what those commands load. Later starts map the archived classes instead.
 * Nothing outside a temporary folder is touched.
 */
public final class StartupTraining {
  private static final StructType INPUT = new StructType().add("key", DataTypes.LongType);
  private static final String PROVIDER = "spark.sql.streaming.stateStore.providerClass";
  private static final String[] PROVIDERS = {
    "org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider",
    "org.apache.spark.sql.execution.streaming.state.HDFSBackedStateStoreProvider"
  };

  private StartupTraining() {}

  public static void main(String[] args) throws Exception {
    Path base = Files.createTempDirectory("stateshift-training");
    int failures = 0;
    try {
      // the classic builder, as the commands use (SparkSession.builder() reflects first)
      SparkSession spark =
          SparkLines.get()
              .getOrCreateSession(
                  new SparkConf()
                      .setAppName("stateshift training")
                      .setMaster("local[2]")
                      .set("spark.ui.enabled", "false")
                      .set("spark.sql.session.timeZone", "UTC"));
      spark.sparkContext().setLogLevel("WARN");
      Path input = base.resolve("input");
      spark.range(0, 2000, 1, 2).selectExpr("id % 200 AS key").write().parquet(input.toString());
      StateShiftCli cli = new StateShiftCli(System.out, System.err);
      for (int i = 0; i < PROVIDERS.length; i++) {
        String checkpoint = base.resolve("checkpoint-" + i).toString();
        spark.conf().set(PROVIDER, PROVIDERS[i]);
        spark.conf().set("spark.sql.shuffle.partitions", "2");
        StreamingQuery query =
            spark
                .readStream()
                .schema(INPUT)
                .option("maxFilesPerTrigger", 1)
                .parquet(input.toString())
                .groupBy("key")
                .count()
                .writeStream()
                .format("noop")
                .outputMode("update")
                .option("checkpointLocation", checkpoint)
                .trigger(Trigger.AvailableNow())
                .start();
        query.awaitTermination();
        for (String[] command :
            new String[][] {
              // the query stopped a moment ago: its last commit is too recent to prove that
              {"repartition", "--checkpoint", checkpoint, "--partitions", "3", "--assume-stopped"},
              {"inspect", "--checkpoint", checkpoint},
              {"verify", "--checkpoint", checkpoint}
            }) {
          if (cli.run(command) != 0) {
            failures++;
          }
        }
      }
      spark.stop();
    } finally {
      deleteRecursively(base);
    }
    // A failed training only makes a smaller archive; the launcher does not depend on it.
    System.exit(failures == 0 ? 0 : 1);
  }

  private static void deleteRecursively(Path dir) {
    try (Stream<Path> walk = Files.walk(dir)) {
      walk.sorted(Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }
}
