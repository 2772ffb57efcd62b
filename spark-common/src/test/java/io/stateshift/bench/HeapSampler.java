package io.stateshift.bench;

import com.sun.management.GarbageCollectionNotificationInfo;
import java.lang.management.GarbageCollectorMXBean;
import java.lang.management.ManagementFactory;
import java.lang.management.MemoryPoolMXBean;
import java.lang.management.MemoryType;
import java.lang.management.MemoryUsage;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.atomic.AtomicLong;
import java.util.stream.Collectors;
import javax.management.Notification;
import javax.management.NotificationEmitter;
import javax.management.NotificationListener;
import javax.management.openmbean.CompositeData;

/**
 * Peak Java heap during one timing: a background thread samples the used heap every 10 ms, and GC
 * notifications add the heap just before each collection (a local maximum the sampler can miss) and
 * just after it (the live data: the most telling number, since used heap includes garbage).
 * RocksDB's native memory is not heap and is not counted.
 */
final class HeapSampler implements AutoCloseable {
  private final AtomicLong peakUsed = new AtomicLong();
  private final AtomicLong peakAfterGc = new AtomicLong();
  private final long baseline;
  private final Thread thread;
  private final List<NotificationEmitter> emitters = new ArrayList<>();
  private final NotificationListener listener;
  private final Set<String> heapPools;
  private volatile boolean running = true;

  private HeapSampler() {
    heapPools =
        ManagementFactory.getMemoryPoolMXBeans().stream()
            .filter(p -> p.getType() == MemoryType.HEAP)
            .map(MemoryPoolMXBean::getName)
            .collect(Collectors.toSet());
    baseline = used();
    peakUsed.set(baseline);
    peakAfterGc.set(baseline); // taken right after System.gc(): the live heap at the start
    listener = this::onGc;
    for (GarbageCollectorMXBean gc : ManagementFactory.getGarbageCollectorMXBeans()) {
      if (gc instanceof NotificationEmitter emitter) {
        emitter.addNotificationListener(listener, null, null);
        emitters.add(emitter);
      }
    }
    thread =
        new Thread(
            () -> {
              while (running) {
                peakUsed.accumulateAndGet(used(), Math::max);
                try {
                  Thread.sleep(10);
                } catch (InterruptedException e) {
                  return;
                }
              }
            },
            "bench-heap-sampler");
    thread.setDaemon(true);
    thread.start();
  }

  /** Starts sampling; call {@link System#gc()} first for a comparable baseline. */
  static HeapSampler start() {
    return new HeapSampler();
  }

  private static long used() {
    return ManagementFactory.getMemoryMXBean().getHeapMemoryUsage().getUsed();
  }

  private void onGc(Notification notification, Object handback) {
    if (!GarbageCollectionNotificationInfo.GARBAGE_COLLECTION_NOTIFICATION.equals(
        notification.getType())) {
      return;
    }
    GarbageCollectionNotificationInfo info =
        GarbageCollectionNotificationInfo.from((CompositeData) notification.getUserData());
    peakUsed.accumulateAndGet(heapOf(info.getGcInfo().getMemoryUsageBeforeGc()), Math::max);
    peakAfterGc.accumulateAndGet(heapOf(info.getGcInfo().getMemoryUsageAfterGc()), Math::max);
  }

  private long heapOf(Map<String, MemoryUsage> pools) {
    long sum = 0;
    for (Map.Entry<String, MemoryUsage> e : pools.entrySet()) {
      if (heapPools.contains(e.getKey())) {
        sum += e.getValue().getUsed();
      }
    }
    return sum;
  }

  long baselineBytes() {
    return baseline;
  }

  /** Highest used heap seen, garbage included. */
  long peakBytes() {
    return peakUsed.get();
  }

  /** Highest heap left after a collection during the timing (or at its start). */
  long peakAfterGcBytes() {
    return peakAfterGc.get();
  }

  @Override
  public void close() {
    running = false;
    thread.interrupt();
    try {
      thread.join(1000);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
    peakUsed.accumulateAndGet(used(), Math::max);
    for (NotificationEmitter emitter : emitters) {
      try {
        emitter.removeNotificationListener(listener);
      } catch (javax.management.ListenerNotFoundException ignored) {
        // already gone
      }
    }
  }
}
