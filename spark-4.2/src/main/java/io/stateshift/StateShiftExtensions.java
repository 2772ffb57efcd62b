package io.stateshift;

import io.stateshift.internal.OnDemandRepartition;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.SparkSessionExtensions;
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan;
import org.apache.spark.sql.catalyst.rules.Rule;
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
  public static final String STATE_PARTITIONS = OnDemandRepartition.STATE_PARTITIONS;

  /**
   * The key under which the repartition time appears in {@code StreamingQueryProgress.durationMs}.
   */
  public static final String PROGRESS_KEY = OnDemandRepartition.PROGRESS_KEY;

  /**
   * Details of the last on-demand repartition of a query in this application: counts, rows and
   * bytes moved per operator and store, and phase times. Empty when none happened.
   */
  public static java.util.Optional<RepartitionResult> lastRepartition(java.util.UUID queryId) {
    return OnDemandRepartition.lastRepartition(queryId);
  }

  @Override
  public BoxedUnit apply(SparkSessionExtensions extensions) {
    // Rule builders receive the session as soon as it analyzes its first plan, which every query
    // does before it starts: the moment to attach the listener that acts at query start.
    extensions.injectResolutionRule(
        (Function1<SparkSession, Rule<LogicalPlan>>)
            session -> {
              OnDemandRepartition.installOn(session);
              return new PassThrough();
            });
    return BoxedUnit.UNIT;
  }

  /** A rule that changes nothing; it only exists to be handed the session. */
  private static final class PassThrough extends Rule<LogicalPlan> {
    @Override
    public LogicalPlan apply(LogicalPlan plan) {
      return plan;
    }

    @Override
    public String ruleName() {
      return "stateshift.attachOnDemandRepartition";
    }
  }
}
