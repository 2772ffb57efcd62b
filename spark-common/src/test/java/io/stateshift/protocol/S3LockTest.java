package io.stateshift.protocol;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.stateshift.StateShiftException;
import io.stateshift.checkpoint.CheckpointFiles;
import io.stateshift.testing.S3Server;
import java.nio.file.Path;
import java.util.Random;
import org.apache.hadoop.conf.Configuration;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The checkpoint lock on a real S3 API (s3proxy on loopback) through S3A, where a PUT with {@code
 * If-None-Match: *} decides: of two takers paused at random between their steps, exactly one wins,
 * 20 times, with no lock before and with a dead holder's lock to take over; with conditional
 * creates turned off the store is refused rather than locked by a check and a write.
 */
class S3LockTest {
  private static S3Server s3;

  @BeforeAll
  static void startS3(@TempDir Path dir) throws Exception {
    s3 = S3Server.start(dir);
  }

  @AfterAll
  static void stopS3() {
    if (s3 != null) {
      s3.close();
    }
  }

  private static Configuration conf() {
    Configuration conf = new Configuration();
    s3.applyTo(conf);
    return conf;
  }

  // left out where S3A has no conditional PUT (hadoop-aws before 3.4.2): the lock is refused there
  @Test
  @Tag("s3-conditional-put")
  void exactlyOneOfTwoConcurrentTakersWinsOnS3() throws Exception {
    Random random = new Random(22);
    for (int trial = 0; trial < 20; trial++) {
      CheckpointFiles files = CheckpointFiles.at(s3.uri("race-" + trial), conf());
      assertThat(LeaseFiles.modeOf(files)).isEqualTo(LeaseFiles.Mode.CONDITIONAL_PUT);
      files.mkdirs(files.root());
      if (trial % 2 == 1) {
        HdfsLockTest.writeDeadLock(files);
      }
      assertThat(CheckpointLockTest.race(files, random.nextLong()))
          .as("winners of trial %d", trial)
          .isEqualTo(1);
      assertThat(files.exists(files.path(CheckpointLock.FILE))).isFalse();
    }
  }

  @Test
  void withoutConditionalCreatesTheLockIsRefused() {
    Configuration conf = conf();
    conf.set("fs.s3a.bucket." + s3.bucket() + ".create.conditional.enabled", "false");
    conf.setBoolean("fs.s3a.impl.disable.cache", true);
    CheckpointFiles files = CheckpointFiles.at(s3.uri("unconditional"), conf);
    assertThat(LeaseFiles.modeOf(files)).isEqualTo(LeaseFiles.Mode.UNSAFE);
    assertThatThrownBy(() -> CheckpointLock.acquire(files, "repartition to 3"))
        .isInstanceOf(StateShiftException.class)
        .hasMessageContaining("fs.s3a.create.conditional.enabled")
        .hasMessageContaining("--assume-stopped");
    assertThat(files.exists(files.path(CheckpointLock.FILE))).isFalse();
  }
}
