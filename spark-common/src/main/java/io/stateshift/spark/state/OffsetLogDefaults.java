package io.stateshift.spark.state;

import java.lang.reflect.Field;
import java.util.Map;
import java.util.TreeMap;
import org.apache.spark.sql.execution.streaming.checkpointing.OffsetSeqMetadata$;

/**
 * The values Spark gives the settings an offset log does not record. A checkpoint written by an
 * older Spark lacks the settings added since (4.2's RocksDB merge operator version, for one), and
 * Spark continues it with a fixed legacy value for each, not the session's default: 4.2 joins a
 * list state's values with commas (version 1) in such a checkpoint, and without (2) in a new one.
 * State read or written for that checkpoint must use the same values. Spark keeps the table in a
 * private member of {@code OffsetSeqMetadata}; its public path to it ({@code setSessionConf}) logs
 * a warning per setting, so it is read here directly, in this one place.
 */
final class OffsetLogDefaults {
  private static final Map<String, String> LEGACY = legacyValues();

  private OffsetLogDefaults() {}

  /** The settings {@code recorded} lacks, with the value Spark continues the query with. */
  static Map<String, String> missingFrom(Map<String, String> recorded) {
    Map<String, String> missing = new TreeMap<>(LEGACY);
    missing.keySet().removeAll(recorded.keySet());
    return missing;
  }

  private static Map<String, String> legacyValues() {
    try {
      Field field = OffsetSeqMetadata$.class.getDeclaredField("relevantSQLConfDefaultValues");
      field.setAccessible(true);
      @SuppressWarnings("unchecked")
      scala.collection.Map<String, String> values =
          (scala.collection.Map<String, String>) field.get(OffsetSeqMetadata$.MODULE$);
      return Map.copyOf(ScalaBridge.javaMap(values));
    } catch (ReflectiveOperationException | ClassCastException e) {
      throw new IllegalStateException(
          "Spark's OffsetSeqMetadata has no private map 'relevantSQLConfDefaultValues' of the"
              + " values it gives settings an offset log does not record; this Spark version's"
              + " internals differ: "
              + e,
          e);
    }
  }
}
