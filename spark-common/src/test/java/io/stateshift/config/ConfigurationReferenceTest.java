package io.stateshift.config;

import static org.assertj.core.api.Assertions.assertThat;

import io.stateshift.testing.ConfigurationReference;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;

/**
 * The configuration reference is what {@link StateShiftConf} generates, and the main code reads no
 * setting {@link StateShiftConf} does not declare.
 */
class ConfigurationReferenceTest {
  @Test
  void docsConfigurationMdIsWhatStateShiftConfGenerates() throws IOException {
    if (Boolean.getBoolean("stateshift.writeReference")) {
      ConfigurationReference.write();
    }
    Path file = ConfigurationReference.file();
    String generated = StateShiftConf.markdown();
    String written = Files.exists(file) ? Files.readString(file, StandardCharsets.UTF_8) : "";
    assertThat(written)
        .as(
            "%s differs from what StateShiftConf declares; regenerate it with: %s",
            file, ConfigurationReference.REGENERATE)
        .isEqualTo(generated);
  }

  @Test
  void everySettingKeyInTheMainCodeIsDeclared() throws IOException {
    Set<String> declared = new HashSet<>();
    StateShiftConf.all().forEach(setting -> declared.add(setting.key()));
    Pattern key = Pattern.compile("\"(spark\\.stateshift\\.[A-Za-z0-9.]+[A-Za-z0-9])\"");
    Set<String> undeclared = new HashSet<>();
    List<Path> roots = ConfigurationReference.mainSources();
    assertThat(roots).isNotEmpty();
    for (Path main : roots) {
      try (Stream<Path> files = Files.walk(main)) {
        for (Path source : files.filter(p -> p.toString().endsWith(".java")).toList()) {
          Matcher m = key.matcher(Files.readString(source));
          while (m.find()) {
            if (!declared.contains(m.group(1))) {
              undeclared.add(m.group(1) + " (" + source.getFileName() + ")");
            }
          }
        }
      }
    }
    assertThat(undeclared).as("keys read outside StateShiftConf").isEmpty();
  }

  @Test
  void everySettingHasATypeADocAndAUniqueKey() {
    Set<String> keys = new HashSet<>();
    for (StateShiftConf.Setting<?> setting : StateShiftConf.all()) {
      assertThat(keys.add(setting.key())).as("unique: %s", setting.key()).isTrue();
      assertThat(setting.doc()).as(setting.key()).isNotBlank().doesNotContain("\n");
      if (!setting.defaultText().isEmpty()
          && setting.section() != StateShiftConf.Section.LAUNCHER) {
        setting.parse(null); // the default parses as its type
      }
    }
    assertThat(StateShiftConf.byKey("spark.stateshift.lock.leaseMs").type())
        .isEqualTo(StateShiftConf.Type.LONG);
  }
}
