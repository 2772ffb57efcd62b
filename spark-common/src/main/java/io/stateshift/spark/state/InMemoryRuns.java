package io.stateshift.spark.state;

import java.nio.ByteBuffer;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;

/**
 * What the file exchanges stage (the RocksDB exchange's sorted runs, the HDFS-backed exchange's
 * record streams), kept in memory for the write stage where the read and the write tasks share one
 * JVM (local mode): staged files exist so that tasks on other machines find the data, and a file
 * written and read back once costs the kernel a new page per 4 KB written and a copy each way,
 * about a quarter of the RocksDB exchange's CPU on a local disk; the HDFS-backed exchange writes a
 * small file per old and new partition (12,800 at 200 -> 64).
 *
 * <p>The driver opens an exchange with a budget ({@link #open}); a read task in the same JVM puts
 * what it would append to its staged file into a buffer of its own here until the budget is spent
 * ({@link #reserve}), then writes files as before. The buffers are direct: outside the heap, so the
 * garbage collector never copies the runs between the two stages. A JVM with no such exchange (an
 * executor of a cluster) always writes files. The buffers go when the driver closes the exchange,
 * after the write stage or its failure; nothing of them is on disk, so an interrupted attempt
 * leaves nothing to clean up.
 */
final class InMemoryRuns {
  private static final String PREFIX = "memory:";

  private static final Map<String, Exchange> OPEN = new ConcurrentHashMap<>();

  private InMemoryRuns() {}

  /** A buffer reserved for runs, and the staged path that names it. */
  record Kept(String path, ByteBuffer buffer) {}

  private static final class Exchange {
    private final long budget;
    private final AtomicLong used = new AtomicLong();
    private final AtomicLong next = new AtomicLong();
    private final Map<String, ByteBuffer> buffers = new ConcurrentHashMap<>();

    Exchange(long budget) {
      this.budget = budget;
    }
  }

  /** Lets this JVM's tasks keep up to {@code budgetBytes} of runs of {@code exchangeDir}. */
  static void open(String exchangeDir, long budgetBytes) {
    if (budgetBytes > 0) {
      OPEN.put(exchangeDir, new Exchange(budgetBytes));
    }
  }

  /** Whether {@code exchangeDir} is open in this JVM: its tasks may keep runs here. */
  static boolean isOpen(String exchangeDir) {
    return OPEN.containsKey(exchangeDir);
  }

  /** Drops the buffers of {@code exchangeDir}. */
  static void close(String exchangeDir) {
    OPEN.remove(exchangeDir);
  }

  /**
   * A new buffer of {@code bytes} for runs of {@code exchangeDir}, or null when that exchange is
   * not open in this JVM or the buffer would exceed its budget.
   */
  static Kept reserve(String exchangeDir, long bytes) {
    Exchange exchange = OPEN.get(exchangeDir);
    if (exchange == null || bytes > Integer.MAX_VALUE) {
      return null;
    }
    if (exchange.used.addAndGet(bytes) > exchange.budget) {
      exchange.used.addAndGet(-bytes);
      return null;
    }
    ByteBuffer buffer;
    try {
      buffer = ByteBuffer.allocateDirect((int) bytes);
    } catch (OutOfMemoryError e) {
      exchange.used.addAndGet(-bytes); // direct memory spent elsewhere: a file then
      return null;
    }
    String path = PREFIX + exchangeDir + "#" + exchange.next.incrementAndGet();
    exchange.buffers.put(path, buffer);
    return new Kept(path, buffer);
  }

  /** Whether {@code path} names runs kept in memory rather than a staged file. */
  static boolean isMemoryPath(String path) {
    return path.startsWith(PREFIX);
  }

  /**
   * The buffer {@code path} names ({@link #isMemoryPath}), read-only, positioned at its start;
   * fails when it is gone.
   */
  static ByteBuffer find(String path) {
    int hash = path.lastIndexOf('#');
    Exchange exchange = hash < 0 ? null : OPEN.get(path.substring(PREFIX.length(), hash));
    ByteBuffer buffer = exchange == null ? null : exchange.buffers.get(path);
    if (buffer == null) {
      throw new IllegalStateException(
          "The staged runs "
              + path
              + " are not in this JVM's memory (a write task ran in another JVM than its read"
              + " task); the attempt is abandoned");
    }
    return buffer.asReadOnlyBuffer().clear(); // the whole buffer, whatever its writer's position
  }
}
