package io.stateshift.testing;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.jar.JarEntry;
import java.util.jar.JarOutputStream;

/** An application's jar as users build one: a few classes of the test classes, nothing else. */
public final class AppJar {
  private AppJar() {}

  /** Writes {@code jar} with the test classes of {@code app}'s package whose names start so. */
  public static Path of(Path jar, Class<?> app) throws IOException {
    Path classes = Path.of("target/test-classes");
    String folder = app.getPackageName().replace('.', '/');
    try (JarOutputStream out = new JarOutputStream(Files.newOutputStream(jar));
        var files = Files.walk(classes.resolve(folder))) {
      for (Path f :
          files
              .filter(p -> p.getFileName().toString().startsWith(app.getSimpleName()))
              .sorted()
              .toList()) {
        out.putNextEntry(new JarEntry(classes.relativize(f).toString().replace('\\', '/')));
        Files.copy(f, out);
        out.closeEntry();
      }
    }
    return jar;
  }
}
