package io.stateshift.checkpoint;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CancellationException;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * Runs independent file steps on a few driver threads: the validation's listing of each partition
 * folder, the switch's and the tidying's moves.
 *
 * <p>On an object store each listing, rename or folder move is one or several round trips, so a
 * phase that makes hundreds of them one after another spends its time waiting. The steps of one
 * call may run in any order (protocol steps are idempotent, so they may also be repeated after a
 * crash); what must come before what (RocksDB's SST files before the version files that name them)
 * is the caller's barrier: one call per group. A failed step stops the steps not yet started and
 * waits for the ones running; the failure of the earliest item in the list is rethrown, so the
 * error a caller sees does not depend on timing. When this returns or throws, no step of the call
 * is still running.
 */
public final class ParallelSteps {
  /** One step on one item. */
  public interface Step<T> {
    void run(T item) throws IOException;
  }

  private ParallelSteps() {}

  /** Runs {@code step} on every item, on up to {@code threads} threads named after {@code name}. */
  public static <T> void run(List<T> items, int threads, String name, Step<T> step) {
    if (threads <= 1 || items.size() <= 1) {
      for (T item : items) {
        runOne(step, item);
      }
      return;
    }
    AtomicInteger count = new AtomicInteger();
    ExecutorService pool =
        Executors.newFixedThreadPool(
            Math.min(threads, items.size()),
            r -> {
              Thread t = new Thread(r, "stateshift-" + name + "-" + count.incrementAndGet());
              t.setDaemon(true);
              return t;
            });
    try {
      AtomicBoolean failed = new AtomicBoolean();
      List<Future<?>> running = new ArrayList<>();
      for (T item : items) {
        running.add(
            pool.submit(
                () -> {
                  if (failed.get()) {
                    return; // another step failed: start no more
                  }
                  try {
                    runOne(step, item);
                  } catch (RuntimeException | Error e) {
                    failed.set(true);
                    throw e;
                  }
                }));
      }
      Throwable failure = null;
      for (Future<?> f : running) {
        try {
          f.get();
        } catch (ExecutionException e) {
          if (failure == null) {
            failure = e.getCause();
            running.forEach(other -> other.cancel(false));
          }
        } catch (CancellationException e) {
          // stopped before it started, after another step failed
        } catch (InterruptedException e) {
          Thread.currentThread().interrupt();
          running.forEach(other -> other.cancel(false));
          failure = failure != null ? failure : e;
        }
      }
      if (failure instanceof RuntimeException r) {
        throw r;
      }
      if (failure instanceof Error err) {
        throw err;
      }
      if (failure != null) {
        throw new IllegalStateException(failure);
      }
    } finally {
      pool.shutdownNow();
    }
  }

  private static <T> void runOne(Step<T> step, T item) {
    try {
      step.run(item);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }
}
