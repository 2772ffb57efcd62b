package io.stateshift.spark.state;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.File;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import org.apache.spark.sql.execution.streaming.state.RocksDBCheckpointMetadata;
import org.apache.spark.sql.execution.streaming.state.RocksDBCheckpointMetadata$;
import org.apache.spark.sql.execution.streaming.state.RocksDBImmutableFile;
import org.apache.spark.sql.execution.streaming.state.RocksDBLogFile;
import org.apache.spark.sql.execution.streaming.state.RocksDBSstFile;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The metadata reader gives what Spark's own reader gives for every file Spark writes (read with
 * Jackson), and leaves any other text to Spark's reader.
 */
class RocksDbMetadataFileTest {
  @TempDir Path dir;

  @Test
  void readsSparksFilesAsSparkDoes() throws Exception {
    RocksDBCheckpointMetadata withLogs =
        RocksDBCheckpointMetadata$.MODULE$.apply(
            ScalaBridge.seq(
                List.<RocksDBImmutableFile>of(
                    new RocksDBSstFile("000008.sst", "000008-6f1c.sst", 1234L),
                    new RocksDBSstFile("000011.sst", "000011-77aa.sst", 98765432109L),
                    new RocksDBLogFile("000012.log", "000012-90b1.log", 17L))),
            150_000L);
    RocksDBCheckpointMetadata sstsOnly =
        RocksDBCheckpointMetadata$.MODULE$.apply(
            ScalaBridge.seq(
                List.<RocksDBImmutableFile>of(
                    new RocksDBSstFile("000008.sst", "000008-6f1c.sst", 1234L))),
            42L);
    RocksDBCheckpointMetadata empty =
        RocksDBCheckpointMetadata$.MODULE$.apply(
            ScalaBridge.seq(List.<RocksDBImmutableFile>of()), 0L);
    for (RocksDBCheckpointMetadata written : List.of(withLogs, sstsOnly, empty)) {
      assertReadAsWritten(written);
    }
  }

  @Test
  void readsColumnFamiliesAsSparkDoes() throws Exception {
    scala.collection.Map<String, Object> mapping =
        ScalaBridge.immutableMap(Map.<String, Object>of("default", (short) 0, "cf", (short) 1));
    scala.collection.Map<String, Object> types =
        ScalaBridge.immutableMap(Map.<String, Object>of("default", false, "cf", true));
    RocksDBCheckpointMetadata written =
        RocksDBCheckpointMetadata$.MODULE$.apply(
            ScalaBridge.seq(
                List.<RocksDBImmutableFile>of(
                    new RocksDBSstFile("000008.sst", "000008-6f1c.sst", 1234L))),
            7L,
            7L,
            mapping,
            types,
            (short) 1);
    // as stateshift's own commits write it, like Spark's: empty mapping, highest id 0
    RocksDBCheckpointMetadata none =
        RocksDBCheckpointMetadata$.MODULE$.apply(
            ScalaBridge.seq(List.<RocksDBImmutableFile>of()),
            3L,
            0L,
            scala.Option.apply(ScalaBridge.<String, Object>emptyMap()),
            scala.Option.apply(ScalaBridge.<String, Object>emptyMap()),
            scala.Option.apply((Object) (short) 0));
    for (RocksDBCheckpointMetadata metadata : List.of(written, none)) {
      assertReadAsWritten(metadata);
    }
  }

  @Test
  void leavesAnyOtherTextToSparksReader() {
    List<String> others =
        List.of(
            "v2\n{\"sstFiles\":[],\"numKeys\":0}", // another version line
            "v1\n{\"sstFiles\":[", // cut short
            // a mapping without its highest id, which Spark's reader refuses
            "v1\n{\"sstFiles\":[],\"numKeys\":0,\"numInternalKeys\":0,"
                + "\"columnFamilyMapping\":{\"default\":0}}",
            "v1\n{\"sstFiles\":[],\"numKeys\":\"3\"}", // a count as text
            "v1\n{\"numKeys\":0,\"numInternalKeys\":0}", // no SST files
            // an SST file without its name in the checkpoint
            "v1\n{\"sstFiles\":[{\"localFileName\":\"1.sst\",\"sizeBytes\":1}],"
                + "\"numKeys\":0,\"numInternalKeys\":0}",
            // a field of a later Spark
            "v1\n{\"sstFiles\":[],\"numKeys\":0,\"numInternalKeys\":0,\"later\":1}");
    for (String text : others) {
      assertThat(RocksDbMetadataFile.plain(text)).as(text).isNull();
    }
  }

  /** Written by Spark's writer, read back here as written and as Spark's reader reads it. */
  private void assertReadAsWritten(RocksDBCheckpointMetadata written) throws Exception {
    File file = write(written);
    assertThat(RocksDbMetadataFile.plain(Files.readString(file.toPath()))).isEqualTo(written);
    assertThat(RocksDbMetadataFile.read(file))
        .isEqualTo(written)
        .isEqualTo(RocksDBCheckpointMetadata$.MODULE$.readFromFile(file));
  }

  private File write(RocksDBCheckpointMetadata metadata) throws Exception {
    File file = Files.createTempFile(dir, "metadata", "").toFile();
    metadata.writeToFile(file);
    return file;
  }
}
