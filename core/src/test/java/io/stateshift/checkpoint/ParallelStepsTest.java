package io.stateshift.checkpoint;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.stream.IntStream;
import org.junit.jupiter.api.Test;

class ParallelStepsTest {
  private static final List<Integer> ITEMS = IntStream.range(0, 200).boxed().toList();

  @Test
  void everyItemRunsOnceOnSeveralThreads() {
    Set<Integer> seen = ConcurrentHashMap.newKeySet();
    Set<String> threads = ConcurrentHashMap.newKeySet();
    AtomicInteger runs = new AtomicInteger();
    CountDownLatch together = new CountDownLatch(2);
    ParallelSteps.run(
        ITEMS,
        4,
        "test",
        item -> {
          runs.incrementAndGet();
          seen.add(item);
          threads.add(Thread.currentThread().getName());
          if (item < 2) {
            // the first two items wait for each other: they can only both finish in parallel
            together.countDown();
            try {
              assertThat(together.await(10, TimeUnit.SECONDS)).isTrue();
            } catch (InterruptedException e) {
              throw new IllegalStateException(e);
            }
          }
        });
    assertThat(runs).hasValue(ITEMS.size());
    assertThat(seen).containsExactlyInAnyOrderElementsOf(ITEMS);
    assertThat(threads).hasSizeGreaterThan(1).allMatch(name -> name.startsWith("stateshift-test-"));
  }

  @Test
  void oneThreadRunsTheItemsInOrderOnTheCallersThread() {
    List<Integer> order = new java.util.ArrayList<>();
    ParallelSteps.run(
        ITEMS,
        1,
        "test",
        item -> {
          assertThat(Thread.currentThread().getName()).doesNotStartWith("stateshift-test-");
          order.add(item);
        });
    assertThat(order).isEqualTo(ITEMS);
  }

  @Test
  void theEarliestFailureIsRethrownAndNothingRunsAfterwards() {
    AtomicInteger running = new AtomicInteger();
    AtomicInteger started = new AtomicInteger();
    assertThatThrownBy(
            () ->
                ParallelSteps.run(
                    ITEMS,
                    8,
                    "test",
                    item -> {
                      running.incrementAndGet();
                      started.incrementAndGet();
                      try {
                        if (item == 40) {
                          Thread.sleep(100); // fails later in time than item 41
                          throw new IOException("item 40");
                        }
                        if (item == 41) {
                          throw new IllegalStateException("item 41");
                        }
                        Thread.sleep(5);
                      } catch (InterruptedException e) {
                        throw new IllegalStateException(e);
                      } finally {
                        running.decrementAndGet();
                      }
                    }))
        .isInstanceOf(UncheckedIOException.class)
        .hasMessageContaining("item 40");
    assertThat(running).as("steps still running after the call").hasValue(0);
    assertThat(started.get()).as("steps started after the failure").isLessThan(ITEMS.size());
  }
}
