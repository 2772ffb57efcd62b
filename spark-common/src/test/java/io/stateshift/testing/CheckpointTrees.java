package io.stateshift.testing;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.stream.Stream;

/** Copies of local checkpoint (and input) folders for tests: files, folders, modification times. */
public final class CheckpointTrees {
  private CheckpointTrees() {}

  /**
   * Copies the folder {@code from} to {@code to} with every file's attributes; returns {@code to}.
   */
  public static Path copy(Path from, Path to) {
    return copy(from, to, false);
  }

  /**
   * The same, leaving out Hadoop's local checksum side files ({@code .<name>.crc}): a copy that
   * {@code faulty://} (the raw local file system) changes would otherwise keep stale ones for the
   * checksummed {@code file://} reads.
   */
  public static Path copyWithoutChecksums(Path from, Path to) {
    return copy(from, to, true);
  }

  private static Path copy(Path from, Path to, boolean withoutChecksums) {
    try (Stream<Path> paths = Files.walk(from)) {
      for (Path p : (Iterable<Path>) paths::iterator) {
        Path target = to.resolve(from.relativize(p).toString());
        String name = p.getFileName().toString();
        if (Files.isDirectory(p)) {
          Files.createDirectories(target);
        } else if (!(withoutChecksums && name.startsWith(".") && name.endsWith(".crc"))) {
          Files.copy(p, target, StandardCopyOption.COPY_ATTRIBUTES);
        }
      }
    } catch (IOException e) {
      throw new UncheckedIOException("copy " + from + " -> " + to, e);
    }
    return to;
  }
}
