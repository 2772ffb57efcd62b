package io.stateshift.protocol;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.ObjectMapper;
import io.stateshift.checkpoint.CheckpointFiles;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.Random;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.hdfs.MiniDFSCluster;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The checkpoint lock on a real HDFS (a MiniDFSCluster in this JVM), where the NameNode's
 * create-if-absent decides: of two takers paused at random between their steps, exactly one wins,
 * 20 times, with no lock before and with a dead holder's lock to take over; and a lock left by a
 * process of this host that is gone is taken over at once.
 */
class HdfsLockTest {
  private static MiniDFSCluster cluster;

  @BeforeAll
  static void startHdfs(@TempDir Path base) throws Exception {
    Configuration conf = new Configuration();
    conf.set(MiniDFSCluster.HDFS_MINIDFS_BASEDIR, base.resolve("hdfs").toString());
    cluster = new MiniDFSCluster.Builder(conf).numDataNodes(1).build();
    cluster.waitActive();
  }

  @AfterAll
  static void stopHdfs() {
    if (cluster != null) {
      cluster.shutdown();
    }
  }

  @Test
  void exactlyOneOfTwoConcurrentTakersWinsOnHdfs() throws Exception {
    Random random = new Random(21);
    for (int trial = 0; trial < 20; trial++) {
      String checkpoint = cluster.getURI() + "/race-" + trial;
      CheckpointFiles files = CheckpointFiles.at(checkpoint, cluster.getConfiguration(0));
      assertThat(LeaseFiles.modeOf(files)).isEqualTo(LeaseFiles.Mode.ATOMIC_CREATE);
      files.mkdirs(files.root());
      if (trial % 2 == 1) {
        writeDeadLock(files);
      }
      assertThat(CheckpointLockTest.race(files, random.nextLong()))
          .as("winners of trial %d", trial)
          .isEqualTo(1);
      assertThat(files.exists(files.path(CheckpointLock.FILE))).isFalse();
    }
  }

  /** A lock of a process of this host that has exited. */
  static void writeDeadLock(CheckpointFiles files) throws Exception {
    Process gone = new ProcessBuilder("true").start();
    gone.waitFor();
    FileSystem fs = files.fs();
    try (OutputStream out = fs.create(files.path(CheckpointLock.FILE), false)) {
      out.write(
          new ObjectMapper()
              .writeValueAsString(
                  new CheckpointLock.Lease(
                      "x-3",
                      gone.pid() + "@here",
                      "repartition to 8",
                      600_000,
                      gone.pid(),
                      ProcessIdentity.current().hostKey(),
                      1L,
                      1L))
              .getBytes(StandardCharsets.UTF_8));
    }
  }
}
