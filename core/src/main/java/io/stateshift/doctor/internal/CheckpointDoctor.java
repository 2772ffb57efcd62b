package io.stateshift.doctor.internal;

import io.stateshift.checkpoint.Checkpoint;
import io.stateshift.checkpoint.CheckpointFiles;
import io.stateshift.checkpoint.SessionSettings;
import io.stateshift.doctor.DoctorReport;
import io.stateshift.doctor.DoctorSettings;
import io.stateshift.monitor.ProgressHistory;
import java.util.List;
import java.util.Optional;
import org.apache.spark.sql.SparkSession;

/**
 * The doctor: reads a checkpoint (and a progress history, if given) without writing anything and
 * turns what it measures into findings, each with its evidence and its fix. The checks go by area:
 * the logs ({@link HygieneChecks}), the state ({@link StateChecks}) and the flow of batches ({@link
 * ThroughputChecks}).
 */
public final class CheckpointDoctor {
  private CheckpointDoctor() {}

  public static DoctorReport diagnose(
      SparkSession spark,
      String location,
      int cores,
      String historyLocation,
      DoctorSettings settings) {
    return diagnose(spark, location, cores, "given", historyLocation, settings, List.of());
  }

  /** The same, with the output folders of the query's file sinks (the recorded one is added). */
  public static DoctorReport diagnose(
      SparkSession spark,
      String location,
      int cores,
      String coresSource,
      String historyLocation,
      DoctorSettings settings,
      List<String> fileSinks) {
    CheckpointFiles files = CheckpointFiles.at(location, SessionSettings.hadoopConf(spark));
    Checkpoint checkpoint = Checkpoint.load(files);
    Diagnosis d = new Diagnosis(spark, files, checkpoint, cores, coresSource, settings);
    Optional<ProgressHistory> history =
        Optional.ofNullable(historyLocation)
            .map(h -> ProgressHistory.read(h, files.conf()).ofQuery(checkpoint.queryId()));
    HygieneChecks hygiene = new HygieneChecks(d);
    hygiene.checkHygiene(history);
    hygiene.checkFileSinks(fileSinks);
    StateChecks state = new StateChecks(d);
    state.checkState(history);
    ThroughputChecks throughput = new ThroughputChecks(d);
    throughput.checkSources();
    history.ifPresent(throughput::checkHistory);
    return new DoctorReport(
        files.root().toString(),
        checkpoint.queryId(),
        checkpoint.lastCommittedBatch(),
        state.provider,
        state.partitions,
        state.recommended,
        cores,
        coresSource,
        List.copyOf(d.findings),
        List.copyOf(state.storePartitions),
        List.copyOf(state.growth),
        List.copyOf(throughput.sourceBatches));
  }
}
