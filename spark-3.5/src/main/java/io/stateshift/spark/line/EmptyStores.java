package io.stateshift.spark.line;

import java.lang.reflect.Field;
import org.apache.spark.sql.execution.streaming.state.RocksDB;
import org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider;
import org.apache.spark.sql.execution.streaming.state.StateStore;
import org.apache.spark.sql.execution.streaming.state.StateStoreChangelogWriter;
import org.apache.spark.sql.execution.streaming.state.StateStoreProvider;

/**
 * An empty RocksDB store whose commit writes a given version, on Spark 3.5, whose provider cannot
 * open one (Spark 4.2 added {@code getStore(..., loadEmpty = true)} for this): version 0, which is
 * empty, is opened, and the database is told it holds {@code version}. Its commit then uploads a
 * snapshot of {@code version + 1}, the only file a reader of that version needs; no changelog is
 * written, as with Spark's own empty load.
 */
final class EmptyStores {
  private static final Field LOADED_VERSION = field("loadedVersion");
  private static final Field CHANGELOG_WRITER = field("changelogWriter");
  private static final Field CHANGELOG_ENABLED = field("enableChangelogCheckpointing");

  private EmptyStores() {}

  static StateStore open(StateStoreProvider provider, long version) {
    if (!(provider instanceof RocksDBStateStoreProvider rocksDb)) {
      throw new IllegalStateException(
          "an empty store at a version is opened for RocksDB only, not " + provider);
    }
    StateStore store = provider.getStore(0);
    if (version == 0) {
      return store;
    }
    RocksDB db = rocksDb.rocksDB();
    try {
      @SuppressWarnings("unchecked")
      scala.Option<StateStoreChangelogWriter> writer =
          (scala.Option<StateStoreChangelogWriter>) CHANGELOG_WRITER.get(db);
      if (writer.isDefined()) {
        writer.get().abort();
      }
      CHANGELOG_WRITER.set(db, scala.Option.empty());
      CHANGELOG_ENABLED.setBoolean(db, false);
      LOADED_VERSION.setLong(db, version);
    } catch (IllegalAccessException e) {
      store.abort();
      throw new IllegalStateException("Cannot open an empty RocksDB store at " + version, e);
    }
    return store;
  }

  private static Field field(String name) {
    try {
      Field f = RocksDB.class.getDeclaredField(name);
      f.setAccessible(true);
      return f;
    } catch (NoSuchFieldException e) {
      throw new ExceptionInInitializerError(
          "Spark's RocksDB class has no field " + name + " on this line: " + e);
    }
  }
}
