package io.stateshift.spark.state;

import io.stateshift.checkpoint.Checkpoint;
import io.stateshift.checkpoint.CheckpointFiles;
import io.stateshift.checkpoint.StateLayout;
import io.stateshift.checkpoint.StatefulOperator;
import io.stateshift.checkpoint.StoreSpec;
import io.stateshift.spark.line.LineCalls;
import io.stateshift.spark.line.StateStoreIterator;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.stream.IntStream;
import org.apache.spark.api.java.JavaRDD;
import org.apache.spark.api.java.JavaSparkContext;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.RowFactory;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.catalyst.expressions.GenericInternalRow;
import org.apache.spark.sql.execution.streaming.state.ReadStateStore;
import org.apache.spark.sql.execution.streaming.state.StateStoreProvider;
import org.apache.spark.sql.execution.streaming.state.UnsafeRowPair;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.util.SerializableConfiguration;

/**
 * Spark 3.5 has no state data sources: the same columns as the other lines' Spark sources give
 * ({@code state-metadata}: operatorId, operatorName, stateStoreName, numPartitions; {@code
 * statestore}: partition_id, key, value), read with Spark's own state store providers, each
 * partition's store loaded at the version a batch committed. The suite's checks of where keys sit
 * stay Spark's own (its hash, computed in SQL).
 */
public final class StateSources {
  private StateSources() {}

  /** Spark 3.5 writes no operator metadata for the operators stateshift moves. */
  public static final boolean OPERATOR_METADATA = false;

  public static Dataset<Row> metadata(SparkSession spark, String checkpoint) {
    StateLayout layout = layout(spark, checkpoint);
    List<Row> rows = new ArrayList<>();
    for (StatefulOperator op : layout.operators()) {
      for (StatefulOperator.Store store : op.stores()) {
        rows.add(RowFactory.create(op.id(), op.name(), store.name(), layout.partitions()));
      }
    }
    StructType schema =
        new StructType()
            .add("operatorId", DataTypes.LongType)
            .add("operatorName", DataTypes.StringType)
            .add("stateStoreName", DataTypes.StringType)
            .add("numPartitions", DataTypes.IntegerType);
    return spark.createDataFrame(rows, schema);
  }

  public static Dataset<Row> state(
      SparkSession spark, String checkpoint, long batchId, long operatorId, String storeName) {
    StateLayout layout = layout(spark, checkpoint);
    StoreSpec spec =
        layout.stores().stream()
            .filter(s -> s.operatorId() == operatorId && s.storeName().equals(storeName))
            .findFirst()
            .orElseThrow(
                () -> new IllegalArgumentException("no store " + operatorId + "/" + storeName));
    String stateRoot = checkpoint + "/state";
    Map<String, String> storeConf = layout.storeConf();
    SerializableConfiguration hadoopConf =
        new SerializableConfiguration(spark.sessionState().newHadoopConf());
    long version = batchId + 1;
    List<Integer> partitions = IntStream.range(0, layout.partitions()).boxed().toList();
    JavaRDD<InternalRow> rows =
        JavaSparkContext.fromSparkContext(spark.sparkContext())
            .parallelize(partitions, partitions.size())
            .flatMap(
                partition -> {
                  StateStoreProvider provider =
                      StateStores.open(
                          stateRoot,
                          spec,
                          partition,
                          StateStores.storeConf(storeConf),
                          hadoopConf.value());
                  try {
                    ReadStateStore store =
                        StateStores.loadToRead(provider, version, scala.Option.empty());
                    List<InternalRow> out = new ArrayList<>();
                    StateStoreIterator<UnsafeRowPair> it = LineCalls.rows(store);
                    while (it.hasNext()) {
                      UnsafeRowPair pair = it.next();
                      out.add(
                          new GenericInternalRow(
                              new Object[] {partition, pair.key().copy(), pair.value().copy()}));
                    }
                    store.abort();
                    return out.iterator();
                  } finally {
                    provider.close();
                  }
                });
    StructType schema =
        new StructType()
            .add("partition_id", DataTypes.IntegerType)
            .add("key", spec.keySchema())
            .add("value", spec.valueSchema());
    return spark.internalCreateDataFrame(rows.rdd(), schema, false);
  }

  private static StateLayout layout(SparkSession spark, String checkpoint) {
    CheckpointFiles files = CheckpointFiles.at(checkpoint, spark.sessionState().newHadoopConf());
    return StateLayout.read(spark, Checkpoint.load(files), true);
  }
}
