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

  /**
   * The entries of one partition of a store with column families that the edit keeps: those whose
   * grouping key the predicate does not match (every family of a key goes together); in a task.
   */
  KeptEntries keptEntries(Iterator<ColumnFamilyStates.Entry> entries, int slot, int partition) {
    return new KeptEntries(entries, deletions.get(slot), partition);
  }

  /** See {@link #keptEntries}; counts the entries it leaves out. */
  static final class KeptEntries implements Iterator<ColumnFamilyStates.Entry> {
    private final Iterator<ColumnFamilyStates.Entry> entries;
    private final StatePredicate deletion;
    private final int partition;
    private ColumnFamilyStates.Entry next;
    private long leftOut;

    private KeptEntries(
        Iterator<ColumnFamilyStates.Entry> entries, StatePredicate deletion, int partition) {
      this.entries = entries;
      this.deletion = deletion;
      this.partition = partition;
    }

    long leftOut() {
      return leftOut;
    }

    @Override
    public boolean hasNext() {
      while (next == null && entries.hasNext()) {
        ColumnFamilyStates.Entry entry = entries.next();
        if (deletion != null && deletion.matches(partition, entry.groupingKey(), null)) {
          leftOut++;
        } else {
          next = entry;
        }
      }
      return next != null;
    }

    @Override
    public ColumnFamilyStates.Entry next() {
      if (!hasNext()) {
        throw new NoSuchElementException();
      }
      ColumnFamilyStates.Entry entry = next;
      next = null;
      return entry;
    }
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
  Kept kept(scala.collection.Iterator<UnsafeRowPair> entries, int slot, int partition) {
    Broadcast<Set<StateUpsert.KeyBytes>> replaced = upsertedKeys.get(slot);
    return new Kept(
        entries, deletions.get(slot), replaced == null ? null : replaced.value(), partition);
  }

  /**
   * A store's entries without those an edit leaves out (all of them without one), counting those.
   * The store reuses its pair object, so an entry is looked at only once the previous one is used.
   */
  static final class Kept implements Iterator<UnsafeRowPair> {
    private final scala.collection.Iterator<UnsafeRowPair> entries;
    private final StatePredicate deletion;
    private final Set<StateUpsert.KeyBytes> replaced;
    private final int partition;
    private UnsafeRowPair next;
    private long leftOut;

    private Kept(
        scala.collection.Iterator<UnsafeRowPair> entries,
        StatePredicate deletion,
        Set<StateUpsert.KeyBytes> replaced,
        int partition) {
      this.entries = entries;
      this.deletion = deletion;
      this.replaced = replaced;
      this.partition = partition;
    }

    /** The entries left out so far. */
    long leftOut() {
      return leftOut;
    }

    @Override
    public boolean hasNext() {
      while (next == null && entries.hasNext()) {
        UnsafeRowPair pair = entries.next();
        if ((deletion != null && deletion.matches(partition, pair.key(), pair.value()))
            || (replaced != null
                && replaced.contains(new StateUpsert.KeyBytes(pair.key().getBytes())))) {
          leftOut++;
        } else {
          next = pair;
        }
      }
      return next != null;
    }

    @Override
    public UnsafeRowPair next() {
      if (!hasNext()) {
        throw new NoSuchElementException();
      }
      UnsafeRowPair pair = next;
      next = null;
      return pair;
    }
  }
}
