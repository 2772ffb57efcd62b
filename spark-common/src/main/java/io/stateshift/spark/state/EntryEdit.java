package io.stateshift.spark.state;

import java.io.Serializable;
import org.apache.spark.sql.catalyst.expressions.UnsafeRow;

/**
 * What an edit does to each entry of one store as a read side meets it: leave it out where {@code
 * deletion} matches (null: never), rewrite its value with {@code transform} (null: keep it).
 */
record EntryEdit(StatePredicate deletion, StateValueTransform transform) implements Serializable {

  /** Whether the entry is left out. */
  boolean leavesOut(int partition, UnsafeRow key, UnsafeRow value) {
    return deletion != null && deletion.matches(partition, key, value);
  }

  /** The value the entry keeps (a row reused by the next call where it is rewritten). */
  UnsafeRow value(int partition, UnsafeRow key, UnsafeRow value) {
    return transform == null ? value : transform.apply(partition, key, value);
  }
}
