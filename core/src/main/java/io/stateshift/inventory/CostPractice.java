package io.stateshift.inventory;

import io.stateshift.config.StateShiftConf;
import io.stateshift.doctor.DoctorReport;
import io.stateshift.doctor.Finding;
import io.stateshift.doctor.Sizes;
import io.stateshift.inventory.FleetReport.Kind;
import io.stateshift.inventory.FleetReport.Recommendation;
import io.stateshift.inventory.FleetReport.Stream;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.function.Function;

/**
 * The cost practice for a fleet of streams: run mostly idle streams as scheduled availableNow jobs,
 * pack light streams into one application, give heavy ones an application of their own; and, per
 * stream, the doctor's partition count and state store advice. Each recommendation carries the
 * numbers it rests on.
 */
final class CostPractice {
  /** The doctor's findings that mean another partition count. */
  private static final Set<String> PARTITION_FINDINGS =
      Set.of("TOO_FEW_PARTITIONS", "TOO_MANY_PARTITIONS", "PARTITIONS_TOO_LARGE");

  private final double idleShare;
  private final long lightStateBytes;
  private final double lightBusyShare;
  private final long heavyStateBytes;
  private final double heavyBusyShare;

  /** The thresholds from {@code lookup} (full setting key), else their defaults. */
  CostPractice(Function<String, String> lookup) {
    idleShare = StateShiftConf.INVENTORY_IDLE_SHARE.from(lookup);
    lightStateBytes = StateShiftConf.INVENTORY_LIGHT_STATE_BYTES.from(lookup);
    lightBusyShare = StateShiftConf.INVENTORY_LIGHT_BUSY_SHARE.from(lookup);
    heavyStateBytes = StateShiftConf.INVENTORY_HEAVY_STATE_BYTES.from(lookup);
    heavyBusyShare = StateShiftConf.INVENTORY_HEAVY_BUSY_SHARE.from(lookup);
  }

  /** The recommendations for these streams; {@code doctor} holds each readable stream's report. */
  List<Recommendation> recommend(List<Stream> streams, Map<String, DoctorReport> doctor) {
    List<Recommendation> out = new ArrayList<>();
    List<Stream> readable = streams.stream().filter(s -> s.error() == null).toList();
    for (Stream s : readable) {
      scheduled(s).ifPresent(out::add);
    }
    packLight(readable).ifPresent(out::add);
    long fleetBytes =
        readable.stream().mapToLong(s -> s.stateBytes() == null ? 0 : s.stateBytes()).sum();
    if (readable.size() > 1) {
      for (Stream s : readable) {
        isolated(s, fleetBytes).ifPresent(out::add);
      }
    }
    for (Stream s : readable) {
      DoctorReport report = doctor.get(s.name());
      if (report == null) {
        continue;
      }
      for (Finding f : report.findings()) {
        if (PARTITION_FINDINGS.contains(f.code())) {
          out.add(
              new Recommendation(
                  Kind.CHANGE_PARTITIONS,
                  List.of(s.name()),
                  s.name()
                      + ": "
                      + report.partitions()
                      + " -> "
                      + report.recommendedPartitions()
                      + " state partitions ("
                      + f.title()
                      + ")",
                  f.evidence(),
                  f.fix()));
        } else if (f.code().equals("HDFS_STORE_LARGE_STATE")) {
          out.add(
              new Recommendation(
                  Kind.MOVE_TO_ROCKSDB,
                  List.of(s.name()),
                  s.name() + ": move its state to RocksDB",
                  f.evidence(),
                  f.fix()));
        }
      }
    }
    return out;
  }

  private java.util.Optional<Recommendation> scheduled(Stream s) {
    if (s.idleShare() == null || s.idleShare() < idleShare || s.retainedBatches() < 3) {
      return java.util.Optional.empty();
    }
    long gapMs = Math.round(3_600_000 / s.batchesPerHour());
    return java.util.Optional.of(
        new Recommendation(
            Kind.SCHEDULE_AVAILABLE_NOW,
            List.of(s.name()),
            s.name() + ": idle most of the time; run it as a scheduled availableNow job",
            String.format(
                "idle %s of the time between its first and last retained batch (%s): %d batches,"
                    + " %s per hour, median batch %s; threshold %s idle"
                    + " (spark.stateshift.inventory.idleShare)",
                FleetReport.percent(s.idleShare()),
                FleetReport.millis(span(s)),
                s.retainedBatches(),
                FleetReport.decimal(s.batchesPerHour()),
                s.medianBatchMs() == null ? "-" : FleetReport.millis(s.medianBatchMs()),
                FleetReport.percent(idleShare)),
            "Start the query with .trigger(Trigger.AvailableNow()) from a scheduler (every "
                + FleetReport.millis(gapMs)
                + ", its present pace, or as late as its consumers allow) on a cluster that stops"
                + " after each run, instead of keeping a cluster up for it; the checkpoint carries"
                + " over as it is (same checkpointLocation). A stream that runs so already"
                + " leaves the same times: then nothing is to be done."));
  }

  private static long span(Stream s) {
    return Math.round((s.retainedBatches() - 1) * 3_600_000 / s.batchesPerHour());
  }

  private java.util.Optional<Recommendation> packLight(List<Stream> streams) {
    List<Stream> light =
        streams.stream()
            .filter(s -> s.busyShare() != null && s.busyShare() <= lightBusyShare)
            .filter(s -> s.stateBytes() == null || s.stateBytes() <= lightStateBytes)
            .sorted(Comparator.comparingDouble(Stream::busyShare))
            .toList();
    List<Stream> packed = new ArrayList<>();
    double busy = 0;
    for (Stream s : light) {
      if (busy + s.busyShare() > 0.75) {
        break; // leave one application room for the batches' peaks
      }
      packed.add(s);
      busy += s.busyShare();
    }
    if (packed.size() < 2) {
      return java.util.Optional.empty();
    }
    long bytes = packed.stream().mapToLong(s -> s.stateBytes() == null ? 0 : s.stateBytes()).sum();
    List<String> each =
        packed.stream()
            .map(
                s ->
                    s.name()
                        + " busy "
                        + FleetReport.percent(s.busyShare())
                        + ", "
                        + (s.stateBytes() == null ? "no state" : Sizes.bytes(s.stateBytes())))
            .toList();
    return java.util.Optional.of(
        new Recommendation(
            Kind.PACK_LIGHT_STREAMS,
            packed.stream().map(Stream::name).toList(),
            packed.size() + " light streams can share one application",
            String.join("; ", each)
                + String.format(
                    "; together busy %s of the time with %s of state (light: at most %s of state"
                        + " and busy at most %s)",
                    FleetReport.percent(busy),
                    Sizes.bytes(bytes),
                    Sizes.bytes(lightStateBytes),
                    FleetReport.percent(lightBusyShare)),
            "Run them as queries of one application (one SparkSession, each query with its own"
                + " checkpointLocation and queryName, spark.scheduler.mode=FAIR with a pool per"
                + " query) on one cluster instead of a cluster each: their batches together keep"
                + " it busy "
                + FleetReport.percent(busy)
                + " of the time."));
  }

  private java.util.Optional<Recommendation> isolated(Stream s, long fleetBytes) {
    boolean bigState = s.stateBytes() != null && s.stateBytes() >= heavyStateBytes;
    boolean busy = s.busyShare() != null && s.busyShare() >= heavyBusyShare;
    if (!bigState && !busy) {
      return java.util.Optional.empty();
    }
    String state =
        s.stateBytes() == null
            ? "no state"
            : Sizes.bytes(s.stateBytes())
                + (fleetBytes > 0
                    ? " of state ("
                        + FleetReport.percent(s.stateBytes() / (double) fleetBytes)
                        + " of the fleet's "
                        + Sizes.bytes(fleetBytes)
                        + ")"
                    : " of state");
    return java.util.Optional.of(
        new Recommendation(
            Kind.ISOLATE_HEAVY_STREAM,
            List.of(s.name()),
            s.name() + ": heavy; give it an application of its own",
            state
                + (s.busyShare() == null
                    ? ""
                    : ", busy " + FleetReport.percent(s.busyShare()) + " of the time")
                + String.format(
                    " (heavy: at least %s of state or busy at least %s)",
                    Sizes.bytes(heavyStateBytes), FleetReport.percent(heavyBusyShare)),
            "Run it in an application and cluster of its own, sized for it (state partitions in"
                + " whole waves of its cores), so that its batches neither wait for nor slow the"
                + " other streams; when its cores change, change its partitions with"
                + " `./stateshift repartition`."));
  }
}
