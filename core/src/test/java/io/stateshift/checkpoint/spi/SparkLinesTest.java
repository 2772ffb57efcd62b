package io.stateshift.checkpoint.spi;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.stateshift.StateShiftException;
import java.lang.reflect.Proxy;
import org.junit.jupiter.api.Test;

/** A line's module refuses to run on the Spark of another line, and names the one to use. */
class SparkLinesTest {

  @Test
  void aLineOnItsOwnSparkIsUsed() {
    SparkLine line = lineNamed("4.1");
    assertThat(SparkLines.requireOwnSpark(line, "4.1.3")).isSameAs(line);
  }

  @Test
  void aLineOnAnotherLinesSparkIsRefusedWithTheArtifactToUse() {
    assertThatThrownBy(() -> SparkLines.requireOwnSpark(lineNamed("4.2"), "4.1.3"))
        .isInstanceOfSatisfying(
            StateShiftException.class,
            e -> assertThat(e.reason()).isEqualTo(StateShiftException.Reason.SPARK_LINE_MISMATCH))
        .hasMessageContaining("Spark 4.2 line runs on Spark 4.1.3")
        .hasMessageContaining("stateshift-spark-4.1_<scala version>")
        .hasMessageContaining("STATESHIFT_SPARK_LINE=4.1");
  }

  @Test
  void theLineOfASparkVersionIsItsMajorAndMinor() {
    assertThat(SparkLines.lineOf("3.5.8")).isEqualTo("3.5");
    assertThat(SparkLines.lineOf("4.2.0-SNAPSHOT")).isEqualTo("4.2");
  }

  private static SparkLine lineNamed(String name) {
    return (SparkLine)
        Proxy.newProxyInstance(
            SparkLine.class.getClassLoader(),
            new Class<?>[] {SparkLine.class},
            (proxy, method, args) -> {
              if (method.getName().equals("sparkLine")) {
                return name;
              }
              throw new UnsupportedOperationException(method.getName());
            });
  }
}
