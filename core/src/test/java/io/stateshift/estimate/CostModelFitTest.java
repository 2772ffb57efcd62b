package io.stateshift.estimate;

import static org.assertj.core.api.Assertions.assertThat;

import io.stateshift.estimate.CostModel.Job;
import io.stateshift.estimate.CostModel.Term;
import io.stateshift.estimate.CostModelFit.Point;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import org.assertj.core.data.Percentage;
import org.junit.jupiter.api.Test;

class CostModelFitTest {
  /**
   * Known coefficients; the request term is left to the prior (the points are on local disk or
   * HDFS, none on an object store).
   */
  private static final CostModel TRUTH =
      CostModelTest.model(0.8, 0.05, 0.12, 0.003, 6e-9, 0.02, 0, 0.004);

  /** Runs of varied shapes whose times the known model gives exactly. */
  private static List<Point> points(CostModel truth, long seed) {
    Random random = new Random(seed);
    List<Point> points = new ArrayList<>();
    int[][] directions = {{8, 16}, {16, 6}, {200, 64}, {200, 400}, {64, 8}, {12, 100}};
    for (int i = 0; i < 24; i++) {
      int[] d = directions[i % directions.length];
      boolean rocksDb = random.nextBoolean();
      int stores = i % 5 == 0 ? 4 : 1;
      long bytes = 1_000_000L + random.nextInt(400_000_000);
      long files = (long) d[0] * stores * (4 + random.nextInt(12));
      int slots = 1 + random.nextInt(8);
      boolean onHdfs = i % 4 == 3;
      Job job =
          new Job(
              d[0],
              d[1],
              stores,
              bytes,
              files,
              rocksDb,
              rocksDb,
              onHdfs ? CostModel.Storage.HDFS : CostModel.Storage.LOCAL,
              0);
      points.add(
          new Point("f" + i, "case " + i, "local", slots, 1, job, truth.seconds(job, slots)));
    }
    return points;
  }

  @Test
  void theFitRecoversKnownCoefficientsFromExactPoints() {
    CostModel prior = CostModelTest.model(0, 0, 0, 0, 0, 0.02);
    CostModel fitted = CostModelFit.fit(prior, points(TRUTH, 7), "synthetic");
    for (Term t : Term.values()) {
      assertThat(fitted.coefficients().get(t))
          .as(t.key)
          .isCloseTo(TRUTH.coefficients().get(t), Percentage.withPercentage(1e-6));
    }
  }

  @Test
  void aTermNoPointExercisesKeepsItsPriorAndNoCoefficientGoesNegative() {
    CostModel prior = CostModelTest.model(0, 0, 0, 0, 0, 0.5);
    // times that fall with more old stores: unconstrained least squares would go negative there
    List<Point> points = new ArrayList<>();
    for (Point p : points(TRUTH, 11)) {
      double seconds = Math.max(0.1, p.seconds() - 0.3 * p.job().oldStores() / p.slots());
      points.add(new Point(p.file(), p.label(), p.master(), p.slots(), p.keys(), p.job(), seconds));
    }
    CostModel fitted = CostModelFit.fit(prior, points, "synthetic");
    assertThat(fitted.coefficients().get(Term.REQUESTS)).isEqualTo(0.5);
    assertThat(fitted.coefficients().values()).allMatch(v -> v >= 0);
    assertThat(fitted.coefficients().get(Term.OLD_STORES)).isZero();
  }

  @Test
  void nonNegativeLeastSquaresMatchesTheUnconstrainedSolutionWhenItIsNonNegative() {
    double[][] a = {{1, 0}, {0, 1}, {1, 1}};
    double[] b = {1, 2, 3.3};
    double[] x = NonNegativeLeastSquares.solve(a, b);
    // normal equations: [[2,1],[1,2]] x = [4.3, 5.3] -> x = (1.1, 2.1)
    assertThat(x[0]).isCloseTo(1.1, org.assertj.core.data.Offset.offset(1e-12));
    assertThat(x[1]).isCloseTo(2.1, org.assertj.core.data.Offset.offset(1e-12));
    double[] clamped =
        NonNegativeLeastSquares.solve(new double[][] {{1, 1}, {1, 2}}, new double[] {1, 0});
    // unconstrained: (2, -1); with x >= 0 the best is x2 = 0, x1 = 0.5
    assertThat(clamped[1]).isZero();
    assertThat(clamped[0]).isCloseTo(0.5, org.assertj.core.data.Offset.offset(1e-12));
  }
}
