package io.stateshift.spark.state;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.File;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A killed run's folders (its exchanges', its session's Spark folders) are removed by the next run
 * on the machine; a live run's, and a folder whose owner nothing names, are left alone.
 */
class LocalRunFoldersTest {
  @TempDir Path localDir;

  @Test
  void aNewExchangeRemovesOnlyTheFoldersOfDeadOwners() throws Exception {
    Process exited = new ProcessBuilder("true").start();
    String deadOwner = LocalRunFolders.owner(exited.toHandle());
    assertThat(exited.waitFor()).isZero();
    Path killed = folder("killed", deadOwner);
    // the pid of this JVM, started at another time: a later process that reuses a dead one's pid
    Path reusedPid = folder("reused", ProcessHandle.current().pid() + " 1");
    Path live = folder("live", LocalRunFolders.owner(ProcessHandle.current()));
    Path unowned = localDir.resolve(LocalRunFolders.PREFIX + "unowned");
    Files.createDirectories(unowned.resolve("nested"));
    Path unrelated = Files.createDirectories(localDir.resolve("spark-1234"));
    // a killed command's session folders: Spark's own, which the command claimed
    Path killedSpark = owned(localDir.resolve("spark-killed"), deadOwner);
    Path killedShuffle = owned(localDir.resolve("blockmgr-killed"), deadOwner);

    File created = LocalRunFolders.create(localDir.toFile());

    assertThat(killed).doesNotExist();
    assertThat(reusedPid).doesNotExist();
    assertThat(live).isDirectory();
    assertThat(unowned.resolve("nested")).isDirectory();
    assertThat(unrelated).isDirectory();
    assertThat(killedSpark).doesNotExist();
    assertThat(killedShuffle).doesNotExist();
    assertThat(created).isDirectory();
    assertThat(created.getName()).startsWith(LocalRunFolders.PREFIX);
    assertThat(
            LocalRunFolders.alive(
                Files.readString(created.toPath().resolve(LocalRunFolders.OWNER_FILE))))
        .isTrue();
    assertThat(LocalRunFolders.removeOrphans(localDir.toFile())).isZero();
  }

  private Path folder(String name, String owner) throws Exception {
    return owned(localDir.resolve(LocalRunFolders.PREFIX + name), owner);
  }

  private static Path owned(Path folder, String owner) throws Exception {
    Files.createDirectories(folder.resolve("partition-0"));
    Files.write(folder.resolve("partition-0").resolve("from-0.runs"), new byte[1024]);
    Files.writeString(folder.resolve(LocalRunFolders.OWNER_FILE), owner);
    return folder;
  }
}
