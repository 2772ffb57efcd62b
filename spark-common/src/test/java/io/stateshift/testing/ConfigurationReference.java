package io.stateshift.testing;

import io.stateshift.config.StateShiftConf;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;

/**
 * Writes {@code docs/configuration.md} from {@link StateShiftConf}: {@link #REGENERATE}, or this
 * main.
 */
public final class ConfigurationReference {
  /** How to regenerate the reference, for failure messages. */
  public static final String REGENERATE =
      "mvn test -Dtest=ConfigurationReferenceTest -Dsurefire.failIfNoSpecifiedTests=false"
          + " -Dstateshift.writeReference=true";

  private ConfigurationReference() {}

  /** The repository's {@code docs/configuration.md}, from the working folder or one above it. */
  public static Path file() {
    Path dir = Path.of("").toAbsolutePath();
    for (Path at = dir; at != null; at = at.getParent()) {
      if (Files.isRegularFile(at.resolve("docs/architecture.md"))) {
        return at.resolve("docs/configuration.md");
      }
    }
    throw new IllegalStateException("No docs/architecture.md in " + dir + " or above");
  }

  /** The {@code src/main/java} folders of every module. */
  public static java.util.List<Path> mainSources() throws IOException {
    try (java.util.stream.Stream<Path> modules = Files.list(file().getParent().getParent())) {
      return modules
          .map(module -> module.resolve("src/main/java"))
          .filter(Files::isDirectory)
          .sorted()
          .toList();
    }
  }

  public static void write() throws IOException {
    Files.writeString(file(), StateShiftConf.markdown(), StandardCharsets.UTF_8);
  }

  public static void main(String[] args) throws IOException {
    write();
    System.out.println("Wrote " + file());
  }
}
