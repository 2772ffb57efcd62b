package io.stateshift.checkpoint;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.stateshift.testing.S3Server;
import java.io.IOException;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.util.Map;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.fs.statistics.IOStatisticsSupport;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * The switch's and the tidying's moves on a real S3 API (s3proxy on loopback): a file moves with
 * one request (S3's copy) and the sources of many moves go in one multi-object delete (one request
 * a file where bulk deletes are off), a move a crash cut short (target copied, source still there)
 * is finished, a target with other bytes is refused with both files kept, and a folder move removes
 * the folder's marker; the same with S3A's rename ({@code stateshift.s3.directMoves=false}). A
 * whole state file is read with one GET that fails when the object is not the one listed.
 */
class S3MovesTest {
  private static S3Server s3;

  @BeforeAll
  static void startS3(@TempDir java.nio.file.Path dir) throws Exception {
    s3 = S3Server.start(dir);
  }

  @AfterAll
  static void stopS3() {
    if (s3 != null) {
      s3.close();
    }
  }

  private static CheckpointFiles files(String name, boolean direct) {
    return files(name, direct, true);
  }

  private static CheckpointFiles files(String name, boolean direct, boolean bulkDeletes) {
    Configuration conf = new Configuration();
    s3.applyTo(conf);
    conf.setBoolean(S3Objects.ENABLED, direct);
    conf.setBoolean("fs.s3a.multiobjectdelete.enable", bulkDeletes);
    // a file system of its own: the cached one would keep the first test's setting
    conf.setBoolean("fs.s3a.impl.disable.cache", true);
    return CheckpointFiles.at(s3.uri(name), conf);
  }

  private static void write(FileSystem fs, Path path, String text) throws IOException {
    try (OutputStream out = fs.create(path, true)) {
      out.write(text.getBytes(StandardCharsets.UTF_8));
    }
  }

  private static long requests(FileSystem fs) {
    Map<String, Long> counters = IOStatisticsSupport.retrieveIOStatistics(fs).counters();
    return counters.getOrDefault("store_io_request", 0L);
  }

  /**
   * Moves through direct requests and through S3A's renames; S3A on the AWS SDK v1 (hadoop-aws
   * before 3.4: Spark 3.5's) has the renames only.
   */
  static java.util.stream.Stream<Boolean> moveModes() {
    return S3Server.directRequests()
        ? java.util.stream.Stream.of(true, false)
        : java.util.stream.Stream.of(false);
  }

  @ParameterizedTest(name = "bulk deletes: {0}")
  @ValueSource(booleans = {true, false})
  @Tag("s3-sdk-v2")
  void filesMoveWithACopyEachAndTheirSourcesGoTogether(boolean bulkDeletes) throws Exception {
    CheckpointFiles files = files("direct-" + bulkDeletes, true, bulkDeletes);
    FileSystem fs = files.fs();
    int count = 3;
    for (int p = 0; p < count; p++) {
      write(fs, files.path("staged/state/0/" + p + "/2.snapshot"), "new state " + p);
    }
    CheckpointFiles.Mover mover = files.mover(files.path("staged"), files.path("state"));
    assertThat(mover.files()).hasSize(count);

    long before = requests(fs);
    for (int p = 0; p < count; p++) {
      mover.move(
          files.path("staged/state/0/" + p + "/2.snapshot"),
          files.path("state/0/" + p + "/2.snapshot"));
    }
    assertThat(requests(fs) - before).as("copies").isEqualTo(count);
    // moved, not yet deleted: in both places, as after a crash before the deletes
    assertThat(fs.exists(files.path("staged/state/0/0/2.snapshot"))).isTrue();
    before = requests(fs);
    mover.deleteMovedSources();

    assertThat(requests(fs) - before).as("deletes").isEqualTo(bulkDeletes ? 1 : count);
    for (int p = 0; p < count; p++) {
      assertThat(files.readText(files.path("state/0/" + p + "/2.snapshot")))
          .isEqualTo("new state " + p);
      assertThat(fs.exists(files.path("staged/state/0/" + p + "/2.snapshot"))).isFalse();
    }
  }

  @Test
  @Tag("s3-sdk-v2")
  void aWholeObjectIsReadWithOneRequestPinnedToItsListedEtag() throws Exception {
    CheckpointFiles files = files("whole", true);
    FileSystem fs = files.fs();
    Path path = files.path("state/0/0/1.delta");
    write(fs, path, "listed bytes");
    String etag = ((org.apache.hadoop.fs.EtagSource) fs.getFileStatus(path)).getEtag();
    S3Objects s3 = S3Objects.forFileSystem(fs);

    long before = requests(fs);
    try (java.io.InputStream in = s3.openWhole(s3.key(path), etag)) {
      assertThat(new String(in.readAllBytes(), StandardCharsets.UTF_8)).isEqualTo("listed bytes");
    }
    assertThat(requests(fs) - before).as("requests").isEqualTo(1);

    write(fs, path, "rewritten after the listing");
    assertThatThrownBy(() -> s3.openWhole(s3.key(path), etag).close())
        .isInstanceOf(IOException.class)
        .hasMessageContaining("changed since it was listed");
    assertThatThrownBy(() -> s3.openWhole(s3.key(files.path("state/0/0/9.delta")), null))
        .isInstanceOf(java.io.FileNotFoundException.class)
        .hasMessageContaining("9.delta");
  }

  @ParameterizedTest(name = "direct moves: {0}")
  @MethodSource("moveModes")
  void aMoveCutShortIsFinishedAndAForeignTargetRefused(boolean direct) throws Exception {
    CheckpointFiles files = files("resume-" + direct, direct);
    FileSystem fs = files.fs();
    // copied before a crash, its source not yet deleted
    write(fs, files.path("staged/a.sst"), "same bytes");
    write(fs, files.path("state/a.sst"), "same bytes");
    // a target that is not this move's
    write(fs, files.path("staged/b.sst"), "ours");
    write(fs, files.path("state/b.sst"), "someone else's");
    CheckpointFiles.Mover mover = files.mover(files.path("staged"), files.path("state"));

    mover.move(files.path("staged/a.sst"), files.path("state/a.sst"));
    assertThatThrownBy(() -> mover.move(files.path("staged/b.sst"), files.path("state/b.sst")))
        .isInstanceOf(IOException.class)
        .hasMessageContaining("Refusing to overwrite");
    mover.deleteMovedSources();

    assertThat(fs.exists(files.path("staged/a.sst"))).isFalse();
    assertThat(files.readText(files.path("state/a.sst"))).isEqualTo("same bytes");
    assertThat(files.readText(files.path("staged/b.sst"))).isEqualTo("ours");
    assertThat(files.readText(files.path("state/b.sst"))).isEqualTo("someone else's");
  }

  @ParameterizedTest(name = "direct moves: {0}")
  @MethodSource("moveModes")
  void aFolderMovesWholeAndLeavesNoMarker(boolean direct) throws Exception {
    CheckpointFiles files = files("folder-" + direct, direct);
    FileSystem fs = files.fs();
    fs.mkdirs(files.path("state/0/5")); // Spark's provider makes its folder: a marker on S3
    write(fs, files.path("state/0/5/3.delta"), "delta");
    write(fs, files.path("state/0/5/SSTs/1-x.sst"), "sst");
    Path retired = files.path("_stateshift/retired/state/0");
    write(fs, new Path(retired, "5/3.delta"), "delta"); // copied by a run killed before its delete
    CheckpointFiles.Mover mover = files.mover(files.path("state/0"), retired);

    assertThat(mover.moveTree(files.path("state/0/5"), new Path(retired, "5"))).isTrue();
    assertThat(mover.moveTree(files.path("state/0/6"), new Path(retired, "6"))).isFalse();
    mover.deleteMovedSources();

    assertThat(fs.exists(files.path("state/0/5"))).isFalse();
    assertThat(files.readText(new Path(retired, "5/3.delta"))).isEqualTo("delta");
    assertThat(files.readText(new Path(retired, "5/SSTs/1-x.sst"))).isEqualTo("sst");
  }

  // left out where S3A has no conditional PUT (hadoop-aws before 3.4.2): a new file is renamed
  // into place there
  @Test
  @Tag("s3-conditional-put")
  void smallFilesAreWrittenInPlaceWithOneRequestAndANewOneNeverReplaced() throws Exception {
    CheckpointFiles files = files("in-place", true);
    FileSystem fs = files.fs();
    Path commit = files.path("commits/3");

    long before = requests(fs);
    files.writeNew(commit, "v1\n{}");
    assertThat(requests(fs) - before).as("a new file: one conditional PUT").isEqualTo(1);
    before = requests(fs);
    files.replace(files.path("_stateshift/journal"), "{\"phase\":\"SWITCHING\"}");
    assertThat(requests(fs) - before).as("a replaced file: one PUT").isEqualTo(1);

    // written again after a crash: the same text is the same write; other text is refused
    files.writeNew(commit, "v1\n{}");
    assertThatThrownBy(() -> files.writeNew(commit, "v1\n{\"other\":1}"))
        .hasMessageContaining("refusing to overwrite existing file");
    assertThat(files.readText(commit)).isEqualTo("v1\n{}");
    files.replace(files.path("_stateshift/journal"), "{\"phase\":\"FINALIZING\"}");
    assertThat(files.readText(files.path("_stateshift/journal")))
        .isEqualTo("{\"phase\":\"FINALIZING\"}");
    assertThat(files.list(files.path("commits"))).hasSize(1); // no temporary file left
  }
}
