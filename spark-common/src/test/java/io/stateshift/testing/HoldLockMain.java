package io.stateshift.testing;

import io.stateshift.checkpoint.CheckpointFiles;
import io.stateshift.protocol.CheckpointLock;
import java.nio.file.Files;
import java.nio.file.Path;
import org.apache.hadoop.conf.Configuration;

/**
 * Takes the checkpoint lock (lease of 10 minutes), writes a marker file and holds the lock until it
 * is killed. Args: checkpoint, marker file.
 */
public final class HoldLockMain {
  private HoldLockMain() {}

  public static void main(String[] args) throws Exception {
    CheckpointFiles files = CheckpointFiles.at(args[0], new Configuration());
    CheckpointLock lock = CheckpointLock.acquire(files, "held by a child JVM", 600_000);
    Files.writeString(Path.of(args[1]), "locked");
    Thread.sleep(Long.MAX_VALUE);
    lock.close();
  }
}
