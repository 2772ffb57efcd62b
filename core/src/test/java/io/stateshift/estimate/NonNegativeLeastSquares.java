package io.stateshift.estimate;

/**
 * Least squares with every coefficient at least 0, for the few coefficients of the cost model: the
 * best of the unconstrained solutions on each subset of the columns whose coefficients all come out
 * non-negative. The constrained optimum is the unconstrained one on its own support, so it is among
 * them; with 5 columns that is 32 small solves.
 */
final class NonNegativeLeastSquares {
  private NonNegativeLeastSquares() {}

  /** The x >= 0 minimizing |a x - b|; a is rows x columns. */
  static double[] solve(double[][] a, double[] b) {
    int columns = a[0].length;
    double[] best = new double[columns];
    double bestResidual = residual(a, b, best);
    for (int subset = 1; subset < (1 << columns); subset++) {
      double[] x = solveOn(a, b, subset);
      if (x == null) {
        continue;
      }
      double r = residual(a, b, x);
      if (r < bestResidual) {
        bestResidual = r;
        best = x;
      }
    }
    return best;
  }

  /** The unconstrained solution on the columns in {@code subset}, or null if one is negative. */
  private static double[] solveOn(double[][] a, double[] b, int subset) {
    int[] cols =
        java.util.stream.IntStream.range(0, a[0].length)
            .filter(c -> (subset & (1 << c)) != 0)
            .toArray();
    int k = cols.length;
    // The columns scaled to unit length, so bytes (1e8) and the fixed term (1) solve alike.
    double[] scale = new double[k];
    for (int j = 0; j < k; j++) {
      double sum = 0;
      for (double[] row : a) {
        sum += row[cols[j]] * row[cols[j]];
      }
      scale[j] = Math.sqrt(sum);
      if (scale[j] == 0) {
        return null;
      }
    }
    double[][] normal = new double[k][k + 1]; // (A'A | A'b)
    for (int i = 0; i < a.length; i++) {
      for (int j = 0; j < k; j++) {
        double aij = a[i][cols[j]] / scale[j];
        for (int l = 0; l < k; l++) {
          normal[j][l] += aij * a[i][cols[l]] / scale[l];
        }
        normal[j][k] += aij * b[i];
      }
    }
    double[] y = gauss(normal);
    if (y == null) {
      return null;
    }
    double[] x = new double[a[0].length];
    for (int j = 0; j < k; j++) {
      if (y[j] < 0) {
        return null;
      }
      x[cols[j]] = y[j] / scale[j];
    }
    return x;
  }

  /** Gaussian elimination with partial pivoting; null for a singular system. */
  private static double[] gauss(double[][] m) {
    int n = m.length;
    for (int p = 0; p < n; p++) {
      int max = p;
      for (int r = p + 1; r < n; r++) {
        if (Math.abs(m[r][p]) > Math.abs(m[max][p])) {
          max = r;
        }
      }
      double[] swap = m[p];
      m[p] = m[max];
      m[max] = swap;
      if (Math.abs(m[p][p]) < 1e-12) {
        return null;
      }
      for (int r = p + 1; r < n; r++) {
        double f = m[r][p] / m[p][p];
        for (int c = p; c <= n; c++) {
          m[r][c] -= f * m[p][c];
        }
      }
    }
    double[] x = new double[n];
    for (int r = n - 1; r >= 0; r--) {
      double sum = m[r][n];
      for (int c = r + 1; c < n; c++) {
        sum -= m[r][c] * x[c];
      }
      x[r] = sum / m[r][r];
    }
    return x;
  }

  static double residual(double[][] a, double[] b, double[] x) {
    double sum = 0;
    for (int i = 0; i < a.length; i++) {
      double r = -b[i];
      for (int j = 0; j < x.length; j++) {
        r += a[i][j] * x[j];
      }
      sum += r * r;
    }
    return sum;
  }
}
