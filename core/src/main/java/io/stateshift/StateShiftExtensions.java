package io.stateshift;

import io.stateshift.checkpoint.spi.SparkLines;
import org.apache.spark.sql.SparkSessionExtensions;
import scala.Function1;
import scala.runtime.BoxedUnit;

/**
 * Enables on-demand state repartitioning from conf alone:
 *
 * <pre>
 * spark.sql.extensions=io.stateshift.StateShiftExtensions
 * spark.sql.streaming.stateStore.partitions=16
 * </pre>
 *
 * When a stateful query starts on a checkpoint whose state has another partition count, its state
 * is redistributed into the configured count before the first batch, and the time it took is
 * reported as {@code durationMs["controlBatch.REPARTITION"]} in the first progress event.
 */
public final class StateShiftExtensions implements Function1<SparkSessionExtensions, BoxedUnit> {
  /** The setting users change: the number of state partitions of stateful queries. */
  public static final String STATE_PARTITIONS = "spark.sql.streaming.stateStore.partitions";

  /**
   * The key under which the repartition time appears in {@code StreamingQueryProgress.durationMs}.
   */
  public static final String PROGRESS_KEY = "controlBatch.REPARTITION";

  /**
   * Present in the same progress only when the repartition started from a prepared layout ({@code
   * stateshift prepare}): the time it took to replay the batches committed since and write the new
   * partitions, within {@link #PROGRESS_KEY}'s time.
   */
  public static final String PROGRESS_PREPARED_KEY = PROGRESS_KEY + ".preparedReplay";

  /**
   * Details of the last on-demand repartition of a query in this application: counts, rows and
   * bytes moved per operator and store, and phase times. Empty when none happened.
   */
  public static java.util.Optional<RepartitionResult> lastRepartition(java.util.UUID queryId) {
    return SparkLines.get().lastRepartition(queryId);
  }

  @Override
  public BoxedUnit apply(SparkSessionExtensions extensions) {
    SparkLines.get().installExtensions(extensions);
    return BoxedUnit.UNIT;
  }
}
