package io.stateshift.inventory;

import io.stateshift.StateShiftException;
import io.stateshift.StateShiftException.Reason;
import io.stateshift.checkpoint.CheckpointFiles;
import java.io.FileNotFoundException;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FileStatus;
import org.apache.hadoop.fs.Path;

/**
 * Finds the streaming checkpoints under the folders it is given: a folder holding an {@code
 * offsets/} folder and a {@code commits/} folder or a {@code metadata} file is a checkpoint, and
 * the search does not go into it. Folders whose names start with {@code _} or {@code .} (a sink's
 * {@code _spark_metadata}, stateshift's {@code _stateshift}) are passed over. Lists folders only;
 * reads no file.
 */
public final class CheckpointSearch {
  /** How deep below a given folder checkpoints are looked for. */
  public static final int MAX_DEPTH = 6;

  /** A checkpoint found: its name in the fleet (its path below the folder given) and location. */
  public record Found(String name, String location) {}

  private CheckpointSearch() {}

  /** One entry of a folder listing. */
  private record Entry(String path, String name, boolean directory) {}

  /** A file system as the search sees it: an entry by path, and a folder's entries. */
  private interface Listing {
    /** The entry at {@code location} with its qualified path; null when there is none. */
    Entry stat(String location) throws IOException;

    /** The entries of a folder; empty when it is gone. */
    List<Entry> list(String dir) throws IOException;
  }

  /**
   * The checkpoints at or below each location, by name. A location that does not exist, or under
   * which no checkpoint is found, is bad input.
   */
  public static List<Found> find(List<String> locations, Configuration conf) {
    return find(locations, hadoop(conf));
  }

  /**
   * The same for local paths, through the JVM's own file API: no Hadoop file system to start, so
   * the command line can refuse a wrong path at once, before Spark starts.
   */
  public static List<Found> findLocal(List<String> locations) {
    return find(locations, LOCAL);
  }

  private static List<Found> find(List<String> locations, Listing fs) {
    if (locations.isEmpty()) {
      throw new StateShiftException(
          Reason.INVALID_ARGUMENT,
          "No location given. Pass a folder that holds checkpoints, or checkpoints themselves.");
    }
    Map<String, Found> out = new LinkedHashMap<>();
    for (String location : locations) {
      List<Found> found = new ArrayList<>();
      try {
        Entry root = fs.stat(location);
        if (root == null) {
          throw new StateShiftException(
              Reason.CHECKPOINT_NOT_FOUND,
              location + " does not exist. Pass a folder that holds checkpoints, or a checkpoint.");
        }
        if (!root.directory()) {
          throw new StateShiftException(
              Reason.NOT_A_CHECKPOINT,
              location + " is a file. Pass a folder that holds checkpoints, or a checkpoint.");
        }
        walk(fs, root.path(), root.path(), 0, found);
      } catch (IOException e) {
        throw new UncheckedIOException("Cannot list " + location + ": " + e.getMessage(), e);
      }
      if (found.isEmpty()) {
        throw new StateShiftException(
            Reason.NOT_A_CHECKPOINT,
            "No streaming checkpoint at or below "
                + location
                + " (looked "
                + MAX_DEPTH
                + " folders deep for folders with offsets/ and commits/ or metadata).");
      }
      found.sort(Comparator.comparing(Found::name));
      found.forEach(f -> out.putIfAbsent(f.location(), f));
    }
    // two streams of one name (the same folder name under two locations): named by location
    Map<String, Long> names = new HashMap<>();
    out.values().forEach(f -> names.merge(f.name(), 1L, Long::sum));
    return out.values().stream()
        .map(f -> names.get(f.name()) > 1 ? new Found(f.location(), f.location()) : f)
        .toList();
  }

  private static void walk(Listing fs, String root, String dir, int depth, List<Found> out)
      throws IOException {
    boolean offsets = false;
    boolean commitsOrMetadata = false;
    List<String> folders = new ArrayList<>();
    for (Entry child : fs.list(dir)) {
      String name = child.name();
      if (child.directory()) {
        offsets |= name.equals("offsets");
        commitsOrMetadata |= name.equals("commits");
        if (!name.startsWith("_") && !name.startsWith(".")) {
          folders.add(child.path());
        }
      } else if (name.equals("metadata")) {
        commitsOrMetadata = true;
      }
    }
    if (offsets && commitsOrMetadata) {
      out.add(new Found(name(root, dir), dir));
      return;
    }
    if (depth < MAX_DEPTH) {
      folders.sort(Comparator.naturalOrder());
      for (String folder : folders) {
        walk(fs, root, folder, depth + 1, out);
      }
    }
  }

  /**
   * The path below the folder given; for a checkpoint given itself, its folder's name, with its
   * parent's when that name says no more than "checkpoint" ({@code orders/checkpoint}).
   */
  private static String name(String root, String dir) {
    if (dir.equals(root)) {
      Path path = new Path(dir);
      String name = path.getName();
      if (name.isEmpty()) {
        return dir;
      }
      boolean generic = name.matches("(?i)[._-]?(checkpoints?|checkpoint_?location|chk|ckpt|cp)");
      return generic && path.getParent() != null && !path.getParent().getName().isEmpty()
          ? path.getParent().getName() + "/" + name
          : name;
    }
    String relative = dir.startsWith(root) ? dir.substring(root.length()) : dir;
    return relative.startsWith("/") ? relative.substring(1) : relative;
  }

  private static Listing hadoop(Configuration conf) {
    return new Listing() {
      @Override
      public Entry stat(String location) throws IOException {
        // as the commands open a checkpoint: the connector's hint when the scheme has none, and
        // a denied first request refused in one line that names the credentials' settings
        CheckpointFiles files = CheckpointFiles.at(location, conf);
        try {
          FileStatus status = files.fs().getFileStatus(files.root());
          return new Entry(
              status.getPath().toString(), status.getPath().getName(), status.isDirectory());
        } catch (FileNotFoundException e) {
          return null;
        } catch (java.nio.file.AccessDeniedException e) {
          throw files.accessDenied(e);
        }
      }

      @Override
      public List<Entry> list(String dir) throws IOException {
        Path path = new Path(dir);
        List<Entry> out = new ArrayList<>();
        try {
          for (FileStatus child : path.getFileSystem(conf).listStatus(path)) {
            out.add(
                new Entry(
                    child.getPath().toString(), child.getPath().getName(), child.isDirectory()));
          }
        } catch (FileNotFoundException gone) {
          // listed a moment ago, gone now: nothing below it
        }
        return out;
      }
    };
  }

  private static final Listing LOCAL =
      new Listing() {
        @Override
        public Entry stat(String location) {
          java.nio.file.Path path = local(location);
          if (!java.nio.file.Files.exists(path)) {
            return null;
          }
          return new Entry(
              path.toString(),
              String.valueOf(path.getFileName()),
              java.nio.file.Files.isDirectory(path));
        }

        @Override
        public List<Entry> list(String dir) throws IOException {
          List<Entry> out = new ArrayList<>();
          try (var children = java.nio.file.Files.list(java.nio.file.Path.of(dir))) {
            children.forEach(
                c ->
                    out.add(
                        new Entry(
                            c.toString(),
                            c.getFileName().toString(),
                            java.nio.file.Files.isDirectory(c))));
          } catch (java.nio.file.NoSuchFileException gone) {
            // listed a moment ago, gone now: nothing below it
          }
          return out;
        }
      };

  /** A local location as a path: {@code file:} URIs and plain paths, made absolute. */
  public static java.nio.file.Path local(String location) {
    String p = location.startsWith("file:") ? java.net.URI.create(location).getPath() : location;
    return java.nio.file.Path.of(p).toAbsolutePath().normalize();
  }
}
