package io.stateshift.spark.state;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.Map;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

/**
 * The legacy values Spark gives the settings an old offset log lacks are read from this line's
 * Spark (a private member), and only for the settings not recorded.
 */
class OffsetLogDefaultsTest {
  static final String AGGREGATION_FORMAT = "spark.sql.streaming.aggregation.stateFormatVersion";

  @Test
  @Tag("cover") // the private member is read on every line
  void anUnrecordedSettingTakesSparksLegacyValueARecordedOneKeepsItsOwn() {
    Map<String, String> none = OffsetLogDefaults.missingFrom(Map.of());
    // every Spark since 2.3 continues an aggregation without a recorded format with version 1
    assertThat(none).containsEntry(AGGREGATION_FORMAT, "1");
    assertThat(none).containsEntry("spark.sql.streaming.stateStore.compression.codec", "lz4");
    assertThat(OffsetLogDefaults.missingFrom(Map.of(AGGREGATION_FORMAT, "2")))
        .doesNotContainKey(AGGREGATION_FORMAT)
        .hasSize(none.size() - 1);
  }
}
