package io.stateshift.demo;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * The demo's commentary never stays silent for long: a phase without news prints a line every few
 * seconds, each line carries the time since the start, and the run's longest silence is measured
 * for its last line.
 */
class DemoCommentaryTest {
  @Test
  void aLongPhaseWithoutNewsStillPrintsAndTheLongestSilenceIsMeasured() throws Exception {
    ByteArrayOutputStream bytes = new ByteArrayOutputStream();
    PrintStream out = new PrintStream(bytes, true, StandardCharsets.UTF_8);
    DeviceCountsDemo.Result result;
    try (DeviceCountsDemo.Commentary say = new DeviceCountsDemo.Commentary(out)) {
      say.phase("a slow phase");
      Thread.sleep(12_000);
      say.line("done");
      result = say.result(Path.of("base"), Path.of("cp"), true, 5, Path.of("history"));
    }
    List<String> lines = bytes.toString(StandardCharsets.UTF_8).lines().toList();
    assertThat(lines.get(0)).matches("\\[ +0\\.\\d s\\] > a slow phase");
    assertThat(lines)
        .filteredOn(l -> l.contains("... a slow phase ("))
        .hasSizeGreaterThanOrEqualTo(2);
    assertThat(lines.get(lines.size() - 1)).matches("\\[ +1[234]\\.\\d s\\]   done");
    assertThat(result.wallMs()).isBetween(12_000L, 20_000L);
    assertThat(result.longestSilenceMs())
        .isGreaterThanOrEqualTo(DeviceCountsDemo.Commentary.TICK_MS - 100)
        .isLessThan(10_000L);
  }
}
