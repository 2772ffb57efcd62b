package io.stateshift.estimate;

import java.util.Locale;
import java.util.Map;

/**
 * What the {@link CostModel} expects a repartition to take.
 *
 * @param seconds the estimated wall time of the repartition (Spark's start not included)
 * @param slots the task slots it was estimated for, and where that count came from
 * @param fittedOn what the model's coefficients were fitted on
 * @param termSeconds the seconds of each term; they add up to {@code seconds}
 * @param job what the estimate was made for
 */
public record CostEstimate(
    double seconds,
    TaskSlots slots,
    String fittedOn,
    Map<CostModel.Term, Double> termSeconds,
    CostModel.Job job) {

  @Override
  public String toString() {
    return "Estimated time: ~"
        + duration(seconds)
        + " on "
        + slots.count()
        + " task slot"
        + (slots.count() == 1 ? "" : "s")
        + " (cost model fitted on "
        + fittedOn
        + "; task slots from "
        + slots.source()
        + ")";
  }

  /** Seconds as a person reads them: "0.8 s", "42 s", "1,250 s (21 min)". */
  static String duration(double seconds) {
    if (seconds < 10) {
      return String.format(Locale.ROOT, "%.1f s", seconds);
    }
    String s = String.format(Locale.ROOT, "%,.0f s", seconds);
    if (seconds >= 2 * 3600) {
      return s + String.format(Locale.ROOT, " (%.1f h)", seconds / 3600);
    }
    return seconds >= 120 ? s + String.format(Locale.ROOT, " (%.0f min)", seconds / 60) : s;
  }
}
