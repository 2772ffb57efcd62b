package io.stateshift.spark.line;

import java.io.File;
import java.lang.reflect.Field;
import org.apache.spark.sql.execution.streaming.state.RocksDB;

/**
 * Spark 4.0's and 3.5's RocksDB keep a store's local folder in a private field (the constructor's
 * parameter), which their StateCalls read; later Sparks have a getter.
 */
final class RocksDbLocalDir {
  private RocksDbLocalDir() {}

  /** RocksDB's {@code localRootDir} field, accessible; null where Spark has no such field. */
  static final Field FIELD = field();

  private static Field field() {
    try {
      Field f = RocksDB.class.getDeclaredField("localRootDir");
      if (f.getType() != File.class) {
        return null;
      }
      f.setAccessible(true);
      return f;
    } catch (NoSuchFieldException | RuntimeException e) {
      return null;
    }
  }
}
