package io.stateshift.spark.state;

import java.io.Serializable;
import org.apache.spark.sql.catalyst.expressions.UnsafeRow;

/**
 * What an edit does to each entry of one store as a read side meets it: leave it out where {@code
 * deletion} matches (null: never), rewrite its value with {@code transform} (null: keep it).
 */
record EntryEdit(StatePredicate deletion, StateValueTransform transform) implements Serializable {

  /**
   * The same edit with a predicate and a rewrite of its own: each keeps its compiled code and its
   * input row per instance, and a task's threads split several partitions of one store at once, so
   * a split takes its own copy.
   */
  EntryEdit own() {
    return new EntryEdit(
        deletion == null ? null : deletion.copy(), transform == null ? null : transform.copy());
  }

  /** Whether the entry is left out. */
  boolean leavesOut(int partition, UnsafeRow key, UnsafeRow value) {
    return deletion != null && deletion.matches(partition, key, value);
  }

  /** The value the entry keeps (a row reused by the next call where it is rewritten). */
  UnsafeRow value(int partition, UnsafeRow key, UnsafeRow value) {
    return transform == null ? value : transform.apply(partition, key, value);
  }
}
