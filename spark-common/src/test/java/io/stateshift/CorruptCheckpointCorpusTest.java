package io.stateshift;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.stateshift.StateShiftException.Reason;
import io.stateshift.testing.CheckpointDigest;
import io.stateshift.testing.CheckpointTrees;
import io.stateshift.testing.SparkFeatures;
import io.stateshift.testing.SparkTestSession;
import io.stateshift.testing.StateStores;
import io.stateshift.testing.StatefulQueries;
import io.stateshift.testing.StreamRun;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import java.util.zip.ZipEntry;
import java.util.zip.ZipInputStream;
import org.apache.spark.api.java.function.VoidFunction2;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.streaming.StreamingQuery;
import org.apache.spark.sql.streaming.Trigger;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * A corpus of damaged and foreign checkpoints. Each is made from a real checkpoint (a grouped count
 * on the HDFS-backed store and one on RocksDB, 4 state partitions, batches 0 and 1 committed, so
 * the state of the last batch is version 2), copied and then damaged in one way. Every one must be
 * refused by the command line with exit code 2 and an error naming the problem, by the library with
 * the matching bad-input reason, and the damaged checkpoint must be left byte-for-byte as it was (a
 * digest of every file and folder before and after).
 */
class CorruptCheckpointCorpusTest {
  /** The last committed batch of every source checkpoint; its state is version LAST + 1. */
  private static final int LAST = 1;

  private static final int STATE_VERSION = LAST + 1;

  @TempDir static Path shared;

  private static Path hdfsCheckpoint;
  private static Path rocksDbCheckpoint;
  private static Path statelessCheckpoint;
  private static Path hdfsSink;

  @BeforeAll
  static void makeSourceCheckpoints() throws Exception {
    SparkSession spark = SparkTestSession.get();
    Path input = shared.resolve("input");
    StreamRun run = new StreamRun(spark, input);
    run.writeEvents(0, 200, 12);
    run.writeEvents(1, 200, 12);
    hdfsCheckpoint = shared.resolve("hdfs-checkpoint");
    hdfsSink = shared.resolve("hdfs-sink");
    run.runAvailable(
        StatefulQueries.GROUPED_COUNT,
        hdfsCheckpoint,
        hdfsSink,
        StateStores.HDFS.withPartitions(4));
    rocksDbCheckpoint = shared.resolve("rocksdb-checkpoint");
    run.runAvailable(
        StatefulQueries.GROUPED_COUNT,
        rocksDbCheckpoint,
        shared.resolve("rocksdb-sink"),
        StateStores.ROCKSDB.withPartitions(4));
    statelessCheckpoint = shared.resolve("stateless-checkpoint");
    StreamingQuery stateless =
        spark
            .readStream()
            .schema(StreamRun.EVENT_SCHEMA)
            .option("maxFilesPerTrigger", 1)
            .json(input.toString())
            .select("device")
            .writeStream()
            .outputMode("append")
            .option("checkpointLocation", statelessCheckpoint.toString())
            .trigger(Trigger.AvailableNow())
            .foreachBatch((VoidFunction2<Dataset<Row>, Long>) (batch, id) -> batch.count())
            .start();
    stateless.awaitTermination();
    StreamRun.awaitQueryEvents(spark); // the query's lease file is gone before copies are made

    for (Path checkpoint : List.of(hdfsCheckpoint, rocksDbCheckpoint, statelessCheckpoint)) {
      assertThat(checkpoint.resolve("offsets/" + LAST)).isRegularFile();
      assertThat(checkpoint.resolve("commits/" + LAST)).isRegularFile();
      assertThat(checkpoint.resolve("offsets/" + (LAST + 1))).doesNotExist();
    }
    for (int p = 0; p < 4; p++) {
      assertThat(hdfsCheckpoint.resolve("state/0/" + p + "/" + STATE_VERSION + ".delta"))
          .isRegularFile();
      assertThat(rocksDbCheckpoint.resolve("state/0/" + p + "/" + STATE_VERSION + ".zip"))
          .isRegularFile();
    }
    assertThat(statelessCheckpoint.resolve("state")).doesNotExist();
  }

  /** Where a damaged case starts from. */
  enum Source {
    HDFS,
    ROCKSDB,
    STATELESS
  }

  /** One way a checkpoint can be damaged or foreign, and the refusal it must get. */
  enum Damage {
    // ---- the offset log ----
    OFFSETS_EMPTY(
        Source.HDFS,
        Reason.CORRUPT_CHECKPOINT,
        c -> c.write("offsets/" + LAST, ""),
        "offsets/" + LAST,
        "the file is empty"),
    OFFSETS_TRUNCATED_IN_SOURCE_OFFSETS(
        Source.HDFS,
        Reason.CORRUPT_CHECKPOINT,
        c -> c.truncateBy("offsets/" + LAST, 4),
        "offsets/" + LAST,
        "source offset",
        "not valid JSON"),
    OFFSETS_TRUNCATED_AFTER_METADATA(
        Source.HDFS,
        Reason.CORRUPT_CHECKPOINT,
        c -> c.write("offsets/" + LAST, c.lines("offsets/" + LAST, 2)),
        "offsets/" + LAST,
        "no source offsets"),
    OFFSETS_TRUNCATED_IN_METADATA(
        Source.HDFS,
        Reason.CORRUPT_CHECKPOINT,
        c -> c.truncateTo("offsets/" + LAST, c.size("offsets/" + LAST) / 2),
        "offsets/" + LAST,
        "metadata line is not valid JSON"),
    OFFSETS_UNKNOWN_VERSION(
        Source.HDFS,
        Reason.CORRUPT_CHECKPOINT,
        c -> c.replaceFirstLine("offsets/" + LAST, "v99"),
        "offsets/" + LAST,
        "unknown offset log version 'v99'"),
    OFFSETS_GARBAGE_METADATA_JSON(
        Source.HDFS,
        Reason.CORRUPT_CHECKPOINT,
        c -> c.replaceLine("offsets/" + LAST, 1, "{\"batchWatermarkMs\":0,,garbage"),
        "offsets/" + LAST,
        "metadata line is not valid JSON"),
    OFFSETS_CHECKSUM_MISMATCH(
        Source.HDFS,
        Reason.CORRUPT_CHECKPOINT, // valid text, stale .crc
        c -> c.writeKeepingChecksum("offsets/" + LAST, c.read("offsets/" + LAST) + " "),
        "offsets/" + LAST + " cannot be read (Checksum error"),
    OFFSETS_FILE_OF_LAST_COMMIT_MISSING(
        Source.HDFS,
        Reason.CORRUPT_CHECKPOINT,
        c -> c.delete("offsets/" + LAST),
        "offsets/" + LAST + " is missing"),
    OFFSETS_NON_NUMERIC_FILE(
        Source.HDFS,
        Reason.CORRUPT_CHECKPOINT,
        c -> c.write("offsets/notes.txt", "my notes"),
        "offsets log holds a file named 'notes.txt'"),

    // ---- the commit log ----
    COMMIT_EMPTY(
        Source.HDFS,
        Reason.CORRUPT_CHECKPOINT,
        c -> c.write("commits/" + LAST, ""),
        "commits/" + LAST + " is empty or truncated"),
    COMMIT_TRUNCATED(
        Source.HDFS,
        Reason.CORRUPT_CHECKPOINT,
        c -> c.truncateTo("commits/" + LAST, c.size("commits/" + LAST) / 2),
        "commits/" + LAST,
        "not valid JSON"),
    COMMIT_UNKNOWN_VERSION(
        Source.HDFS,
        Reason.CORRUPT_CHECKPOINT,
        c -> c.replaceFirstLine("commits/" + LAST, "v99"),
        "commits/" + LAST + " has an unknown version line 'v99'"),
    COMMIT_VERSION_NEWER_THAN_SPARK(
        Source.HDFS,
        Reason.CORRUPT_CHECKPOINT,
        c -> c.replaceFirstLine("commits/" + LAST, "v4"),
        "commits/" + LAST + " has an unknown version line 'v4'"),
    COMMIT_GARBAGE_JSON(
        Source.HDFS,
        Reason.CORRUPT_CHECKPOINT,
        c -> c.write("commits/" + LAST, "v1\n{\"nextBatchWatermarkMs\":]]]"),
        "commits/" + LAST + " is not valid JSON"),
    UNCOMMITTED_LAST_BATCH(
        Source.HDFS,
        Reason.UNCOMMITTED_BATCH,
        c -> c.delete("commits/" + LAST),
        "last planned batch " + LAST,
        "was not committed"),

    // ---- the query metadata file ----
    METADATA_GARBAGE(
        Source.HDFS,
        Reason.CORRUPT_CHECKPOINT,
        c -> c.write("metadata", "\u0000\u0001 not json at all"),
        "'metadata' file is not the JSON Spark writes"),
    METADATA_MISSING(
        Source.HDFS,
        Reason.CORRUPT_CHECKPOINT,
        c -> c.delete("metadata"),
        "'metadata' file (the query id) is missing"),

    // ---- partition folders and state files ----
    PARTITION_FOLDER_MISSING(
        Source.HDFS,
        Reason.CORRUPT_CHECKPOINT,
        c -> c.deleteTree("state/0/2"),
        "the partition folder state/0/2 is missing"),
    PARTITION_FOLDER_EXTRA(
        Source.HDFS,
        Reason.CORRUPT_CHECKPOINT,
        c -> c.write("state/0/9/" + STATE_VERSION + ".delta", "stray"),
        "state/0/9 is a partition folder beyond the 4 partitions"),
    HDFS_STATE_FILE_OF_LAST_VERSION_MISSING(
        Source.HDFS,
        Reason.CORRUPT_CHECKPOINT,
        c -> c.delete("state/0/1/" + STATE_VERSION + ".delta"),
        "state/0/1 has no state file for version " + STATE_VERSION),
    HDFS_EARLIER_DELTA_MISSING(
        Source.HDFS,
        Reason.CORRUPT_CHECKPOINT,
        c -> c.delete("state/0/3/" + (STATE_VERSION - 1) + ".delta"),
        "state/0/3 has no state file for version " + (STATE_VERSION - 1),
        "is built from"),
    HDFS_STATE_FILE_OF_LAST_VERSION_EMPTY(
        Source.HDFS,
        Reason.CORRUPT_CHECKPOINT,
        c -> c.write("state/0/0/" + STATE_VERSION + ".delta", ""),
        "state/0/0/" + STATE_VERSION + ".delta is empty"),
    ROCKSDB_ZIP_OF_LAST_VERSION_MISSING(
        Source.ROCKSDB,
        Reason.CORRUPT_CHECKPOINT,
        c -> c.delete("state/0/3/" + STATE_VERSION + ".zip"),
        "state/0/3 has no state file for version " + STATE_VERSION),
    ROCKSDB_SST_FILE_MISSING(
        Source.ROCKSDB,
        Reason.CORRUPT_CHECKPOINT,
        c -> c.delete(c.sstReferencedByLastVersion()),
        "/SSTs/",
        "which state/0/",
        "needs, is missing"),
    ROCKSDB_SST_FILE_TRUNCATED(
        Source.ROCKSDB,
        Reason.CORRUPT_CHECKPOINT,
        c -> c.truncateBy(c.sstReferencedByLastVersion(), 100),
        "/SSTs/",
        "truncated or replaced"),
    ROCKSDB_ZIP_OF_LAST_VERSION_EMPTY(
        Source.ROCKSDB,
        Reason.CORRUPT_CHECKPOINT,
        c -> c.write("state/0/1/" + STATE_VERSION + ".zip", ""),
        "state/0/1/" + STATE_VERSION + ".zip is empty"),
    ROCKSDB_ZIP_OF_LAST_VERSION_GARBAGE(
        Source.ROCKSDB,
        Reason.CORRUPT_CHECKPOINT,
        c -> c.write("state/0/2/" + STATE_VERSION + ".zip", "PK this is not a zip file"),
        "state/0/2/" + STATE_VERSION + ".zip is not a RocksDB checkpoint Spark can read"),

    HDFS_DELTA_GARBAGE(
        Source.HDFS,
        Reason.CORRUPT_CHECKPOINT,
        c -> c.overwriteMiddle("state/0/1/" + STATE_VERSION + ".delta", true),
        "state/0/1/" + STATE_VERSION + ".delta",
        "is damaged",
        "Restore the checkpoint from a " + "backup"),
    HDFS_DELTA_GARBAGE_STALE_CHECKSUM(
        Source.HDFS,
        Reason.CORRUPT_CHECKPOINT,
        c -> c.overwriteMiddle("state/0/2/" + STATE_VERSION + ".delta", false),
        "state/0/2/" + STATE_VERSION + ".delta",
        "is damaged",
        "Checksum error"),
    HDFS_DELTA_TRUNCATED(
        Source.HDFS,
        Reason.CORRUPT_CHECKPOINT,
        c ->
            c.truncateTo(
                "state/0/3/" + STATE_VERSION + ".delta",
                c.size("state/0/3/" + STATE_VERSION + ".delta") / 2),
        "state/0/3/" + STATE_VERSION + ".delta",
        "is damaged",
        "Restore the checkpoint from a " + "backup"),
    HDFS_DELTA_WRONG_CODEC(
        Source.HDFS,
        Reason.CORRUPT_CHECKPOINT,
        c -> c.recompress("state/0/0/" + STATE_VERSION + ".delta", "zstd"),
        "state/0/0/" + STATE_VERSION + ".delta",
        "is damaged",
        "Restore the checkpoint from a " + "backup"),
    ROCKSDB_SST_FILE_GARBAGE(
        Source.ROCKSDB,
        Reason.CORRUPT_CHECKPOINT,
        c -> c.overwriteMiddle(c.sstReferencedByLastVersion(), true),
        "/SSTs/",
        "is damaged",
        "Restore the checkpoint from a backup"),

    // ---- state schema and operator metadata ----
    // The schema file claims another type for the key column than the rows hold: every key is
    // then placed by the hash of the wrong type (caught while the keys are read).
    SCHEMA_KEY_TYPE_CHANGED_HDFS(
        Source.HDFS,
        Reason.CORRUPT_CHECKPOINT,
        c -> c.retypeKeyColumn("device", "string", "long"),
        "Operator 0 store default",
        "partition",
        "does not match the stored keys",
        "state/0/0/_metadata/schema",
        "Restore"),
    SCHEMA_KEY_TYPE_CHANGED_ROCKSDB(
        Source.ROCKSDB,
        Reason.CORRUPT_CHECKPOINT,
        c -> c.retypeKeyColumn("device", "string", "long"),
        "Operator 0 store default",
        "partition",
        "does not match the stored keys",
        "state/0/0/_metadata/schema",
        "Restore"),
    // Written with useStrictDistribution=false Spark may place keys by part of the key, but a
    // one-column key has no smaller part: still checked, still refused.
    SCHEMA_KEY_TYPE_CHANGED_NOT_STRICT(
        Source.HDFS,
        Reason.CORRUPT_CHECKPOINT,
        c -> {
          c.replaceText(
              "offsets/" + LAST,
              "\"spark.sql.streaming.statefulOperator.useStrictDistribution\":\"true\"",
              "\"spark.sql.streaming.statefulOperator.useStrictDistribution\":\"false\"");
          c.retypeKeyColumn("device", "string", "long");
        },
        "Operator 0 store default",
        "does not match the stored keys"),
    // ---- state schema and operator metadata ----
    SCHEMA_GARBAGE(
        Source.HDFS,
        Reason.CORRUPT_CHECKPOINT,
        c -> c.write("state/0/0/_metadata/schema", "junk, not a state schema"),
        "state schema of operator 0 store default",
        "cannot be read"),
    SCHEMA_MISSING(
        Source.HDFS,
        Reason.CORRUPT_CHECKPOINT,
        c -> c.delete("state/0/0/_metadata/schema"),
        "state schema of operator 0 store default (state/0/0/_metadata/schema) is missing"),
    OPERATOR_METADATA_GARBAGE(
        Source.HDFS,
        Reason.CORRUPT_CHECKPOINT,
        c -> c.write("state/0/_metadata/metadata", "v1\n{this is not json"),
        "state/0/_metadata/metadata is not operator metadata Spark can read"),
    OPERATOR_METADATA_WITHOUT_STORES(
        Source.HDFS,
        Reason.CORRUPT_CHECKPOINT,
        c -> c.write("state/0/_metadata/metadata", "v1\n{\"operatorInfo\":{}}"),
        "state/0/_metadata/metadata lacks operatorInfo or stateStoreInfo"),

    // ---- locks, permissions, foreign paths ----
    LOCK_HELD_BY_LIVE_LEASE(
        Source.HDFS,
        Reason.CHECKPOINT_IN_USE,
        c ->
            c.write(
                "_stateshift/lock",
                "{\"owner\":\"x\",\"purpose\":\"y\",\"expiresAtMs\":"
                    + (System.currentTimeMillis() + 3_600_000L)
                    + "}"),
        "is locked by x (y)"),
    READ_ONLY_CHECKPOINT(
        Source.HDFS,
        Reason.CHECKPOINT_NOT_WRITABLE,
        Corpus::makeReadOnly,
        "Cannot write to checkpoint",
        "needs write access"),
    PATH_IS_A_REGULAR_FILE(
        Source.HDFS,
        Reason.NOT_A_CHECKPOINT,
        c -> c.target(c.regularFile()),
        "is a file, not a checkpoint folder"),
    PATH_BELOW_A_REGULAR_FILE(
        Source.HDFS,
        Reason.CHECKPOINT_NOT_FOUND,
        c -> c.target(c.root().resolve("metadata/checkpoint")),
        "does not exist"),
    STATE_FOLDER_INSTEAD_OF_CHECKPOINT(
        Source.HDFS,
        Reason.NOT_A_CHECKPOINT,
        c -> c.target(c.root().resolve("state")),
        "is not a streaming checkpoint"),
    SINK_FOLDER_INSTEAD_OF_CHECKPOINT(
        Source.HDFS,
        Reason.NOT_A_CHECKPOINT,
        c -> c.target(c.sinkFolder()),
        "is not a streaming checkpoint"),
    CHECKPOINT_OF_A_STATELESS_QUERY(
        Source.STATELESS, Reason.STATELESS_QUERY, c -> {}, "stateless query");

    final Source source;
    final Reason reason;
    final DamageAction action;
    final String[] messages;

    Damage(Source source, Reason reason, DamageAction action, String... messages) {
      this.source = source;
      this.reason = reason;
      this.action = action;
      this.messages = messages;
    }

    /**
     * The reason on a line whose checkpoints have no operator metadata (3.5): a key that its
     * derived placement does not put where it lies cannot be told from a placement Spark chose
     * otherwise, so a schema lie is refused as a checkpoint this cannot repartition.
     */
    Reason reasonOn(SparkSession spark) {
      return schemaLie() && !SparkFeatures.operatorMetadata(spark)
          ? Reason.UNSUPPORTED_CHECKPOINT
          : reason;
    }

    String[] messagesOn(SparkSession spark) {
      return schemaLie() && !SparkFeatures.operatorMetadata(spark)
          ? DERIVED_PLACEMENT_MESSAGES
          : messages;
    }

    private boolean schemaLie() {
      return List.of(messages).contains("does not match the stored keys");
    }
  }

  /** The refusal of a schema lie where the placement is derived from the schema. */
  static final String[] DERIVED_PLACEMENT_MESSAGES = {
    "is not placed by its whole state key", "state/0/0/_metadata/schema", "Restore the checkpoint"
  };

  /** Damages a copy; may point stateshift at another path than the copy's root. */
  @FunctionalInterface
  interface DamageAction {
    void apply(Corpus copy) throws Exception;
  }

  @ParameterizedTest(name = "{0}")
  @EnumSource(Damage.class)
  void refusedWithExitCodeTwoAndLeftUnchanged(Damage damage, @TempDir Path tmp) throws Exception {
    Path original =
        switch (damage.source) {
          case HDFS -> hdfsCheckpoint;
          case ROCKSDB -> rocksDbCheckpoint;
          case STATELESS -> statelessCheckpoint;
        };
    Corpus copy = Corpus.copyOf(original, tmp);
    try {
      damage.action.apply(copy);
      Path target = copy.target();
      boolean outside = !target.startsWith(copy.root()) && Files.exists(target);
      Map<String, String> before = CheckpointDigest.of(copy.root());
      Map<String, String> targetBefore = outside ? CheckpointDigest.of(target) : null;

      ByteArrayOutputStream out = new ByteArrayOutputStream();
      ByteArrayOutputStream err = new ByteArrayOutputStream();
      int code =
          new io.stateshift.cli.StateShiftCli(
                  new PrintStream(out, true), new PrintStream(err, true))
              .run(
                  new String[] {
                    "repartition", "--checkpoint", target.toString(), "--partitions", "6"
                  });
      String stderr = err.toString(StandardCharsets.UTF_8);
      assertThat(code).as("exit code; stderr:%n%s", stderr).isEqualTo(2);
      // damage found while the state is read comes after the job's progress lines
      assertThat(stderr.lines().filter(line -> !line.startsWith("  ")).findFirst().orElse(""))
          .as("the first line that is not progress; stderr:%n%s", stderr)
          .startsWith("error: ");
      SparkSession spark = SparkTestSession.get();
      String[] messages = damage.messagesOn(spark);
      assertThat(stderr.substring(Math.max(0, stderr.indexOf("error: "))))
          .as("a clear message, no stack trace")
          .startsWith("error: ")
          .contains(messages)
          .doesNotContain("\tat ")
          .doesNotContain("failed:");
      assertThat(out.toString(StandardCharsets.UTF_8)).isEmpty();

      assertThatThrownBy(
              () ->
                  StateShift.get(spark)
                      .repartitionState(target.toString())
                      .toPartitions(6)
                      .execute())
          .isInstanceOfSatisfying(
              StateShiftException.class,
              e -> {
                assertThat(e.reason()).isEqualTo(damage.reasonOn(spark));
                assertThat(e.reason().isBadInput()).isTrue();
              })
          .hasMessageContaining(messages[0]);

      assertThat(CheckpointDigest.of(copy.root()))
          .as("the checkpoint is byte-for-byte unchanged")
          .isEqualTo(before);
      if (outside) {
        assertThat(CheckpointDigest.of(target))
            .as("%s is byte-for-byte unchanged", target)
            .isEqualTo(targetBefore);
      }
    } finally {
      copy.close();
    }
  }

  /**
   * The same schema lie on the shuffle path ({@code spark.stateshift.*.exchange=shuffle}, what the
   * job falls back to where an exchange does not apply): refused while the keys are read.
   */
  @ParameterizedTest(name = "{0}")
  @EnumSource(
      value = Source.class,
      names = {"HDFS", "ROCKSDB"})
  void schemaLieRefusedOnTheShufflePath(Source source, @TempDir Path tmp) throws Exception {
    Corpus copy = Corpus.copyOf(source == Source.HDFS ? hdfsCheckpoint : rocksDbCheckpoint, tmp);
    copy.retypeKeyColumn("device", "string", "long");
    Map<String, String> before = CheckpointDigest.of(copy.root());
    SparkSession spark = SparkTestSession.get();
    String conf =
        source == Source.HDFS
            ? "spark.stateshift.hdfs.exchange"
            : "spark.stateshift.rocksdb.exchange";
    spark.conf().set(conf, "shuffle");
    try {
      assertThatThrownBy(
              () ->
                  StateShift.get(spark)
                      .repartitionState(copy.root().toString())
                      .toPartitions(6)
                      .execute())
          .isInstanceOfSatisfying(
              StateShiftException.class,
              e ->
                  assertThat(e.reason())
                      .isEqualTo(
                          SparkFeatures.operatorMetadata(spark)
                              ? Reason.CORRUPT_CHECKPOINT
                              : Reason.UNSUPPORTED_CHECKPOINT))
          .hasMessageContaining(
              SparkFeatures.operatorMetadata(spark)
                  ? "does not match the stored keys"
                  : DERIVED_PLACEMENT_MESSAGES[0])
          .hasMessageContaining("state/0/0/_metadata/schema");
    } finally {
      spark.conf().unset(conf);
    }
    assertThat(CheckpointDigest.of(copy.root()))
        .as("the checkpoint is byte-for-byte unchanged")
        .isEqualTo(before);
  }

  /** A copy of a source checkpoint and the ways to damage it. */
  static final class Corpus implements AutoCloseable {
    private final Path root;
    private final Path scratch;
    private final List<ThrowingRunnable> cleanups = new ArrayList<>();
    private Path target;

    interface ThrowingRunnable {
      void run() throws Exception;
    }

    private Corpus(Path root, Path scratch) {
      this.root = root;
      this.scratch = scratch;
      this.target = root;
    }

    static Corpus copyOf(Path original, Path tmp) throws IOException {
      Path root = tmp.resolve("checkpoint");
      CheckpointTrees.copy(original, root);
      return new Corpus(root, tmp);
    }

    Path root() {
      return root;
    }

    /** The path handed to stateshift: the damaged copy unless a case points elsewhere. */
    Path target() {
      return target;
    }

    void target(Path path) {
      this.target = path;
    }

    Path file(String relative) {
      return root.resolve(relative);
    }

    String read(String relative) throws IOException {
      return Files.readString(file(relative));
    }

    long size(String relative) throws IOException {
      return Files.size(file(relative));
    }

    /** The first {@code count} lines of a file, joined with line breaks, no trailing one. */
    String lines(String relative, int count) throws IOException {
      String[] lines = read(relative).split("\n", -1);
      assertThat(lines.length).isGreaterThan(count);
      return String.join("\n", java.util.Arrays.copyOf(lines, count));
    }

    /**
     * Writes a file and removes its Hadoop checksum side file, as on a file system without side
     * checksums (HDFS, object stores): the damage is in the content, not a checksum mismatch.
     */
    void write(String relative, String text) throws IOException {
      writeKeepingChecksum(relative, text);
      Files.deleteIfExists(checksumOf(relative));
    }

    /** Writes a file but keeps its now stale checksum side file. */
    void writeKeepingChecksum(String relative, String text) throws IOException {
      Files.createDirectories(file(relative).getParent());
      Files.writeString(file(relative), text);
    }

    /** Replaces text in a log file, keeping its modification time (a fresh one looks live). */
    void replaceText(String relative, String from, String to) throws IOException {
      String text = read(relative);
      assertThat(text).contains(from);
      java.nio.file.attribute.FileTime modified = Files.getLastModifiedTime(file(relative));
      write(relative, text.replace(from, to));
      Files.setLastModifiedTime(file(relative), modified);
    }

    void truncateTo(String relative, long bytes) throws IOException {
      byte[] content = Files.readAllBytes(file(relative));
      assertThat(bytes).isBetween(1L, (long) content.length - 1);
      Files.write(file(relative), java.util.Arrays.copyOf(content, (int) bytes));
      Files.deleteIfExists(checksumOf(relative));
    }

    void truncateBy(String relative, int bytes) throws IOException {
      truncateTo(relative, size(relative) - bytes);
    }

    void replaceFirstLine(String relative, String line) throws IOException {
      replaceLine(relative, 0, line);
    }

    void replaceLine(String relative, int index, String line) throws IOException {
      String[] lines = read(relative).split("\n", -1);
      assertThat(lines.length).isGreaterThan(index);
      lines[index] = line;
      write(relative, String.join("\n", lines));
    }

    void delete(String relative) throws IOException {
      assertThat(file(relative)).exists();
      Files.delete(file(relative));
      Files.deleteIfExists(checksumOf(relative));
    }

    void deleteTree(String relative) throws IOException {
      assertThat(file(relative)).isDirectory();
      try (Stream<Path> paths = Files.walk(file(relative))) {
        for (Path p : (Iterable<Path>) paths.sorted(Comparator.reverseOrder())::iterator) {
          Files.delete(p);
        }
      }
    }

    /**
     * Overwrites 32 bytes in the middle of a file with garbage, its length unchanged; with {@code
     * dropChecksum} its checksum side file goes too (the damage is then in the content only, as on
     * HDFS), else the side file stays and no longer matches.
     */
    void overwriteMiddle(String relative, boolean dropChecksum) throws IOException {
      byte[] content = Files.readAllBytes(file(relative));
      assertThat(content.length).isGreaterThan(64);
      java.util.Random random = new java.util.Random(7);
      for (int i = content.length / 2 - 16; i < content.length / 2 + 16; i++) {
        content[i] = (byte) random.nextInt();
      }
      Files.write(file(relative), content);
      if (dropChecksum) {
        Files.deleteIfExists(checksumOf(relative));
      }
    }

    /** Rewrites an HDFS-backed state file compressed with another codec than the checkpoint's. */
    void recompress(String relative, String codecName) throws IOException {
      org.apache.spark.SparkConf conf = SparkTestSession.get().sparkContext().getConf();
      byte[] plain;
      try (java.io.InputStream in =
          org.apache.spark.io.CompressionCodec$.MODULE$
              .createCodec(conf, "lz4")
              .compressedInputStream(Files.newInputStream(file(relative)))) {
        plain = in.readAllBytes();
      }
      ByteArrayOutputStream out = new ByteArrayOutputStream();
      try (java.io.OutputStream zipped =
          org.apache.spark.io.CompressionCodec$.MODULE$
              .createCodec(conf, codecName)
              .compressedOutputStream(out)) {
        zipped.write(plain);
      }
      Files.write(file(relative), out.toByteArray());
      Files.deleteIfExists(checksumOf(relative));
    }

    /**
     * Changes the type of one key column in the state schema file of operator 0 (schema format v2:
     * chunked JSON of the key schema, then of the value schema), leaving the rows as they are.
     */
    void retypeKeyColumn(String column, String from, String to) throws IOException {
      String relative = "state/0/0/_metadata/schema";
      String version;
      String[] schemas = new String[2];
      try (java.io.DataInputStream in =
          new java.io.DataInputStream(Files.newInputStream(file(relative)))) {
        version = in.readUTF();
        assertThat(version).isEqualTo("v2");
        for (int s = 0; s < 2; s++) {
          StringBuilder json = new StringBuilder();
          for (int chunks = in.readInt(); chunks > 0; chunks--) {
            json.append(in.readUTF());
          }
          schemas[s] = json.toString();
        }
      }
      String field = "{\"name\":\"" + column + "\",\"type\":\"";
      assertThat(schemas[0]).contains(field + from + "\"");
      schemas[0] = schemas[0].replace(field + from + "\"", field + to + "\"");
      ByteArrayOutputStream bytes = new ByteArrayOutputStream();
      try (java.io.DataOutputStream out = new java.io.DataOutputStream(bytes)) {
        out.writeUTF(version);
        for (String json : schemas) {
          out.writeInt(1);
          out.writeUTF(json);
        }
      }
      Files.write(file(relative), bytes.toByteArray());
      Files.deleteIfExists(checksumOf(relative));
    }

    private Path checksumOf(String relative) {
      Path f = file(relative);
      return f.resolveSibling("." + f.getFileName() + ".crc");
    }

    /** A regular file where a checkpoint folder is expected. */
    Path regularFile() throws IOException {
      Path f = scratch.resolve("checkpoint.tar");
      Files.writeString(f, read("offsets/" + LAST));
      return f;
    }

    /** A copy of the query's output folder: a path users mix up with the checkpoint. */
    Path sinkFolder() throws IOException {
      Path sink = scratch.resolve("sink");
      CheckpointTrees.copy(hdfsSink, sink);
      return sink;
    }

    /**
     * The SST file (relative path) that the RocksDB zip of the last version of some partition
     * names, so deleting it breaks the state of the last committed batch.
     */
    String sstReferencedByLastVersion() throws IOException {
      Pattern name = Pattern.compile("\"dfsSstFileName\"\\s*:\\s*\"([^\"]+)\"");
      for (int p = 0; p < 4; p++) {
        String dir = "state/0/" + p;
        try (ZipInputStream zip =
            new ZipInputStream(Files.newInputStream(file(dir + "/" + STATE_VERSION + ".zip")))) {
          for (ZipEntry entry; (entry = zip.getNextEntry()) != null; ) {
            if (entry.getName().equals("metadata")) {
              Matcher m = name.matcher(new String(zip.readAllBytes(), StandardCharsets.UTF_8));
              if (m.find() && Files.exists(file(dir + "/SSTs/" + m.group(1)))) {
                return dir + "/SSTs/" + m.group(1);
              }
            }
          }
        }
      }
      throw new AssertionError("no RocksDB zip of version " + STATE_VERSION + " names an SST");
    }

    /**
     * Makes the checkpoint read-only. Permission bits do not stop root (these tests often run as
     * root in containers), so every file and folder is then also marked immutable ({@code chattr -R
     * +i}), which stops root as well; where neither works, the case is skipped with the reason.
     */
    void makeReadOnly() throws Exception {
      setWritable(false);
      cleanups.add(() -> setWritable(true));
      if (canCreateFileIn(root)) {
        cleanups.add(0, () -> run("chattr", "-R", "-i", root.toString()));
        run("chattr", "-R", "+i", root.toString());
      }
      if (canCreateFileIn(root)) {
        assertThat(System.getProperty("user.name"))
            .as("only root writes past a-w")
            .isEqualTo("root");
        Assumptions.abort(
            "running as root without chattr: no way to make "
                + root
                + " read-only for this process, so the read-only refusal cannot be exercised here");
      }
    }

    private void setWritable(boolean writable) throws IOException {
      try (Stream<Path> paths = Files.walk(root)) {
        for (Path p : (Iterable<Path>) paths::iterator) {
          boolean dir = Files.isDirectory(p);
          String perms =
              dir ? (writable ? "rwxr-xr-x" : "r-xr-xr-x") : (writable ? "rw-r--r--" : "r--r--r--");
          Files.setPosixFilePermissions(p, PosixFilePermissions.fromString(perms));
        }
      }
    }

    private static boolean canCreateFileIn(Path dir) {
      Path probe = dir.resolve(".write-probe");
      try {
        Files.writeString(probe, "probe");
        Files.delete(probe);
        return true;
      } catch (IOException e) {
        return false;
      }
    }

    private static int run(String... command) throws Exception {
      try {
        Process process = new ProcessBuilder(command).redirectErrorStream(true).start();
        process.getInputStream().readAllBytes();
        return process.waitFor();
      } catch (IOException e) {
        return -1; // the command is not installed
      }
    }

    @Override
    public void close() throws Exception {
      for (ThrowingRunnable cleanup : cleanups) {
        cleanup.run();
      }
    }
  }
}
