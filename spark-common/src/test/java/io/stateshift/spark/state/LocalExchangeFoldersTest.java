package io.stateshift.spark.state;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.File;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A killed run's exchange folder is removed by the next exchange on the machine; a live run's, and
 * a folder whose owner nothing names, are left alone.
 */
class LocalExchangeFoldersTest {
  @TempDir Path localDir;

  @Test
  void aNewExchangeRemovesOnlyTheFoldersOfDeadOwners() throws Exception {
    Process exited = new ProcessBuilder("true").start();
    String deadOwner = LocalExchangeFolders.owner(exited.toHandle());
    assertThat(exited.waitFor()).isZero();
    Path killed = folder("killed", deadOwner);
    // the pid of this JVM, started at another time: a later process that reuses a dead one's pid
    Path reusedPid = folder("reused", ProcessHandle.current().pid() + " 1");
    Path live = folder("live", LocalExchangeFolders.owner(ProcessHandle.current()));
    Path unowned = localDir.resolve(LocalExchangeFolders.PREFIX + "unowned");
    Files.createDirectories(unowned.resolve("nested"));
    Path unrelated = Files.createDirectories(localDir.resolve("spark-1234"));

    File created = LocalExchangeFolders.create(localDir.toFile());

    assertThat(killed).doesNotExist();
    assertThat(reusedPid).doesNotExist();
    assertThat(live).isDirectory();
    assertThat(unowned.resolve("nested")).isDirectory();
    assertThat(unrelated).isDirectory();
    assertThat(created).isDirectory();
    assertThat(created.getName()).startsWith(LocalExchangeFolders.PREFIX);
    assertThat(
            LocalExchangeFolders.alive(
                Files.readString(created.toPath().resolve(LocalExchangeFolders.OWNER_FILE))))
        .isTrue();
    assertThat(LocalExchangeFolders.removeOrphans(localDir.toFile())).isZero();
  }

  private Path folder(String name, String owner) throws Exception {
    Path folder = localDir.resolve(LocalExchangeFolders.PREFIX + name);
    Files.createDirectories(folder.resolve("partition-0"));
    Files.write(folder.resolve("partition-0").resolve("from-0.runs"), new byte[1024]);
    Files.writeString(folder.resolve(LocalExchangeFolders.OWNER_FILE), owner);
    return folder;
  }
}
