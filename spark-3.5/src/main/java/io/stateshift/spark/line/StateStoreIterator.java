package io.stateshift.spark.line;

/**
 * Stands in for Spark 4's {@code StateStoreIterator} on 3.5, whose stores return plain Scala
 * iterators: the build renames Spark's class to this one in the shared sources
 * (spark-common/src/build/line-sources.xml, before-4.0).
 */
public final class StateStoreIterator<A> extends scala.collection.AbstractIterator<A> {
  private final scala.collection.Iterator<A> rows;
  private final Runnable onClose;

  public StateStoreIterator(scala.collection.Iterator<A> rows) {
    this(rows, () -> {});
  }

  /** Rows that hold a resource, released by {@code onClose}. */
  public StateStoreIterator(scala.collection.Iterator<A> rows, Runnable onClose) {
    this.rows = rows;
    this.onClose = onClose;
  }

  @Override
  public boolean hasNext() {
    return rows.hasNext();
  }

  @Override
  public A next() {
    return rows.next();
  }

  /** 3.5's store iterators hold nothing to release; a snapshot's native iterator does. */
  public void close() {
    onClose.run();
  }
}
