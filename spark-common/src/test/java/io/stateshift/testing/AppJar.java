package io.stateshift.testing;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.jar.JarEntry;
import java.util.jar.JarOutputStream;

/** An application's jar as users build one: a few classes of the test classes, nothing else. */
public final class AppJar {
  private AppJar() {}

  /** The folder of the test classes, wherever the test JVM's working folder is. */
  public static Path testClasses() {
    try {
      return Path.of(AppJar.class.getProtectionDomain().getCodeSource().getLocation().toURI());
    } catch (java.net.URISyntaxException e) {
      throw new IllegalStateException(e);
    }
  }

  /** Writes {@code jar} with the test classes of {@code app}'s package whose names start so. */
  public static Path of(Path jar, Class<?> app) throws IOException {
    Path classes = testClasses();
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
