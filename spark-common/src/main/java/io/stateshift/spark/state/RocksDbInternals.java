package io.stateshift.spark.state;

import io.stateshift.spark.line.RocksDbCalls;
import io.stateshift.spark.line.StateCalls;
import java.lang.reflect.Field;
import org.apache.spark.sql.execution.streaming.state.RocksDB;
import org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider;
import org.apache.spark.sql.execution.streaming.state.StateStoreProvider;

/**
 * The two private members of Spark's {@code RocksDB} class (4.2) that the SST fast path needs: the
 * native database, to ingest a prebuilt SST file, and the key count of the version being written,
 * which {@code put} would otherwise maintain with a read per key; and the provider's RocksDB
 * options, to keep a store opened for reading from compacting. Kept in this one class so that a
 * Spark upgrade touches one place; {@link #available()} is false when the fields are not there, and
 * callers then write through the provider's puts instead.
 */
final class RocksDbInternals {
  private static final Field NATIVE_DB = field("db", org.rocksdb.RocksDB.class);
  private static final Field KEYS_ON_WRITING_VERSION = field("numKeysOnWritingVersion", long.class);
  private static final String PROBLEM = problemOf();

  private RocksDbInternals() {}

  /** The line's own reason (4.0: StateCalls), else missing fields, else none. */
  private static String problemOf() {
    if (StateCalls.ROCKSDB_FAST_PATHS_UNAVAILABLE != null) {
      return StateCalls.ROCKSDB_FAST_PATHS_UNAVAILABLE;
    }
    if (NATIVE_DB == null || KEYS_ON_WRITING_VERSION == null) {
      return "Spark's org.apache.spark.sql.execution.streaming.state.RocksDB has no private field 'db' "
          + "(org.rocksdb.RocksDB) or 'numKeysOnWritingVersion' (long); this Spark version's "
          + "internals differ from 4.2";
    }
    return null;
  }

  static boolean available() {
    return PROBLEM == null;
  }

  /** Why the fast path is unavailable, or null. */
  static String problem() {
    return PROBLEM;
  }

  static org.rocksdb.RocksDB nativeDb(RocksDB db) {
    org.rocksdb.RocksDB nativeDb = (org.rocksdb.RocksDB) get(NATIVE_DB, db);
    if (nativeDb == null) {
      throw new IllegalStateException("Spark's RocksDB instance has no open native database");
    }
    return nativeDb;
  }

  /**
   * Keeps a store that is opened only to be read from compacting itself. Spark opens every version
   * read-write, and an old partition with as many level-0 files as RocksDB's trigger (4: one per
   * batch) starts merging them at once, rewriting the whole partition on a core the walk needs,
   * only to throw the result away when the store closes. Call before the load. False for other
   * providers, and on a Spark version where this cannot be set ({@link #stopCompactions} after the
   * load covers that).
   */
  static boolean disableCompactions(StateStoreProvider provider) {
    if (!(provider instanceof RocksDBStateStoreProvider rocksDb)) {
      return false;
    }
    try {
      return RocksDbCalls.disableAutoCompactions(rocksDb.rocksDB());
    } catch (LinkageError e) {
      return false; // another Spark version's members
    }
  }

  /**
   * Cancels the compactions a loaded store is running. Reading is unaffected: an iterator keeps the
   * files it started on, and a cancelled compaction leaves its input files as they were.
   */
  static void stopCompactions(RocksDB db) {
    nativeDb(db).cancelAllBackgroundWork(false);
  }

  /** Sets the key count Spark records in the snapshot's metadata on the next commit. */
  static void setKeysOnWritingVersion(RocksDB db, long keys) {
    require();
    try {
      KEYS_ON_WRITING_VERSION.setLong(db, keys);
    } catch (IllegalAccessException e) {
      throw new IllegalStateException("Cannot set RocksDB.numKeysOnWritingVersion: " + e, e);
    }
  }

  private static Object get(Field field, Object target) {
    require();
    try {
      return field.get(target);
    } catch (IllegalAccessException e) {
      throw new IllegalStateException("Cannot read RocksDB." + field.getName() + ": " + e, e);
    }
  }

  private static void require() {
    if (PROBLEM != null) {
      throw new IllegalStateException(PROBLEM);
    }
  }

  /**
   * The private field {@code name} of Spark's {@code RocksDB} class, made accessible, or null when
   * this Spark version has none of that type (a line's own writer reads more of them).
   */
  static Field field(String name, Class<?> type) {
    try {
      Field f = RocksDB.class.getDeclaredField(name);
      if (f.getType() != type) {
        return null;
      }
      f.setAccessible(true);
      return f;
    } catch (NoSuchFieldException | RuntimeException e) {
      return null;
    }
  }
}
