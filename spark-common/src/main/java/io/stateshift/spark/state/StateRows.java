package io.stateshift.spark.state;

import io.stateshift.StateShiftException;
import io.stateshift.StateShiftException.Reason;
import io.stateshift.checkpoint.StateCheckpointIds;
import io.stateshift.checkpoint.StateLayout;
import io.stateshift.checkpoint.StoreSpec;
import io.stateshift.spark.line.LineCalls;
import io.stateshift.spark.line.StateCalls;
import java.io.Serializable;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.NoSuchElementException;
import org.apache.spark.TaskContext;
import org.apache.spark.api.java.JavaRDD;
import org.apache.spark.api.java.JavaSparkContext;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.RowFactory;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.catalyst.CatalystTypeConverters;
import org.apache.spark.sql.execution.streaming.state.ReadStateStore;
import org.apache.spark.sql.execution.streaming.state.StateStoreConf;
import org.apache.spark.sql.execution.streaming.state.StateStoreIterator;
import org.apache.spark.sql.execution.streaming.state.StateStoreProvider;
import org.apache.spark.sql.execution.streaming.state.UnsafeRowPair;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.util.SerializableConfiguration;
import org.apache.spark.util.TaskCompletionListener;

/**
 * The entries of one store as a Dataset, read by one Spark task per partition at one state version:
 * {@code partition_id}, {@code key} and {@code value}, the names Spark's own state data source
 * uses, so a predicate written for one reads the same on the other.
 */
final class StateRows implements Serializable {
  static final String PARTITION = "partition_id";
  static final String KEY = "key";
  static final String VALUE = "value";

  private final String stateRoot;
  private final StateStoreConf storeConf;
  private final SerializableConfiguration hadoopConf;
  private final StoreSpec store;
  private final long version;
  private final StateCheckpointIds checkpointIds;

  private StateRows(StateLayout layout, StoreSpec store) {
    this.stateRoot = layout.checkpoint().files().path("state").toString();
    this.storeConf = StateStores.storeConf(layout.storeConf());
    this.hadoopConf = new SerializableConfiguration(layout.checkpoint().files().conf());
    this.store = store;
    this.version = layout.lastCommitted() + 1;
    this.checkpointIds = layout.checkpointIds();
  }

  /** The schema of a store's rows (see {@link ColumnFamilyRows} for a store with families). */
  static StructType schema(StoreSpec store) {
    if (store.hasColumnFamilies()) {
      return ColumnFamilyRows.schema(store, null);
    }
    return new StructType()
        .add(PARTITION, DataTypes.IntegerType, false)
        .add(KEY, store.keySchema(), false)
        .add(VALUE, store.valueSchema(), true);
  }

  /**
   * The store's entries at the layout's last committed batch; for a store with column families,
   * those of {@code columnFamily}, or all where it is null.
   */
  static Dataset<Row> read(
      SparkSession spark, StateLayout layout, StoreSpec store, String columnFamily) {
    if (store.hasColumnFamilies()) {
      return ColumnFamilyRows.read(spark, layout, store, columnFamily);
    }
    if (columnFamily != null) {
      throw new StateShiftException(
          Reason.INVALID_ARGUMENT,
          "Operator "
              + store.operatorId()
              + " ("
              + store.operatorName()
              + ") keeps its state in one store without column families; read it without"
              + " --column-family.");
    }
    spark.streams(); // creates the StateStoreCoordinator the RocksDB provider reports to
    List<Integer> partitions = new ArrayList<>();
    for (int p = 0; p < layout.partitions(); p++) {
      partitions.add(p);
    }
    StateRows rows = new StateRows(layout, store);
    JavaRDD<Row> rdd =
        JavaSparkContext.fromSparkContext(spark.sparkContext())
            .parallelize(partitions, Math.max(1, partitions.size()))
            .mapPartitions(rows::rowsOf);
    return spark.createDataFrame(rdd, schema(store));
  }

  /** The rows of the partitions of one task (one partition each). */
  private Iterator<Row> rowsOf(Iterator<Integer> partitions) {
    if (!partitions.hasNext()) {
      return java.util.Collections.emptyIterator();
    }
    int partition = partitions.next();
    StateStoreProvider provider =
        StateStores.open(stateRoot, store, partition, storeConf, hadoopConf.value());
    ReadStateStore readStore;
    try {
      readStore =
          StateStores.loadToRead(
              provider, version, StateStores.checkpointId(checkpointIds, store, partition));
    } catch (RuntimeException e) {
      provider.close();
      throw e;
    }
    StateStoreIterator<UnsafeRowPair> entries = LineCalls.rows(readStore);
    TaskContext.get()
        .addTaskCompletionListener(
            (TaskCompletionListener)
                context -> {
                  entries.close();
                  StateCalls.release(readStore);
                  provider.close();
                });
    scala.Function1<Object, Object> keyToRow =
        CatalystTypeConverters.createToScalaConverter(store.keySchema());
    scala.Function1<Object, Object> valueToRow =
        CatalystTypeConverters.createToScalaConverter(store.valueSchema());
    return new Iterator<>() {
      @Override
      public boolean hasNext() {
        return entries.hasNext();
      }

      @Override
      public Row next() {
        if (!hasNext()) {
          throw new NoSuchElementException();
        }
        UnsafeRowPair pair = entries.next(); // reused by the next call: converted at once
        return RowFactory.create(
            partition, keyToRow.apply(pair.key()), valueToRow.apply(pair.value()));
      }
    };
  }
}
