package io.stateshift.doctor.internal;

import io.stateshift.StateShiftException;
import io.stateshift.checkpoint.Checkpoint;
import io.stateshift.checkpoint.CheckpointFiles;
import io.stateshift.checkpoint.OffsetLogEntry;
import io.stateshift.doctor.DoctorSettings;
import io.stateshift.doctor.Finding;
import io.stateshift.doctor.Severity;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.TreeSet;
import org.apache.hadoop.fs.FileStatus;
import org.apache.spark.sql.SparkSession;

/**
 * What every check of one diagnosis shares: the checkpoint and its session, the cores assumed, the
 * settings, and the findings so far.
 */
final class Diagnosis {
  final SparkSession spark;
  final CheckpointFiles files;
  final Checkpoint checkpoint;
  final int cores;
  final String coresSource;
  final DoctorSettings settings;
  final List<Finding> findings = new ArrayList<>();

  Diagnosis(
      SparkSession spark,
      CheckpointFiles files,
      Checkpoint checkpoint,
      int cores,
      String coresSource,
      DoctorSettings settings) {
    this.spark = spark;
    this.files = files;
    this.checkpoint = checkpoint;
    this.cores = cores;
    this.coresSource = coresSource;
    this.settings = settings;
  }

  void add(Severity severity, String code, String title, String evidence, String fix) {
    findings.add(new Finding(severity, code, title, evidence, fix));
  }

  /** The batches of the offset log still on disk, in order. */
  List<Long> retainedOffsetBatches() {
    TreeSet<Long> out = new TreeSet<>();
    for (FileStatus status : files.list(files.path("offsets"))) {
      String name = status.getPath().getName();
      if (name.matches("\\d+")) {
        out.add(Long.parseLong(name));
      }
    }
    return new ArrayList<>(out);
  }

  /** The offset log entry of a batch, if it can be read. */
  Optional<OffsetLogEntry> safeOffsets(long batch) {
    try {
      return Optional.of(checkpoint.offsets(batch));
    } catch (StateShiftException e) {
      return Optional.empty();
    }
  }

  static String bytes(long bytes) {
    return io.stateshift.doctor.Sizes.bytes(bytes);
  }
}
