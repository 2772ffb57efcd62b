package io.stateshift.spark.state;

import io.stateshift.config.StateShiftConf;
import java.lang.reflect.Field;
import java.lang.reflect.Modifier;
import org.apache.spark.TaskContext;
import org.apache.spark.network.util.JavaUtils;
import org.apache.spark.util.TaskCompletionListener;

/**
 * Spark's recursive delete without a process per call, while stateshift's tasks run.
 *
 * <p>On Unix, Spark's {@code JavaUtils.deleteRecursively} forks {@code rm -rf} for every folder it
 * removes, and its RocksDB provider removes several per instance (the local working folder on load,
 * the checkpoint folder before each snapshot, everything on close): 234 processes in a 200k-row
 * join's repartition, after {@link ForklessLocalFileSystem} removed Hadoop's. Its Java path,
 * Spark's own fallback (and the only path on Windows), deletes the same files in-process and
 * likewise does not follow symbolic links. The choice hangs on one public flag, {@code
 * JavaUtils.isUnix}, which nothing else reads: it is off while at least one stateshift task runs in
 * this JVM and restored when the last one ends. Other work in the same JVM meanwhile deletes
 * through the Java path too, with the same result. {@value #CONF} = false keeps the processes. The
 * flag is reached by reflection: Spark 4.0 has none (its deletes have no switch), and there this
 * class does nothing.
 */
final class InProcessDeletes {
  /** Spark conf: {@code false} keeps Spark's {@code rm -rf} processes in stateshift's tasks. */
  static final String CONF = StateShiftConf.IN_PROCESS_DELETES.key();

  private static final Object LOCK = new Object();

  /** Spark's public static flag, or null where it is missing or final (4.0): processes stay. */
  private static final Field FLAG = flag();

  private static final boolean SWITCHABLE = FLAG != null;

  private static int tasksUsing;
  private static boolean flagBefore;

  private InProcessDeletes() {}

  private static Field flag() {
    try {
      Field field = JavaUtils.class.getField("isUnix");
      int modifiers = field.getModifiers();
      if (field.getType() != boolean.class
          || !Modifier.isStatic(modifiers)
          || Modifier.isFinal(modifiers)) {
        return null;
      }
      field.setBoolean(null, field.getBoolean(null));
      return field;
    } catch (ReflectiveOperationException | LinkageError | SecurityException e) {
      return null;
    }
  }

  private static boolean getFlag() {
    if (FLAG == null) {
      return false;
    }
    try {
      return FLAG.getBoolean(null);
    } catch (IllegalAccessException e) {
      throw new IllegalStateException(e);
    }
  }

  private static void setFlag(boolean value) {
    if (FLAG == null) {
      return;
    }
    try {
      FLAG.setBoolean(null, value);
    } catch (IllegalAccessException e) {
      throw new IllegalStateException(e);
    }
  }

  /** Deletes in-process from now until the current Spark task completes (failed ones too). */
  static void untilThisTaskEnds() {
    TaskContext task = TaskContext.get();
    if (task == null || !SWITCHABLE) {
      return; // not inside a task (nothing would release it), or nothing to switch
    }
    acquire();
    task.addTaskCompletionListener((TaskCompletionListener) context -> release());
  }

  static void acquire() {
    synchronized (LOCK) {
      if (tasksUsing++ == 0) {
        flagBefore = getFlag();
        setFlag(false);
      }
    }
  }

  static void release() {
    synchronized (LOCK) {
      if (tasksUsing == 0) {
        throw new IllegalStateException("release without acquire");
      }
      if (--tasksUsing == 0) {
        setFlag(flagBefore);
      }
    }
  }

  /** Whether this Spark has the flag (not 4.0), for tests. */
  static boolean switchable() {
    return SWITCHABLE;
  }

  /** Spark's {@code JavaUtils.isUnix} now, false where there is none (for tests). */
  static boolean flagValue() {
    return getFlag();
  }

  /** Whether stateshift's tasks hold the flag off right now (for tests). */
  static boolean active() {
    synchronized (LOCK) {
      return tasksUsing > 0;
    }
  }
}
