package io.stateshift.spark;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatCode;

import java.io.File;
import java.util.Arrays;
import java.util.Set;
import java.util.stream.Collectors;
import org.junit.jupiter.api.Test;

/**
 * The command line's head starts call Spark as its provider does; on this Spark version they must
 * succeed (the command swallows their failures, so a silent break would only show as a slower
 * start) and leave nothing behind.
 */
class StartupWarmupTest {
  @Test
  void theHeadStartsRunOnThisSparkVersionAndLeaveNoFiles() {
    Set<String> before = warmupFolders();
    assertThatCode(
            () -> {
              StartupWarmup.rocksDbCheckpointMetadata();
              StartupWarmup.rocksDbNativeLibrary();
            })
        .doesNotThrowAnyException();
    assertThat(warmupFolders()).isEqualTo(before);
  }

  private static Set<String> warmupFolders() {
    String[] names =
        new File(System.getProperty("java.io.tmpdir"))
            .list((dir, name) -> name.startsWith("stateshift-warmup"));
    return names == null ? Set.of() : Arrays.stream(names).collect(Collectors.toSet());
  }
}
