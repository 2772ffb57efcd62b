package io.stateshift.doctor;

import io.stateshift.doctor.internal.CheckpointDoctor;
import java.util.HashMap;
import java.util.Map;
import java.util.Objects;
import org.apache.spark.sql.SparkSession;

/**
 * Checks a streaming checkpoint against the production checklist, read-only: {@code
 * StateShift.get(spark).doctor(checkpoint).cores(16).history(path).run()}.
 */
public final class Doctor {
  private final SparkSession spark;
  private final String checkpoint;
  private final Map<String, String> settings = new HashMap<>();
  private int cores = -1;
  private String coresSource = "given";
  private String history;
  private final java.util.List<String> fileSinks = new java.util.ArrayList<>();

  public Doctor(SparkSession spark, String checkpoint) {
    this.spark = Objects.requireNonNull(spark, "spark");
    this.checkpoint = checkpoint;
  }

  /**
   * The cores the query runs on, and where that figure comes from (said in the report), such as
   * {@code "--cores"} or {@code "spark.cores.max in --conf"}.
   */
  public Doctor cores(int cores, String source) {
    cores(cores);
    this.coresSource = source == null ? "given" : source;
    return this;
  }

  /**
   * The cores the query runs on (default: {@code spark.cores.max}, else {@code
   * spark.executor.instances} x {@code spark.executor.cores}, else the session's master: {@code
   * local[N]}, or the session's default parallelism).
   */
  public Doctor cores(int cores) {
    if (cores < 1) {
      throw new io.stateshift.StateShiftException(
          io.stateshift.StateShiftException.Reason.INVALID_ARGUMENT,
          "cores must be at least 1, got " + cores + ".");
    }
    this.cores = cores;
    return this;
  }

  /** A progress history written by the monitor (a file or a folder of .jsonl files). */
  public Doctor history(String location) {
    this.history = location;
    return this;
  }

  /**
   * The output folder of the query's file sink: its log is checked for batches it lacks (the sink a
   * query started with StateShiftExtensions put on record is checked without this).
   */
  public Doctor fileSink(String outputLocation) {
    if (outputLocation != null && !outputLocation.isBlank()) {
      fileSinks.add(outputLocation);
    }
    return this;
  }

  /** One threshold, by its name without the {@code spark.stateshift.doctor.} prefix. */
  public Doctor setting(String name, String value) {
    String key =
        name.startsWith(DoctorSettings.PREFIX)
            ? name.substring(DoctorSettings.PREFIX.length())
            : name;
    if (!DoctorSettings.DEFAULTS.containsKey(key)) {
      throw new io.stateshift.StateShiftException(
          io.stateshift.StateShiftException.Reason.INVALID_ARGUMENT,
          "Unknown doctor setting '"
              + name
              + "'; settings are "
              + DoctorSettings.DEFAULTS.keySet()
              + ".");
    }
    settings.put(key, value);
    return this;
  }

  public DoctorReport run() {
    DoctorSettings resolved =
        DoctorSettings.resolve(
            key -> {
              String name = key.substring(DoctorSettings.PREFIX.length());
              return settings.containsKey(name) ? settings.get(name) : spark.conf().get(key, null);
            });
    int effectiveCores = cores;
    String source = coresSource;
    if (cores <= 0) {
      org.apache.spark.SparkConf conf = spark.sparkContext().getConf();
      if (conf.contains("spark.cores.max")) {
        effectiveCores = conf.getInt("spark.cores.max", 1);
        source = "spark.cores.max";
      } else {
        io.stateshift.estimate.TaskSlots slots = io.stateshift.estimate.TaskSlots.of(spark);
        effectiveCores = slots.count();
        source = slots.source();
      }
    }
    return CheckpointDoctor.diagnose(
        spark, checkpoint, effectiveCores, source, history, resolved, fileSinks);
  }
}
