package io.stateshift.checkpoint;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.io.FileNotFoundException;
import java.io.IOException;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FileContext;
import org.apache.hadoop.fs.FileStatus;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.LocalFileSystem;
import org.apache.hadoop.fs.Options;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.fs.permission.FsPermission;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The fork-free local file system against Hadoop's own (the oracle): the same files, folders,
 * permissions, checksum files and renames, through both Hadoop APIs.
 */
class ForklessLocalFileSystemTest {
  @TempDir java.nio.file.Path tmp;

  @Test
  void isGivenOnlyToACopyOfTheConfiguration() {
    Configuration conf = new Configuration();
    Configuration ours = ForklessLocalFileSystem.applyTo(conf);

    assertThat(ours).isNotSameAs(conf);
    assertThat(ours.get("fs.file.impl")).isEqualTo(ForklessLocalFileSystem.class.getName());
    assertThat(ours.get("fs.AbstractFileSystem.file.impl"))
        .isEqualTo(ForklessLocalFileSystem.Fs.class.getName());
    assertThat(conf.get("fs.file.impl")).isNull();
  }

  @Test
  void keepsALocalFileSystemTheUserChose() {
    Configuration conf = new Configuration();
    conf.set("fs.file.impl", "com.example.TheirLocalFileSystem");

    assertThat(ForklessLocalFileSystem.applyTo(conf)).isSameAs(conf);
  }

  @Test
  void writesWhatHadoopsLocalFileSystemWrites() throws IOException {
    Configuration ours = ForklessLocalFileSystem.applyTo(new Configuration());
    FileSystem forkless = FileSystem.get(tmp.toUri(), ours);
    FileSystem hadoops = FileSystem.getLocal(new Configuration());
    assertThat(forkless).isInstanceOf(ForklessLocalFileSystem.class);
    assertThat(hadoops.getClass()).isEqualTo(LocalFileSystem.class);

    for (FileSystem fs : new FileSystem[] {forkless, hadoops}) {
      Path dir = new Path(tmp.toUri().toString(), fs == forkless ? "forkless" : "hadoop");
      assertThat(fs.mkdirs(new Path(dir, "a/b"), FsPermission.getDirDefault())).isTrue();
      try (OutputStream out = fs.create(new Path(dir, "a/b/file"), false)) {
        out.write("state".getBytes(StandardCharsets.UTF_8));
      }
      fs.setPermission(new Path(dir, "a/b/file"), new FsPermission((short) 0640));
      fs.setPermission(new Path(dir, "a"), new FsPermission((short) 0700));
    }
    for (String relative : new String[] {"a", "a/b", "a/b/file", "a/b/.file.crc"}) {
      FileStatus mine = forkless.getFileStatus(new Path(tmp.toString(), "forkless/" + relative));
      FileStatus theirs = hadoops.getFileStatus(new Path(tmp.toString(), "hadoop/" + relative));
      assertThat(mine.getPermission()).as(relative).isEqualTo(theirs.getPermission());
      assertThat(mine.isDirectory()).as(relative).isEqualTo(theirs.isDirectory());
      assertThat(mine.getLen()).as(relative).isEqualTo(theirs.getLen());
    }
    assertThat(Files.readString(tmp.resolve("forkless/a/b/file"))).isEqualTo("state");
    assertThatThrownBy(
            () ->
                forkless.setPermission(
                    new Path(tmp.toString(), "missing"), FsPermission.getFileDefault()))
        .isInstanceOf(FileNotFoundException.class);
  }

  @Test
  void renamesThroughFileContextAsHadoopDoes() throws IOException {
    Configuration ours = ForklessLocalFileSystem.applyTo(new Configuration());
    FileContext fc = FileContext.getFileContext(tmp.toUri(), ours);
    Path from = new Path(tmp.toString(), "from");
    Path to = new Path(tmp.toString(), "dir/to");
    fc.mkdir(to.getParent(), FsPermission.getDirDefault(), true);
    Files.writeString(tmp.resolve("from"), "new");
    Files.writeString(tmp.resolve("dir/to"), "old");

    fc.rename(from, to, Options.Rename.OVERWRITE);

    assertThat(Files.readString(tmp.resolve("dir/to"))).isEqualTo("new");
    assertThat(tmp.resolve("from")).doesNotExist();
    assertThat(fc.getFileLinkStatus(to).isSymlink()).isFalse();
  }

  @Test
  void readsSymbolicLinksAsHadoopDoes() throws IOException {
    Files.writeString(tmp.resolve("target"), "x");
    Files.createSymbolicLink(tmp.resolve("link"), tmp.resolve("target"));
    Path link = new Path(tmp.resolve("link").toString());
    FileSystem forkless =
        FileSystem.get(tmp.toUri(), ForklessLocalFileSystem.applyTo(new Configuration()));
    FileSystem hadoops = FileSystem.getLocal(new Configuration()).getRawFileSystem();

    FileStatus mine =
        ((ForklessLocalFileSystem) forkless).getRawFileSystem().getFileLinkStatus(link);
    FileStatus theirs = hadoops.getFileLinkStatus(link);

    assertThat(mine.isSymlink()).isEqualTo(theirs.isSymlink()).isTrue();
    assertThat(mine.getSymlink()).isEqualTo(theirs.getSymlink());
  }
}
