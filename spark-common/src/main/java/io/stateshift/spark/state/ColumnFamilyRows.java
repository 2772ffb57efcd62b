package io.stateshift.spark.state;

import io.stateshift.StateShiftException;
import io.stateshift.StateShiftException.Reason;
import io.stateshift.checkpoint.StateCheckpointIds;
import io.stateshift.checkpoint.StateLayout;
import io.stateshift.checkpoint.StoreSpec;
import java.io.Serializable;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.Locale;
import java.util.NoSuchElementException;
import org.apache.spark.TaskContext;
import org.apache.spark.api.java.JavaRDD;
import org.apache.spark.api.java.JavaSparkContext;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.RowFactory;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.catalyst.CatalystTypeConverters;
import org.apache.spark.sql.catalyst.expressions.UnsafeRow;
import org.apache.spark.sql.execution.streaming.state.StateStoreConf;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.util.SerializableConfiguration;
import org.apache.spark.util.TaskCompletionListener;

/**
 * The entries of a store with several column families as rows: a transformWithState store (each
 * state variable, its TTL indexes and the timers) or a join in state format 3 (its four stores).
 * Every row names its {@code variable}, its {@code column_family} (Spark's name) and its {@code
 * kind}, and carries the grouping key (a join's key) in {@code key}: the key an erase goes by, so
 * that a key loses its variables, timers and TTL entries together. The family's own key ({@code
 * entry_key}: a map key, a timer's expiry) and its value are typed where one column family is read,
 * and JSON text where all are, since their schemas differ.
 */
final class ColumnFamilyRows implements Serializable {
  static final String VARIABLE = "variable";
  static final String COLUMN_FAMILY = "column_family";
  static final String KIND = "kind";
  static final String ENTRY_KEY = "entry_key";

  private final String stateRoot;
  private final StateStoreConf storeConf;
  private final SerializableConfiguration hadoopConf;
  private final StoreSpec store;
  private final long version;
  private final int partitions;
  private final StateCheckpointIds checkpointIds;
  private final String columnFamily;

  private ColumnFamilyRows(StateLayout layout, StoreSpec store, String columnFamily) {
    this.stateRoot = layout.checkpoint().files().path("state").toString();
    this.storeConf = StateStores.storeConf(layout.storeConf());
    this.hadoopConf = new SerializableConfiguration(layout.checkpoint().files().conf());
    this.store = store;
    this.version = layout.lastCommitted() + 1;
    this.partitions = layout.partitions();
    this.checkpointIds = layout.checkpointIds();
    this.columnFamily = columnFamily;
  }

  /** The rows' schema; with {@code columnFamily}, that family's key and value typed. */
  static StructType schema(StoreSpec store, String columnFamily) {
    ColumnFamilySchema family = columnFamily == null ? null : family(store, columnFamily);
    DataType entryKey = family == null ? DataTypes.StringType : family.keySchema();
    DataType value = family == null ? DataTypes.StringType : family.valueSchema();
    return new StructType()
        .add(StateRows.PARTITION, DataTypes.IntegerType, false)
        .add(VARIABLE, DataTypes.StringType, false)
        .add(COLUMN_FAMILY, DataTypes.StringType, false)
        .add(KIND, DataTypes.StringType, false)
        .add(StateRows.KEY, groupingKeySchema(store), false)
        .add(ENTRY_KEY, entryKey, false)
        .add(StateRows.VALUE, value, true);
  }

  /** The grouping key inside every family's keys (the same in each: Spark hashes it alike). */
  static StructType groupingKeySchema(StoreSpec store) {
    ColumnFamilySchema first = ColumnFamilySchema.of(store).get(0);
    return new StateStores.KeyPlacement(store, first, 1).partitionKeySchema();
  }

  /** The store's entries at the layout's last committed batch; all families, or one. */
  static Dataset<Row> read(
      SparkSession spark, StateLayout layout, StoreSpec store, String columnFamily) {
    StructType schema = schema(store, columnFamily);
    spark.streams(); // creates the StateStoreCoordinator the RocksDB provider reports to
    List<Integer> ids = new ArrayList<>();
    for (int p = 0; p < layout.partitions(); p++) {
      ids.add(p);
    }
    ColumnFamilyRows rows = new ColumnFamilyRows(layout, store, columnFamily);
    JavaRDD<Row> rdd =
        JavaSparkContext.fromSparkContext(spark.sparkContext())
            .parallelize(ids, Math.max(1, ids.size()))
            .mapPartitions(rows::rowsOf);
    return spark.createDataFrame(rdd, schema);
  }

  /**
   * What a column family holds: {@code value}, {@code list} or {@code map} (a state variable),
   * {@code timer} (registered timers and their expiry-ordered index), {@code ttl} (a variable's
   * expiry indexes), {@code index} (Spark's other bookkeeping of a variable) or {@code join} (one
   * of a join's four stores).
   */
  static String kind(ColumnFamilySchema family) {
    String name = family.name();
    if (family.stateVariable() == null) {
      return "join";
    }
    if (name.startsWith("$procTimers") || name.startsWith("$eventTimers")) {
      return "timer";
    }
    if (name.startsWith("$ttl_") || name.startsWith("$min_")) {
      return "ttl";
    }
    if (family.internal()) {
      return "index";
    }
    String type = family.stateVariable().stateVariableType().toString();
    return type.endsWith("State")
        ? type.substring(0, type.length() - "State".length()).toLowerCase(Locale.ROOT)
        : type.toLowerCase(Locale.ROOT);
  }

  /** The state variable a family serves (a join store's name for a join). */
  static String variable(ColumnFamilySchema family) {
    return family.stateVariable() == null ? family.name() : family.stateVariable().stateName();
  }

  private static ColumnFamilySchema family(StoreSpec store, String name) {
    List<ColumnFamilySchema> families = ColumnFamilySchema.of(store);
    return families.stream()
        .filter(f -> f.name().equals(name))
        .findFirst()
        .orElseThrow(
            () ->
                new StateShiftException(
                    Reason.INVALID_ARGUMENT,
                    "Operator "
                        + store.operatorId()
                        + " has no column family '"
                        + name
                        + "'; its column families: "
                        + families.stream().map(ColumnFamilySchema::name).toList()
                        + "."));
  }

  /** The rows of one partition (one per task). */
  private Iterator<Row> rowsOf(Iterator<Integer> task) {
    if (!task.hasNext()) {
      return java.util.Collections.emptyIterator();
    }
    int partition = task.next();
    ColumnFamilyStates.Reader reader =
        new ColumnFamilyStates.Reader(
            stateRoot,
            store,
            partition,
            version,
            StateStores.checkpointId(checkpointIds, store, partition),
            storeConf,
            hadoopConf.value());
    TaskContext.get().addTaskCompletionListener((TaskCompletionListener) context -> reader.close());
    Iterator<ColumnFamilyStates.Entry> entries = reader.entries(store, partitions);
    List<ColumnFamilySchema> families = ColumnFamilySchema.of(store);
    List<Converters> converters = families.stream().map(Converters::new).toList();
    scala.Function1<Object, Object> groupingKey =
        CatalystTypeConverters.createToScalaConverter(groupingKeySchema(store));
    return new Iterator<>() {
      ColumnFamilyStates.Entry next;

      @Override
      public boolean hasNext() {
        while (next == null && entries.hasNext()) {
          ColumnFamilyStates.Entry entry = entries.next();
          if (columnFamily == null || families.get(entry.family()).name().equals(columnFamily)) {
            next = entry;
          }
        }
        return next != null;
      }

      @Override
      public Row next() {
        if (!hasNext()) {
          throw new NoSuchElementException();
        }
        ColumnFamilyStates.Entry entry = next; // its rows are reused: converted at once
        next = null;
        ColumnFamilySchema family = families.get(entry.family());
        Converters convert = converters.get(entry.family());
        return RowFactory.create(
            partition,
            variable(family),
            family.name(),
            kind(family),
            groupingKey.apply(entry.groupingKey()),
            convert.shown(convert.key, entry.key()),
            convert.shown(convert.value, entry.value()));
      }
    };
  }

  /** One family's rows to Rows, typed where that family alone is read, else as JSON text. */
  private final class Converters {
    final scala.Function1<Object, Object> key;
    final scala.Function1<Object, Object> value;

    Converters(ColumnFamilySchema family) {
      this.key = CatalystTypeConverters.createToScalaConverter(family.keySchema());
      this.value = CatalystTypeConverters.createToScalaConverter(family.valueSchema());
    }

    Object shown(scala.Function1<Object, Object> converter, UnsafeRow row) {
      if (row == null) {
        return null;
      }
      Row converted = (Row) converter.apply(row);
      return columnFamily != null ? converted : converted.json();
    }
  }
}
