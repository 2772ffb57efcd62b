package io.stateshift.testing;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.util.HexFormat;
import java.util.Map;
import java.util.TreeMap;
import java.util.stream.Stream;

/** A digest of every file and folder under a local checkpoint, to prove it was left unchanged. */
public final class CheckpointDigest {
  private CheckpointDigest() {}

  public static Map<String, String> of(Path root) {
    awaitQueryEvents();
    Map<String, String> out = new TreeMap<>();
    try (Stream<Path> paths = Files.walk(root)) {
      for (Path p : (Iterable<Path>) paths::iterator) {
        String rel = root.relativize(p).toString();
        if (Files.isDirectory(p)) {
          out.put(rel + "/", "dir");
        } else {
          MessageDigest sha = MessageDigest.getInstance("SHA-256");
          out.put(rel, HexFormat.of().formatHex(sha.digest(Files.readAllBytes(p))));
        }
      }
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    } catch (java.security.NoSuchAlgorithmException e) {
      throw new IllegalStateException(e);
    }
    return out;
  }

  /** The same digest for a checkpoint on any Hadoop file system (for example a MiniDFSCluster). */
  public static Map<String, String> of(
      org.apache.hadoop.fs.FileSystem fs, org.apache.hadoop.fs.Path root) {
    awaitQueryEvents();
    Map<String, String> out = new TreeMap<>();
    try {
      String prefix = fs.makeQualified(root).toUri().getPath() + "/";
      var files = fs.listFiles(root, true);
      while (files.hasNext()) {
        org.apache.hadoop.fs.Path file = files.next().getPath();
        MessageDigest sha = MessageDigest.getInstance("SHA-256");
        try (var in = fs.open(file)) {
          out.put(
              file.toUri().getPath().substring(prefix.length()),
              HexFormat.of().formatHex(sha.digest(in.readAllBytes())));
        }
      }
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    } catch (java.security.NoSuchAlgorithmException e) {
      throw new IllegalStateException(e);
    }
    return out;
  }

  /** See {@link StreamRun#awaitQueryEvents}: a digest must see the settled checkpoint. */
  private static void awaitQueryEvents() {
    org.apache.spark.sql.SparkSession.getDefaultSession()
        .foreach(
            session -> {
              StreamRun.awaitQueryEvents(session);
              return null;
            });
  }
}
