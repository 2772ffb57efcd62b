package io.stateshift.cli;

import static org.assertj.core.api.Assertions.assertThat;

import io.stateshift.testing.SparkTestSession;
import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import org.junit.jupiter.api.Test;

/** Argument checks of the command line that need no checkpoint. */
class StateShiftCliTest {
  @Test
  void theDemoRefusesTooFewEventsToCloseAWindowAndNamesTheLeastThatWorks() {
    SparkTestSession.get(); // the CLI uses the session a program already has
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    ByteArrayOutputStream err = new ByteArrayOutputStream();
    int exit = new StateShiftCli(new PrintStream(out, true, StandardCharsets.UTF_8),
        new PrintStream(err, true, StandardCharsets.UTF_8))
        .run(new String[] {"demo", "--events", "2000"});
    assertThat(exit).isEqualTo(StateShiftCli.BAD_INPUT);
    assertThat(err.toString(StandardCharsets.UTF_8))
        .contains("--events 2,000 is too few").contains("at least 20,000");
    assertThat(out.toString(StandardCharsets.UTF_8)).doesNotContain("device events written");
  }
}
