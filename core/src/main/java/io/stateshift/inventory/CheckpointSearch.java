package io.stateshift.inventory;

import io.stateshift.StateShiftException;
import io.stateshift.StateShiftException.Reason;
import java.io.FileNotFoundException;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FileStatus;
import org.apache.hadoop.fs.FileSystem;
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

  /**
   * The checkpoints at or below each location, by name. A location that does not exist, or under
   * which no checkpoint is found, is bad input.
   */
  public static List<Found> find(List<String> locations, Configuration conf) {
    if (locations.isEmpty()) {
      throw new StateShiftException(
          Reason.INVALID_ARGUMENT,
          "No location given. Pass a folder that holds checkpoints, or checkpoints themselves.");
    }
    Map<String, Found> out = new LinkedHashMap<>();
    for (String location : locations) {
      List<Found> found = new ArrayList<>();
      try {
        Path path = new Path(location);
        FileSystem fs = path.getFileSystem(conf);
        path = fs.makeQualified(path);
        FileStatus status;
        try {
          status = fs.getFileStatus(path);
        } catch (FileNotFoundException e) {
          throw new StateShiftException(
              Reason.CHECKPOINT_NOT_FOUND,
              location + " does not exist. Pass a folder that holds checkpoints, or a checkpoint.");
        }
        if (!status.isDirectory()) {
          throw new StateShiftException(
              Reason.NOT_A_CHECKPOINT,
              location + " is a file. Pass a folder that holds checkpoints, or a checkpoint.");
        }
        walk(fs, path, path, 0, found);
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
    return List.copyOf(out.values());
  }

  private static void walk(FileSystem fs, Path root, Path dir, int depth, List<Found> out)
      throws IOException {
    FileStatus[] children;
    try {
      children = fs.listStatus(dir);
    } catch (FileNotFoundException gone) {
      return;
    }
    boolean offsets = false;
    boolean commitsOrMetadata = false;
    List<Path> folders = new ArrayList<>();
    for (FileStatus child : children) {
      String name = child.getPath().getName();
      if (child.isDirectory()) {
        offsets |= name.equals("offsets");
        commitsOrMetadata |= name.equals("commits");
        if (!name.startsWith("_") && !name.startsWith(".")) {
          folders.add(child.getPath());
        }
      } else if (name.equals("metadata")) {
        commitsOrMetadata = true;
      }
    }
    if (offsets && commitsOrMetadata) {
      out.add(new Found(name(root, dir), dir.toString()));
      return;
    }
    if (depth < MAX_DEPTH) {
      for (Path folder : folders) {
        walk(fs, root, folder, depth + 1, out);
      }
    }
  }

  /** The path below the folder given; the folder's own name when it is the checkpoint. */
  private static String name(Path root, Path dir) {
    if (dir.equals(root)) {
      return dir.getName().isEmpty() ? dir.toString() : dir.getName();
    }
    String r = root.toUri().getPath();
    String d = dir.toUri().getPath();
    String relative = d.startsWith(r) ? d.substring(r.length()) : d;
    return relative.startsWith("/") ? relative.substring(1) : relative;
  }
}
