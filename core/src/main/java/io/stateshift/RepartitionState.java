package io.stateshift;

import io.stateshift.StateShiftException.Reason;
import io.stateshift.protocol.RepartitionRunner;
import org.apache.spark.sql.SparkSession;

/**
 * A repartition of the state of a stopped streaming query, configured fluently and run with {@link
 * #execute()}; {@link #plan()} reports what would be done and writes nothing.
 */
public final class RepartitionState extends StateChange<RepartitionState> {

  RepartitionState(SparkSession spark, String checkpointLocation) {
    super(spark, checkpointLocation);
  }

  @Override
  RepartitionState self() {
    return this;
  }

  @Override
  RepartitionRunner newRunner() {
    if (partitions == null) {
      throw new StateShiftException(
          Reason.INVALID_ARGUMENT,
          "No partition count given: call toPartitions(n) before plan() or execute().");
    }
    return new RepartitionRunner(spark, checkpointLocation, partitions, progress);
  }
}
