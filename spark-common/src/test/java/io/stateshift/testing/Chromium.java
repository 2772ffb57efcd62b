package io.stateshift.testing;

import java.io.File;
import java.io.IOException;
import java.util.concurrent.TimeUnit;

/**
 * Debian's Chromium for browser tests. The test command must work on a fresh machine, so when the
 * browser is missing and this JVM may install packages (root with apt-get, as on CI), it installs
 * it; otherwise the test fails with the command to run.
 */
public final class Chromium {
  public static final String PATH = "/usr/bin/chromium";
  private static final String INSTALL = "apt-get update && apt-get install -y chromium";

  private Chromium() {}

  /** The browser's path, installed first if needed and possible. */
  public static synchronized String installed() throws IOException, InterruptedException {
    if (new File(PATH).canExecute()) {
      return PATH;
    }
    boolean root = "root".equals(System.getProperty("user.name"));
    if (root && new File("/usr/bin/apt-get").canExecute()) {
      System.err.println("Chromium not found: running `" + INSTALL + "`");
      Process install = new ProcessBuilder("sh", "-c", INSTALL).inheritIO().start();
      if (!install.waitFor(15, TimeUnit.MINUTES)) {
        install.destroyForcibly();
      }
    }
    if (!new File(PATH).canExecute()) {
      throw new AssertionError(
          "Chromium is needed for this test and could not be installed "
              + "here; install it with `"
              + INSTALL
              + "` (as root) and run the tests again");
    }
    return PATH;
  }
}
