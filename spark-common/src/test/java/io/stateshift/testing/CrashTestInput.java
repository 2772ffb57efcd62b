package io.stateshift.testing;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.file.Path;
import java.util.List;
import org.apache.spark.sql.SparkSession;

/**
 * The input and the oracle the crash tests share: four slices of events and two flush files under
 * {@code input}, and the windowed count's output over all of them from an uninterrupted run.
 */
public record CrashTestInput(Path input, List<String> oracle) {

  /** Writes the input under {@code dir} and runs the uninterrupted query over it. */
  public static CrashTestInput build(SparkSession spark, Path dir) {
    StreamRun run = new StreamRun(spark, dir.resolve("input"));
    for (int i = 0; i < 4; i++) {
      run.writeEvents(i, 200, 30);
    }
    run.writeFlush(4);
    run.runAvailable(
        StatefulQueries.WINDOWED_COUNT,
        dir.resolve("checkpoint"),
        dir.resolve("sink"),
        StateStores.HDFS.withPartitions(2));
    List<String> rows = run.sinkRows(dir.resolve("sink"), StatefulQueries.WINDOWED_COUNT);
    assertThat(rows).isNotEmpty();
    return new CrashTestInput(dir.resolve("input"), rows);
  }
}
