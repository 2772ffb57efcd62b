package io.stateshift.testing;

import java.nio.file.Path;

/** Files of the source tree that tests use, wherever the test JVM's working folder is. */
public final class ProjectFiles {
  private ProjectFiles() {}

  /** The project's root folder (Maven passes it; the module folder's parent otherwise). */
  public static Path root() {
    return Path.of(System.getProperty("stateshift.projectDir", "..")).toAbsolutePath().normalize();
  }

  /** The JVM options file every Spark JVM of the project starts with. */
  public static Path sparkJvmOptions() {
    return root().resolve("spark-jvm.options");
  }

  /** The log settings of the command line. */
  public static Path cliLogSettings() {
    return root().resolve("core/src/main/resources/stateshift-log4j2.properties");
  }
}
