package io.stateshift.bench;

import io.stateshift.testing.S3Server;
import java.io.IOException;
import java.io.OutputStream;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.stream.Stream;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.hdfs.MiniDFSCluster;

/**
 * The file system the timed copies of a checkpoint live on with {@code --fs hdfs} or {@code --fs
 * s3}: an HDFS (a MiniDFSCluster, NameNode and DataNode in the benchmark's JVM) or the loopback S3
 * server (s3proxy in its own JVM), started by the benchmark on loopback, as the tests start them.
 * The checkpoint is built on the local disk once and copied there before each timed run.
 */
final class RemoteCheckpoints implements AutoCloseable {
  static final String LOCAL = "local";
  static final String HDFS = "hdfs";
  static final String S3 = "s3";

  static final String CLOSE_RETRY_DELAY =
      "dfs.client.block.write.locateFollowingBlock.initial.delay.ms";

  private final String kind;
  private final MiniDFSCluster hdfs;
  private final S3Server s3;
  private final Configuration conf;

  private RemoteCheckpoints(String kind, MiniDFSCluster hdfs, S3Server s3, Configuration conf) {
    this.kind = kind;
    this.hdfs = hdfs;
    this.s3 = s3;
    this.conf = conf;
  }

  /** {@code --fs}'s values, checked. */
  static String parse(String fs) {
    String kind = fs.toLowerCase(Locale.ROOT);
    if (!kind.equals(LOCAL) && !kind.equals(HDFS) && !kind.equals(S3)) {
      throw new IllegalArgumentException("--fs takes local, hdfs or s3, got '" + fs + "'");
    }
    return kind;
  }

  /**
   * Starts the file system {@code kind} with its files under {@code dir}, and points {@code
   * sessionConf} (the session's Hadoop configuration, which stateshift reads) at it.
   */
  static RemoteCheckpoints start(String kind, Path dir, Configuration sessionConf)
      throws Exception {
    if (kind.equals(HDFS)) {
      Configuration conf = new Configuration();
      conf.set(MiniDFSCluster.HDFS_MINIDFS_BASEDIR, dir.resolve("hdfs").toString());
      MiniDFSCluster cluster = new MiniDFSCluster.Builder(conf).numDataNodes(1).build();
      cluster.waitActive();
      // A file's close waits until the DataNode has reported its block, which it does right
      // after the last packet; the client asks again after 400 ms by default, so on one machine
      // nearly every small file would cost 400 ms. 20 ms keeps the wait for the report only.
      sessionConf.set(CLOSE_RETRY_DELAY, "20");
      return new RemoteCheckpoints(kind, cluster, null, sessionConf);
    }
    S3Server server = S3Server.start(dir.resolve("s3proxy"));
    server.hadoopSettings().forEach(sessionConf::set);
    return new RemoteCheckpoints(kind, null, server, sessionConf);
  }

  String kind() {
    return kind;
  }

  /** Where the timed copy goes: a fresh location on the remote file system. */
  private org.apache.hadoop.fs.Path copyLocation() {
    return new org.apache.hadoop.fs.Path(
        hdfs != null ? hdfs.getURI() + "/bench/copy" : s3.uri("bench/copy"));
  }

  /**
   * Copies the local checkpoint {@code master} to the remote file system, its files (not the {@code
   * .crc} files Hadoop keeps beside them on a local disk) on 16 threads, and returns its location.
   */
  String copy(Path master) {
    org.apache.hadoop.fs.Path to = copyLocation();
    List<Path> files;
    try (Stream<Path> walk = Files.walk(master)) {
      files =
          walk.filter(Files::isRegularFile)
              .filter(f -> !f.getFileName().toString().endsWith(".crc"))
              .toList();
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
    ExecutorService pool = Executors.newFixedThreadPool(16);
    try {
      FileSystem remote = to.getFileSystem(conf);
      remote.delete(to, true);
      List<Future<?>> copies = new ArrayList<>();
      for (Path file : files) {
        org.apache.hadoop.fs.Path target =
            new org.apache.hadoop.fs.Path(to, master.relativize(file).toString());
        copies.add(
            pool.submit(
                () -> {
                  try (OutputStream out = remote.create(target, true)) {
                    Files.copy(file, out);
                  }
                  return null;
                }));
      }
      for (Future<?> copy : copies) {
        copy.get();
      }
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    } catch (InterruptedException | ExecutionException e) {
      throw new IllegalStateException("copy of " + master + " to " + to + " failed", e);
    } finally {
      pool.shutdownNow();
    }
    return to.toString();
  }

  void delete(String copy) {
    org.apache.hadoop.fs.Path path = new org.apache.hadoop.fs.Path(copy);
    try {
      path.getFileSystem(conf).delete(path, true);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  @Override
  public void close() throws Exception {
    if (hdfs != null) {
      hdfs.shutdown();
    }
    if (s3 != null) {
      s3.close();
    }
  }
}
