package io.stateshift.estimate;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.stateshift.estimate.CostModel.Job;
import io.stateshift.estimate.CostModel.Term;
import java.io.IOException;
import java.io.Reader;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.EnumMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Properties;
import java.util.TreeSet;
import java.util.stream.Stream;
import org.apache.spark.SparkConf;

/**
 * Fits the {@link CostModel}'s coefficients on every run in bench/results, writes them to the
 * coefficients file, prints the check against each run and rewrites the "Cost model" section of
 * docs/performance.md between {@code <!-- cost-model:begin -->} and {@code <!-- cost-model:end
 * -->}. Run by {@code bench/fit}.
 *
 * <p>The fit is least squares on the relative error (a 2 s run counts as much as a 40 s one), every
 * coefficient at least 0, on the runs in local mode: on the local disk, on the loopback S3 server
 * ({@code bench/run --fs s3}, the only runs with object-store requests) and on a MiniDFSCluster
 * ({@code --fs hdfs}, the only runs with HDFS's per-file cost). The runs on the standalone cluster
 * are checked, not fitted. A term no fitted run exercises (requests, without S3 runs) keeps its
 * coefficient as the coefficients file has it.
 *
 * <p>Usage: {@code CostModelFit <results dir> <markdown file> <coefficients file>}.
 */
public final class CostModelFit {
  static final String BEGIN = "<!-- cost-model:begin -->";
  static final String END = "<!-- cost-model:end -->";

  /** RocksDB's target SST file size: a large store has about one file per this many bytes. */
  static final long SST_FILE_BYTES = 64L << 20;

  private static final ObjectMapper JSON = new ObjectMapper();

  private CostModelFit() {}

  /**
   * One measured run: stateshift's median time on one case of one results file; where its
   * checkpoint was ({@code bench/run --fs}) is its job's storage.
   */
  record Point(
      String file, String label, String master, int slots, long keys, Job job, double seconds) {
    /** Whether the fit uses it: a run in local mode (the standalone cluster's only check it). */
    boolean fitted() {
      return master.startsWith("local");
    }
  }

  public static void main(String[] args) throws IOException {
    Path results = Path.of(args[0]);
    Path doc = Path.of(args[1]);
    Path coefficientsFile = Path.of(args[2]);
    Properties current = new Properties();
    try (Reader in = Files.newBufferedReader(coefficientsFile)) {
      current.load(in);
    }
    List<Point> points = read(results);
    if (points.isEmpty()) {
      throw new IllegalStateException("no stateshift runs in " + results);
    }
    // Fitted on the local-mode runs; the runs on the standalone cluster only check the model.
    List<Point> fitted = points.stream().filter(Point::fitted).toList();
    CostModel model = fit(CostModel.of(current), fitted, fittedOn(fitted));
    Files.writeString(coefficientsFile, properties(model, points));
    replaceSection(doc, section(model, points));
    System.out.println(checkTable(model, points));
    System.err.println(
        "fit: " + points.size() + " run(s); wrote " + coefficientsFile + " and " + doc);
  }

  /** Every stateshift run of every results file that finished. */
  static List<Point> read(Path resultsDir) throws IOException {
    List<Path> files;
    try (Stream<Path> listing = Files.list(resultsDir)) {
      files =
          listing
              .filter(p -> p.getFileName().toString().matches("repartition-.*\\.json"))
              .sorted()
              .toList();
    }
    List<Point> points = new ArrayList<>();
    for (Path file : files) {
      JsonNode results = JSON.readTree(file.toFile());
      if (!results.path("failure").isNull() && !results.path("failure").isMissingNode()) {
        continue;
      }
      JsonNode env = results.path("environment");
      String master = env.path("master").asText();
      int slots = TaskSlots.of(master, new SparkConf(false), env.path("cores").asInt(1)).count();
      String name = file.getFileName().toString().replaceFirst("\\.json$", "");
      for (JsonNode c : results.path("cases")) {
        JsonNode run = c.path("methods").path("stateshift");
        if (!run.path("medianMillis").isNumber()) {
          continue;
        }
        String provider = c.path("provider").asText();
        // bench/run --fs: the timed copies on HDFS or the loopback S3 server
        CostModel.Storage storage =
            switch (c.path("checkpointFs").asText("local")) {
              case "s3" -> CostModel.Storage.OBJECT_STORE;
              case "hdfs" -> CostModel.Storage.HDFS;
              default -> CostModel.Storage.LOCAL;
            };
        boolean rocksDb = provider.startsWith("RocksDB");
        // The benchmark's checkpoints with changelog checkpointing have no snapshot yet: every
        // state byte there is a changelog byte the read side replays.
        long replayBytes = provider.equals("RocksDB+changelog") ? c.path("stateBytes").asLong() : 0;
        int stores =
            c.path("storesPerPartition").isInt()
                ? c.path("storesPerPartition").asInt()
                : Math.max(1, run.path("runs").path(0).path("check").path("rowsPerStore").size());
        // The benchmark counts every file under state/; Hadoop's listing of a local disk hides
        // the .crc file beside each state file, so the validation lists half of them.
        Job job =
            new Job(
                c.path("from").asInt(),
                c.path("to").asInt(),
                stores,
                c.path("stateBytes").asLong(),
                c.path("stateFiles").asLong() / 2,
                rocksDb,
                rocksDb,
                storage,
                replayBytes);
        String label =
            String.format(
                Locale.ROOT,
                "%s, %s%s, %,d keys",
                c.path("shape").asText(),
                c.path("provider").asText(),
                switch (storage) {
                      case HDFS -> ", checkpoint on HDFS";
                      case OBJECT_STORE -> ", checkpoint on S3";
                      case LOCAL -> "";
                    }
                    + (master.startsWith("spark://") ? ", standalone cluster of 2 Workers" : ""),
                c.path("keys").asLong());
        points.add(
            new Point(
                name,
                label,
                master,
                slots,
                c.path("keys").asLong(),
                job,
                run.path("medianMillis").asDouble() / 1000));
      }
    }
    return points;
  }

  /**
   * The coefficients that fit the points best in relative error, each at least 0. Terms whose
   * quantity is 0 in every point keep {@code prior}'s coefficient.
   */
  static CostModel fit(CostModel prior, List<Point> points, String fittedOn) {
    List<Map<Term, Double>> quantities =
        points.stream().map(p -> prior.quantities(p.job(), p.slots())).toList();
    List<Term> free =
        Arrays.stream(Term.values())
            .filter(t -> quantities.stream().anyMatch(q -> q.get(t) != 0))
            .toList();
    double[][] a = new double[points.size()][free.size()];
    double[] b = new double[points.size()];
    for (int i = 0; i < points.size(); i++) {
      double y = points.get(i).seconds();
      double kept = 0;
      for (Term t : Term.values()) {
        if (!free.contains(t)) {
          kept += quantities.get(i).get(t) * prior.coefficients().get(t);
        }
      }
      for (int j = 0; j < free.size(); j++) {
        a[i][j] = quantities.get(i).get(free.get(j)) / y;
      }
      b[i] = (y - kept) / y;
    }
    double[] x = NonNegativeLeastSquares.solve(a, b);
    Map<Term, Double> coefficients = new EnumMap<>(prior.coefficients());
    for (int j = 0; j < free.size(); j++) {
      coefficients.put(free.get(j), x[j]);
    }
    return new CostModel(coefficients, prior.requestsPerFile(), fittedOn);
  }

  /** Where the points were measured, in words, for the estimate's line. */
  static String fittedOn(List<Point> points) {
    TreeSet<String> masters = new TreeSet<>();
    points.forEach(p -> masters.add(p.master()));
    long onS3 =
        points.stream().filter(p -> p.job().storage() == CostModel.Storage.OBJECT_STORE).count();
    long onHdfs = points.stream().filter(p -> p.job().storage() == CostModel.Storage.HDFS).count();
    return points.size()
        + " benchmark runs, "
        + (onS3 > 0
            ? onS3 + " of them with the checkpoint on the loopback S3 server"
            : "on local disk; object-store requests from three loopback S3 runs")
        + (onHdfs > 0 ? ", " + onHdfs + " on a MiniDFSCluster" : "")
        + ", "
        + String.join(", ", masters)
        + "; requests per state file from three loopback S3 runs";
  }

  static String properties(CostModel model, List<Point> points) {
    StringBuilder out = new StringBuilder();
    out.append(
        "# Coefficients of io.stateshift.estimate.CostModel, written by bench/fit (run it again\n"
            + "# after new results land in bench/results). Fitted on the stateshift runs of:\n");
    new TreeSet<>(points.stream().filter(Point::fitted).map(Point::file).toList())
        .forEach(f -> out.append("#   bench/results/").append(f).append(".json\n"));
    out.append(
        "# seconds.requests is fitted on the runs with the checkpoint on the loopback S3\n"
            + "# server (bench/run --fs s3), seconds.hdfsFiles on those on a MiniDFSCluster\n"
            + "# (--fs hdfs); without such runs bench/fit keeps them as they stand.\n"
            + "# Not fitted, kept by bench/fit as they stand here: requestsPerFile.*, from\n"
            + "# S3RequestCostTest's runs on the loopback S3 server (docs/object-stores-and-\n"
            + "# clusters.md, \"Requests on S3\"): requests / state files, over three runs.\n"
            + "# seconds.coldStart: not fitted (the benchmark's runs are warm); what the first\n"
            + "# repartition in a new process took beyond the model, on the demo's checkpoint\n"
            + "# (docs/performance.md).\n");
    out.append("fittedOn=").append(model.fittedOn()).append('\n');
    model
        .coefficients()
        .forEach((t, v) -> out.append("seconds.").append(t.key).append('=').append(v).append('\n'));
    model
        .requestsPerFile()
        .forEach(
            (p, v) -> out.append("requestsPerFile.").append(p).append('=').append(v).append('\n'));
    return out.toString();
  }

  static String checkTable(CostModel model, List<Point> points) {
    StringBuilder t = new StringBuilder();
    t.append(
        "| results file | case | from->to | task slots | state MB | measured s | predicted s | "
            + "error |\n|---|---|---|---|---|---|---|---|\n");
    for (Point p : points) {
      double predicted = model.seconds(p.job(), p.slots());
      t.append(
          String.format(
              Locale.ROOT,
              "| `%s` | %s | %d->%d | %d | %.0f | %.2f | %.2f | %+.0f%% |%n",
              p.file(),
              p.label(),
              p.job().fromPartitions(),
              p.job().toPartitions(),
              p.slots(),
              p.job().stateBytes() / 1e6,
              p.seconds(),
              predicted,
              100 * (predicted - p.seconds()) / p.seconds()));
    }
    return t.toString();
  }

  /** The generated part of docs/performance.md's "Cost model" section. */
  static String section(CostModel model, List<Point> points) {
    StringBuilder s = new StringBuilder();
    s.append("Coefficients (").append(model.fittedOn()).append("):\n\n");
    s.append("| term | coefficient | unit |\n|---|---|---|\n");
    model
        .coefficients()
        .forEach(
            (t, v) ->
                s.append(
                    String.format(
                        Locale.ROOT,
                        "| %s | %.4g | %s%s |%n",
                        t.key,
                        v,
                        t.unit,
                        switch (t) {
                          case REQUESTS ->
                              "; fitted on the runs with the checkpoint on the loopback S3 server";
                          case HDFS_FILES ->
                              "; fitted on the runs with the checkpoint on a MiniDFSCluster";
                          default -> "";
                        })));
    s.append(
        String.format(
            Locale.ROOT,
            "| requests per state file | %s | RocksDB, HDFS-backed; not fitted, from three"
                + " `S3RequestCostTest` runs on the loopback S3 server |%n",
            model.requestsPerFile().values().stream()
                .map(v -> String.format(Locale.ROOT, "%.1f", v))
                .reduce((x, y) -> x + ", " + y)
                .orElse("-")));
    double[] errors =
        points.stream()
            .mapToDouble(p -> Math.abs(model.seconds(p.job(), p.slots()) / p.seconds() - 1))
            .sorted()
            .toArray();
    long within25 = Arrays.stream(errors).filter(e -> e <= 0.25).count();
    s.append(
        String.format(
            Locale.ROOT,
            "%nThe check against every measured run, the runs on the standalone cluster"
                + " (`--master standalone`) included, which the fit does not use (stateshift's"
                + " median; state files as the"
                + " validation lists them, half the benchmark's count, which includes the `.crc`"
                + " files): median error %.0f%%, largest %.0f%%, %d of %d within 25%%.%n%n",
            100 * errors[errors.length / 2],
            100 * errors[errors.length - 1],
            within25,
            errors.length));
    s.append(checkTable(model, points));
    s.append(predictions(model, points));
    return s.toString();
  }

  /** The estimates for 100 GB and 1 TB on 10 and 100 executors of 4 cores. */
  static String predictions(CostModel model, List<Point> points) {
    List<Point> rocksDb =
        points.stream()
            .filter(p -> p.job().storage() == CostModel.Storage.LOCAL && p.job().readsRocksDb())
            .toList();
    double filesPerStore =
        median(
            rocksDb.stream()
                .mapToDouble(p -> (double) p.job().stateFiles() / p.job().oldStores())
                .toArray());
    double[] bytesPerRow =
        rocksDb.stream()
            .filter(p -> p.job().storesPerPartition() == 1)
            .mapToDouble(p -> (double) p.job().stateBytes() / p.keys())
            .sorted()
            .toArray();
    StringBuilder s = new StringBuilder();
    s.append(
        String.format(
            Locale.ROOT,
            "%nPredictions, RocksDB to RocksDB, one store per partition (an aggregation or a "
                + "deduplication; a join has 4), 4 cores per executor, state as the measured "
                + "windowed counts have it: %.0f-%.0f bytes per key (100 GB is about %.0f billion "
                + "keys), %.0f files per store as listed plus one per %d MiB of the store (RocksDB's "
                + "SST target size), all of it in snapshots (no changelog to replay). HDFS: the "
                + "per-file term fitted on a MiniDFSCluster on loopback (a NameNode and a "
                + "DataNode in one JVM; a real cluster's round trips are longer). S3: the request "
                + "term with the loopback S3 runs' coefficient (their overlap: 2 task slots of 4 "
                + "stores, 16 driver threads; a real object store's requests are slower, so this "
                + "is a floor). Not measured anywhere near this size: extrapolations, in "
                + "seconds.%n%n",
            bytesPerRow[0],
            bytesPerRow[bytesPerRow.length - 1],
            100e9 / median(bytesPerRow) / 1e9,
            filesPerStore,
            SST_FILE_BYTES >> 20));
    s.append(
        "| state | from->to | local disk, 10 executors (40 slots) | local disk, 100 executors "
            + "(400 slots) | HDFS, 10 executors | HDFS, 100 executors | S3, 10 executors | "
            + "S3, 100 executors |\n|---|---|---|---|---|---|---|---|\n");
    Map<String, Long> sizes = new LinkedHashMap<>();
    sizes.put("100 GB", 100_000_000_000L);
    sizes.put("1 TB", 1_000_000_000_000L);
    for (Map.Entry<String, Long> size : sizes.entrySet()) {
      for (int from : new int[] {200, 2_000, 10_000}) {
        for (int to : new int[] {from / 2, from * 2}) {
          long bytes = size.getValue();
          long files = Math.round(from * (filesPerStore + (double) bytes / from / SST_FILE_BYTES));
          s.append(String.format(Locale.ROOT, "| %s | %,d->%,d |", size.getKey(), from, to));
          for (CostModel.Storage storage : CostModel.Storage.values()) {
            Job job = new Job(from, to, 1, bytes, files, true, true, storage, 0);
            for (int slots : new int[] {40, 400}) {
              s.append(' ').append(CostEstimate.duration(model.seconds(job, slots))).append(" |");
            }
          }
          s.append('\n');
        }
      }
    }
    return s.toString();
  }

  private static double median(double[] values) {
    double[] sorted = values.clone();
    Arrays.sort(sorted);
    return sorted[sorted.length / 2];
  }

  static void replaceSection(Path doc, String section) throws IOException {
    String text = Files.readString(doc);
    int begin = text.indexOf(BEGIN);
    int end = text.indexOf(END);
    if (begin < 0 || end < begin) {
      throw new IllegalStateException(doc + " has no " + BEGIN + " ... " + END + " markers");
    }
    String updated =
        text.substring(0, begin + BEGIN.length()) + "\n" + section + text.substring(end);
    if (!updated.equals(text)) {
      Files.writeString(doc, updated);
    }
  }
}
