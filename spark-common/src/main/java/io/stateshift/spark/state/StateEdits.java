package io.stateshift.spark.state;

import io.stateshift.checkpoint.StoreSpec;
import java.io.Serializable;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.NoSuchElementException;
import java.util.Set;
import org.apache.spark.api.java.JavaRDD;
import org.apache.spark.api.java.JavaSparkContext;
import org.apache.spark.broadcast.Broadcast;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.catalyst.expressions.UnsafeRow;
import org.apache.spark.sql.execution.streaming.state.UnsafeRowPair;
import org.apache.spark.sql.types.StructType;

/**
 * What an edit or an evolution does to the entries of a state job's stores, by store slot: the
 * predicate of the entries it leaves out, the entries it adds (with their keys, which the read side
 * leaves out of the store's own), and the rewrite of each value into a new schema. A repartition or
 * a migration has none; {@link StateRedistributionJob} then moves every entry as it is.
 */
final class StateEdits implements Serializable {
  private Map<Integer, StatePredicate> deletions = Map.of();
  private Map<Integer, StateValueTransform> transforms = Map.of();
  private Map<Integer, Broadcast<Set<StateUpsert.KeyBytes>>> upsertedKeys = Map.of();

  /** The entries to add, on the driver only: the job unions them with what its tasks read. */
  private transient Map<Integer, JavaRDD<UnsafeRow[]>> upserts = Map.of();

  /** The stores as written, with their new value schema where an evolution changes it. */
  private List<StoreSpec> writeStores;

  void deleteWhere(SparkSession spark, List<StoreSpec> stores, Map<Integer, String> predicates) {
    Map<Integer, StatePredicate> compiled = new HashMap<>();
    predicates.forEach(
        (slot, text) ->
            compiled.put(
                slot,
                StatePredicate.compile(
                    spark, stores.get(slot), text, stores.get(slot).hasColumnFamilies())));
    deletions = Map.copyOf(compiled);
  }

  void upsert(SparkSession spark, List<StoreSpec> stores, Map<Integer, Dataset<Row>> rows) {
    Map<Integer, JavaRDD<UnsafeRow[]>> entries = new HashMap<>();
    Map<Integer, Broadcast<Set<StateUpsert.KeyBytes>>> keys = new HashMap<>();
    JavaSparkContext jsc = JavaSparkContext.fromSparkContext(spark.sparkContext());
    rows.forEach(
        (slot, data) -> {
          JavaRDD<UnsafeRow[]> converted =
              StateUpsert.entries(StateUpsert.checked(spark, stores.get(slot), data)).cache();
          entries.put(slot, converted);
          keys.put(slot, jsc.broadcast(StateUpsert.keys(converted)));
        });
    upserts = entries;
    upsertedKeys = keys;
  }

  void evolveValues(
      SparkSession spark,
      List<StoreSpec> stores,
      Map<Integer, StructType> valueSchemas,
      Map<String, String> fills) {
    Map<Integer, StateValueTransform> compiled = new HashMap<>();
    List<StoreSpec> written = new ArrayList<>(stores);
    valueSchemas.forEach(
        (slot, schema) -> {
          compiled.put(slot, StateValueTransform.compile(spark, stores.get(slot), schema, fills));
          written.set(slot, stores.get(slot).withValueSchema(schema));
        });
    transforms = Map.copyOf(compiled);
    writeStores = List.copyOf(written);
  }

  /** Whether there is anything to do to entries (an edit or an evolution). */
  boolean any() {
    return !deletions.isEmpty() || !transforms.isEmpty() || adds();
  }

  /** Whether entries are added (an upsert); on the driver. */
  boolean adds() {
    return upserts != null && !upserts.isEmpty();
  }

  /** The entries to add, by store slot; on the driver. */
  Map<Integer, JavaRDD<UnsafeRow[]>> upserts() {
    return upserts;
  }

  /** What happens to each entry of a store, for a read side of raw records; null: nothing. */
  EntryEdit entryEdit(int slot) {
    return deletions.containsKey(slot) || transforms.containsKey(slot)
        ? new EntryEdit(deletions.get(slot), transforms.get(slot))
        : null;
  }

  /** Whether the store's read side leaves entries out (and so counts them). */
  boolean leavesOut(int slot) {
    return deletions.containsKey(slot) || upsertedKeys.containsKey(slot);
  }

  /** The value an entry keeps (a row the next call may reuse where it is rewritten). */
  UnsafeRow value(int slot, int partition, UnsafeRow key, UnsafeRow value) {
    StateValueTransform transform = transforms.get(slot);
    return transform == null ? value : transform.apply(partition, key, value);
  }

  /** A store as its new partitions are written. */
  StoreSpec writeSpec(List<StoreSpec> stores, int slot) {
    return writeStores != null ? writeStores.get(slot) : stores.get(slot);
  }

  /** The entries of one partition of a store that the edit keeps; in a task. */
  Kept<UnsafeRowPair> kept(
      scala.collection.Iterator<UnsafeRowPair> entries, int slot, int partition) {
    StatePredicate deletion = deletions.get(slot);
    Broadcast<Set<StateUpsert.KeyBytes>> upserted = upsertedKeys.get(slot);
    Set<StateUpsert.KeyBytes> replaced = upserted == null ? null : upserted.value();
    return new Kept<>(
        ScalaBridge.javaIterator(entries),
        pair ->
            (deletion != null && deletion.matches(partition, pair.key(), pair.value()))
                || (replaced != null
                    && replaced.contains(new StateUpsert.KeyBytes(pair.key().getBytes()))));
  }

  /**
   * The entries of one partition of a store with column families that the edit keeps: those whose
   * grouping key the predicate does not match (every family of a key goes together); in a task.
   */
  Kept<ColumnFamilyStates.Entry> keptEntries(
      Iterator<ColumnFamilyStates.Entry> entries, int slot, int partition) {
    StatePredicate deletion = deletions.get(slot);
    return new Kept<>(
        entries,
        entry -> deletion != null && deletion.matches(partition, entry.groupingKey(), null));
  }

  /**
   * A store's entries without those an edit leaves out (all of them without one), counting those.
   * The store reuses its entry objects, so an entry is looked at only once the previous one is
   * used.
   */
  static final class Kept<T> implements Iterator<T> {
    private final Iterator<T> entries;
    private final java.util.function.Predicate<T> leftOutIf;
    private T next;
    private long leftOut;

    private Kept(Iterator<T> entries, java.util.function.Predicate<T> leftOutIf) {
      this.entries = entries;
      this.leftOutIf = leftOutIf;
    }

    /** Every entry of {@code entries}: a store the edit does not touch ({@link #leavesOut}). */
    static <T> Kept<T> all(Iterator<T> entries) {
      return new Kept<>(entries, entry -> false);
    }

    /** The entries left out so far. */
    long leftOut() {
      return leftOut;
    }

    @Override
    public boolean hasNext() {
      while (next == null && entries.hasNext()) {
        T entry = entries.next();
        if (leftOutIf.test(entry)) {
          leftOut++;
        } else {
          next = entry;
        }
      }
      return next != null;
    }

    @Override
    public T next() {
      if (!hasNext()) {
        throw new NoSuchElementException();
      }
      T entry = next;
      next = null;
      return entry;
    }
  }
}
