package io.stateshift.spark.state;

import org.apache.spark.TaskContext;
import org.apache.spark.util.TaskCompletionListener;
import org.rocksdb.Env;
import org.rocksdb.Priority;

/**
 * A thread per core in RocksDB's compaction pool while stateshift's write tasks compact, and the
 * pool's previous size once they end.
 *
 * <p>RocksDB runs every instance's compactions, manual ones included, on one process-wide pool (the
 * default {@code Env}'s low-priority threads), which it sizes from {@code max_background_jobs}: one
 * thread under Spark's settings. The write tasks compact many stores at once; with one thread those
 * compactions queue behind each other on one core while the other cores wait. The pool grows at the
 * first compaction of a task ({@link #forEveryCore}) and gets its previous size back when the last
 * stateshift task of this JVM ends (failed ones too), unless something else resized it meanwhile;
 * RocksDB lets surplus threads finish their work and exit.
 */
final class CompactionThreads {
  private static final Object LOCK = new Object();

  private static int tasksUsing;

  /** The pool's size before this scope grew it, or -1 while it has not. */
  private static int sizeBefore = -1;

  private static int grownTo;

  private CompactionThreads() {}

  /** Lets {@link #forEveryCore} grow the pool until the current Spark task completes. */
  static void untilThisTaskEnds() {
    TaskContext task = TaskContext.get();
    if (task == null) {
      return; // not inside a task: nothing would release it
    }
    acquire();
    task.addTaskCompletionListener((TaskCompletionListener) context -> release());
  }

  static void acquire() {
    synchronized (LOCK) {
      tasksUsing++;
    }
  }

  /** Gives the pool a thread per core if a stateshift task holds the scope; else nothing. */
  static void forEveryCore() {
    synchronized (LOCK) {
      if (tasksUsing == 0 || sizeBefore >= 0) {
        return;
      }
      Env env = Env.getDefault();
      sizeBefore = env.getBackgroundThreads(Priority.LOW);
      grownTo = Math.max(sizeBefore, Runtime.getRuntime().availableProcessors());
      if (grownTo > sizeBefore) {
        env.setBackgroundThreads(grownTo, Priority.LOW);
      }
    }
  }

  static void release() {
    synchronized (LOCK) {
      if (tasksUsing == 0) {
        throw new IllegalStateException("release without acquire");
      }
      if (--tasksUsing == 0 && sizeBefore >= 0) {
        Env env = Env.getDefault();
        if (env.getBackgroundThreads(Priority.LOW) == grownTo) {
          env.setBackgroundThreads(sizeBefore, Priority.LOW);
        }
        sizeBefore = -1;
      }
    }
  }
}
