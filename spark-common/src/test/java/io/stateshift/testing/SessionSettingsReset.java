package io.stateshift.testing;

import org.junit.jupiter.api.extension.AfterAllCallback;
import org.junit.jupiter.api.extension.ExtensionContext;

/**
 * Puts the shared session's settings back after every test class (registered for all of them
 * through {@code META-INF/services} and {@code junit-platform.properties}).
 */
public final class SessionSettingsReset implements AfterAllCallback {
  @Override
  public void afterAll(ExtensionContext context) {
    SparkTestSession.restoreSettings();
  }
}
