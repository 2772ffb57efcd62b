package io.stateshift.protocol;

/**
 * The local clock that lock and lease waits run on, replaceable so that tests do not sleep. Only
 * durations are taken from it: whether a lease has expired is judged by the store's own timestamps
 * (see {@link LeaseFiles#storeNow}), never by comparing two hosts' clocks.
 */
public interface LeaseClock {
  /** Milliseconds on a monotonic local clock. */
  long nowMs();

  void sleep(long ms) throws InterruptedException;

  LeaseClock SYSTEM =
      new LeaseClock() {
        @Override
        public long nowMs() {
          return System.nanoTime() / 1_000_000;
        }

        @Override
        public void sleep(long ms) throws InterruptedException {
          Thread.sleep(ms);
        }
      };
}
