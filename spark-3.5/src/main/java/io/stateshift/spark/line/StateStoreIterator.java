package io.stateshift.spark.line;

/**
 * Stands in for Spark 4's {@code StateStoreIterator} on 3.5, whose stores return plain Scala
 * iterators: the build renames Spark's class to this one in the shared sources
 * (spark-common/src/build/line-sources.xml, before-4.0).
 */
public final class StateStoreIterator<A> extends scala.collection.AbstractIterator<A> {
  private final scala.collection.Iterator<A> rows;

  public StateStoreIterator(scala.collection.Iterator<A> rows) {
    this.rows = rows;
  }

  @Override
  public boolean hasNext() {
    return rows.hasNext();
  }

  @Override
  public A next() {
    return rows.next();
  }

  /** 3.5's iterators hold nothing to release. */
  public void close() {}
}
