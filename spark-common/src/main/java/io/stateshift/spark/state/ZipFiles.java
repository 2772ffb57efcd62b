package io.stateshift.spark.state;

import java.io.File;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.nio.file.Files;
import java.util.zip.ZipEntry;
import java.util.zip.ZipInputStream;

/**
 * Unzips a RocksDB snapshot as Spark's file manager does: every file entry into one local folder,
 * by its base name, folders skipped. (Spark's own stream variant is not on every line.)
 */
final class ZipFiles {
  private ZipFiles() {}

  /** Unzips {@code zip} into {@code dir} and closes it. */
  static void unzip(InputStream zip, File dir) throws IOException {
    try (ZipInputStream in = new ZipInputStream(zip)) {
      for (ZipEntry entry = in.getNextEntry(); entry != null; entry = in.getNextEntry()) {
        if (entry.isDirectory()) {
          continue;
        }
        File out = new File(dir, new File(entry.getName()).getName());
        try (OutputStream target = Files.newOutputStream(out.toPath())) {
          in.transferTo(target);
        }
      }
    }
  }
}
