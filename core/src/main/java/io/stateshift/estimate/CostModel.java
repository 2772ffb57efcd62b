package io.stateshift.estimate;

import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Properties;
import java.util.Set;

/**
 * A repartition's wall time from the size of its work, with coefficients fitted on measured runs
 * ({@code bench/fit}, docs/performance.md "Cost model"):
 *
 * <pre>
 * seconds = fixed + requests x perRequest [+ coldStart, the first in a JVM]
 *         + (old stores x perOldStore + files read x (perFile + perHdfsFile) + bytes x perByte
 *            + changelog bytes replayed x perReplayedByte) / read slots
 *         + (new stores x perNewStore + files written x (perFile + perHdfsFile)
 *            + bytes x perByte) / write slots
 * </pre>
 *
 * The read stage splits the old partitions and the write stage the new ones among tasks, so each
 * side runs on {@code min(task slots, its partitions)} slots. Requests (on object stores only) cost
 * what they added to a measured run on an S3 server, with that run's overlap of the driver's and
 * the tasks' requests; perHdfsFile (on HDFS only) is what a file's NameNode calls and DataNode
 * pipeline added to measured runs on a MiniDFSCluster.
 *
 * @param coefficients seconds per unit of each {@link Term}
 * @param requestsPerFile object-store requests per state file, by the provider that reads the state
 *     ({@code rocksdb}, {@code hdfs})
 * @param fittedOn what the coefficients were fitted on, in words
 */
public record CostModel(
    Map<Term, Double> coefficients, Map<String, Double> requestsPerFile, String fittedOn) {

  /** The resource the coefficients are read from, on the class path. */
  public static final String RESOURCE = "/io/stateshift/estimate/cost-model.properties";

  /** Files a new store writes: RocksDB's SST file and version zip; the HDFS-backed snapshot. */
  static final int ROCKSDB_FILES_PER_NEW_STORE = 2;

  static final int HDFS_FILES_PER_NEW_STORE = 1;

  /** Where a checkpoint lives, as far as the cost of its files goes. */
  public enum Storage {
    /** A local or mounted file system: no term of its own. */
    LOCAL,
    /** HDFS: NameNode calls and a DataNode pipeline per file. */
    HDFS,
    /** An object store (S3, ABFS, GCS): requests per file. */
    OBJECT_STORE;

    private static final Set<String> OBJECT_STORES =
        Set.of("s3a", "s3", "s3n", "abfs", "abfss", "wasb", "wasbs", "gs", "oss", "cos");
    private static final Set<String> HDFS_SCHEMES = Set.of("hdfs", "viewfs", "webhdfs", "swebhdfs");

    /** The storage of a checkpoint location, by its scheme. */
    public static Storage of(String location) {
      int colon = location.indexOf(':');
      String scheme = colon > 0 ? location.substring(0, colon).toLowerCase(Locale.ROOT) : "";
      return OBJECT_STORES.contains(scheme)
          ? OBJECT_STORE
          : HDFS_SCHEMES.contains(scheme) ? HDFS : LOCAL;
    }
  }

  /** The model's terms, each with its coefficient's key in the resource file. */
  public enum Term {
    FIXED("fixed", "seconds per job"),
    OLD_STORES("oldStores", "seconds per old store opened, per task slot"),
    NEW_STORES("newStores", "seconds per new store written, per task slot"),
    FILES("files", "seconds per state file read or written, per task slot"),
    BYTES("bytes", "seconds per byte read and per byte written, per task slot"),
    REQUESTS("requests", "seconds per object-store request, as overlapped in the measured run"),
    REPLAY_BYTES(
        "replayBytes",
        "seconds per byte of RocksDB changelog replayed on top of a snapshot, per task slot"),
    HDFS_FILES(
        "hdfsFiles",
        "seconds per state file read or written on HDFS, on top of files, per task slot"),
    COLD_START(
        "coldStart",
        "seconds the first repartition in a JVM adds: loading and compiling its code paths and "
            + "starting its first Spark jobs (as the command line runs it, in a new process)");

    public final String key;
    public final String unit;

    Term(String key, String unit) {
      this.key = key;
      this.unit = unit;
    }
  }

  /**
   * What a repartition works on.
   *
   * @param storesPerPartition state stores per partition (a join has 4)
   * @param stateBytes bytes of the state as listed ({@link io.stateshift.checkpoint.StateSize})
   * @param stateFiles files of the state as listed
   * @param readsRocksDb the state is in RocksDB (else the HDFS-backed store)
   * @param writesRocksDb the new state is written for RocksDB
   * @param storage where the checkpoint is: local disk, HDFS or an object store
   * @param replayBytes bytes of RocksDB changelog files the read side replays (the versions after
   *     each partition's newest snapshot, {@link io.stateshift.checkpoint.StateSize#replayBytes})
   */
  public record Job(
      int fromPartitions,
      int toPartitions,
      int storesPerPartition,
      long stateBytes,
      long stateFiles,
      boolean readsRocksDb,
      boolean writesRocksDb,
      Storage storage,
      long replayBytes) {

    public long oldStores() {
      return (long) fromPartitions * storesPerPartition;
    }

    public long newStores() {
      return (long) toPartitions * storesPerPartition;
    }

    public long filesWritten() {
      return newStores() * (writesRocksDb ? ROCKSDB_FILES_PER_NEW_STORE : HDFS_FILES_PER_NEW_STORE);
    }

    public boolean objectStore() {
      return storage == Storage.OBJECT_STORE;
    }
  }

  private static CostModel standard;

  /** The model of the coefficients shipped in {@link #RESOURCE}. */
  public static synchronized CostModel standard() {
    if (standard == null) {
      try (InputStream in = CostModel.class.getResourceAsStream(RESOURCE)) {
        if (in == null) {
          throw new IllegalStateException("no " + RESOURCE + " on the class path");
        }
        Properties p = new Properties();
        p.load(in);
        standard = of(p);
      } catch (IOException e) {
        throw new UncheckedIOException(e);
      }
    }
    return standard;
  }

  /** The model of a coefficients file's properties. */
  public static CostModel of(Properties p) {
    Map<Term, Double> coefficients = new LinkedHashMap<>();
    for (Term t : Term.values()) {
      coefficients.put(t, Double.parseDouble(p.getProperty("seconds." + t.key, "0")));
    }
    Map<String, Double> requests = new LinkedHashMap<>();
    for (String provider : List.of("rocksdb", "hdfs")) {
      requests.put(provider, Double.parseDouble(p.getProperty("requestsPerFile." + provider, "0")));
    }
    return new CostModel(coefficients, requests, p.getProperty("fittedOn", "(not fitted)"));
  }

  /**
   * How much of each term a job has, already divided by the slots it runs on: the model's seconds
   * are these times the coefficients. The fitter fits on these.
   */
  public Map<Term, Double> quantities(Job job, int taskSlots) {
    double readSlots = Math.max(1, Math.min(taskSlots, job.fromPartitions()));
    double writeSlots = Math.max(1, Math.min(taskSlots, job.toPartitions()));
    double requests =
        job.objectStore()
            ? job.stateFiles() * requestsPerFile.get(job.readsRocksDb() ? "rocksdb" : "hdfs")
            : 0;
    Map<Term, Double> q = new LinkedHashMap<>();
    q.put(Term.FIXED, 1.0);
    q.put(Term.OLD_STORES, job.oldStores() / readSlots);
    q.put(Term.NEW_STORES, job.newStores() / writeSlots);
    q.put(Term.FILES, job.stateFiles() / readSlots + job.filesWritten() / writeSlots);
    q.put(Term.BYTES, job.stateBytes() / readSlots + job.stateBytes() / writeSlots);
    q.put(Term.REQUESTS, requests);
    q.put(Term.REPLAY_BYTES, job.replayBytes() / readSlots);
    q.put(
        Term.HDFS_FILES,
        job.storage() == Storage.HDFS
            ? job.stateFiles() / readSlots + job.filesWritten() / writeSlots
            : 0);
    q.put(Term.COLD_START, 0.0); // the benchmark's runs are warm; estimate() adds it
    return q;
  }

  /** The estimate for a job on {@code slots}, in a JVM that has run a repartition before. */
  public CostEstimate estimate(Job job, TaskSlots slots) {
    return estimate(job, slots, false);
  }

  /**
   * The estimate for a job on {@code slots}; {@code coldJvm}: the first repartition in this JVM,
   * which adds {@link Term#COLD_START} (the benchmark's runs are warm, so its fit leaves it as it
   * stands).
   */
  public CostEstimate estimate(Job job, TaskSlots slots, boolean coldJvm) {
    Map<Term, Double> termSeconds = new LinkedHashMap<>();
    double seconds = 0;
    Map<Term, Double> quantities = quantities(job, slots.count());
    quantities.put(Term.COLD_START, coldJvm ? 1.0 : 0.0);
    for (Map.Entry<Term, Double> q : quantities.entrySet()) {
      double s = q.getValue() * coefficients.get(q.getKey());
      termSeconds.put(q.getKey(), s);
      seconds += s;
    }
    return new CostEstimate(seconds, slots, fittedOn, termSeconds, job);
  }

  /** The seconds for a job on {@code taskSlots}. */
  public double seconds(Job job, int taskSlots) {
    return estimate(job, new TaskSlots(taskSlots, "given")).seconds();
  }
}
