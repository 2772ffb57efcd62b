package io.stateshift.spark.state;

import static org.assertj.core.api.Assertions.assertThat;

import io.stateshift.checkpoint.Checkpoint;
import io.stateshift.checkpoint.CheckpointFiles;
import io.stateshift.checkpoint.StateLayout;
import io.stateshift.checkpoint.StoreSpec;
import io.stateshift.spark.line.LineCalls;
import io.stateshift.spark.line.StateStoreIterator;
import io.stateshift.testing.SparkTestSession;
import io.stateshift.testing.StateStores;
import io.stateshift.testing.StatefulQueries;
import io.stateshift.testing.StreamRun;
import java.nio.file.Path;
import java.util.HexFormat;
import java.util.Map;
import java.util.TreeMap;
import org.apache.hadoop.conf.Configuration;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.catalyst.expressions.UnsafeRow;
import org.apache.spark.sql.execution.streaming.state.ReadStateStore;
import org.apache.spark.sql.execution.streaming.state.StateStoreConf;
import org.apache.spark.sql.execution.streaming.state.StateStoreId;
import org.apache.spark.sql.execution.streaming.state.StateStoreProvider;
import org.apache.spark.sql.execution.streaming.state.UnsafeRowPair;
import org.apache.spark.unsafe.Platform;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Spark 3.5's read side opens a RocksDB version's own snapshot read-only with the shared {@link
 * RocksDbSnapshotReader} and 3.5's calls: it holds every row Spark's provider loads for the same
 * version, decoded by 3.5's encoder, and a version without a snapshot of its own is left to the
 * provider. A repartition names the path in its history.
 */
class RocksDbSnapshotReadTest {
  @TempDir Path tmp;

  @Tag("cover")
  @Test
  void aSnapshotOpenedReadOnlyHoldsWhatTheProviderLoads() {
    SparkSession spark = SparkTestSession.get();
    spark.streams(); // the state store coordinator
    StreamRun run = new StreamRun(spark, tmp.resolve("input"));
    for (int batch = 0; batch < 2; batch++) {
      run.writeEvents(batch, 2_000, 40);
    }
    Path checkpoint = tmp.resolve("checkpoint");
    run.runAvailable(
        StatefulQueries.WINDOWED_COUNT,
        checkpoint,
        tmp.resolve("sink"),
        StateStores.ROCKSDB.withPartitions(2));
    StateLayout layout =
        StateLayout.read(
            spark,
            Checkpoint.load(
                CheckpointFiles.at(checkpoint.toString(), spark.sessionState().newHadoopConf())),
            true);
    StoreSpec spec = layout.stores().get(0);
    StateStoreConf storeConf = io.stateshift.spark.state.StateStores.storeConf(layout.storeConf());
    Configuration hadoopConf = layout.checkpoint().files().conf();
    String liveRoot = layout.checkpoint().files().path("state").toString();
    long version = layout.lastCommitted() + 1;

    assertThat(LineCalls.SHUFFLE_READS_SNAPSHOTS).isTrue();
    assertThat(RocksDbSnapshotReader.ENABLED).isTrue();
    for (int partition = 0; partition < 2; partition++) {
      Map<String, String> ours;
      try (RocksDbTaskScope scope = RocksDbTaskScope.open(liveRoot, spec, storeConf, hadoopConf)) {
        assertThat(scope).isNotNull();
        StateStoreId store =
            new StateStoreId(liveRoot, spec.operatorId(), partition, spec.storeName());
        try (RocksDbSnapshotReader snapshot =
            RocksDbSnapshotReader.open(
                scope,
                store,
                version,
                scala.Option.empty(),
                hadoopConf,
                new TaskTimer("test"),
                null)) {
          assertThat(snapshot).as("a version with its own zip is read directly").isNotNull();
          StateStoreIterator<UnsafeRowPair> rows = LineCalls.snapshotRows(snapshot.db(), spec);
          try {
            ours = hex(rows);
          } finally {
            rows.close();
          }
          // the stored bytes are those Spark's encoder writes for the rows they decode to: the
          // shuffle's records of a store no edit touches are made from them as they are
          assertThat(LineCalls.plainRowVersion(spec)).isZero();
          RocksDbEncoding encoding = new RocksDbEncoding(spec);
          int stored = 0;
          try (org.rocksdb.RocksIterator it = snapshot.db().newIterator()) {
            for (it.seekToFirst(); it.isValid(); it.next()) {
              byte[] key = it.key();
              byte[] value = it.value();
              UnsafeRow keyRow = new UnsafeRow(spec.keySchema().length());
              keyRow.pointTo(key, Platform.BYTE_ARRAY_OFFSET + 1, key.length - 1);
              UnsafeRow valueRow = new UnsafeRow(spec.valueSchema().length());
              valueRow.pointTo(value, Platform.BYTE_ARRAY_OFFSET + 1, value.length - 1);
              assertThat(StateRecords.packStored(7, key, value, (byte) 0))
                  .isEqualTo(encoding.record(7, keyRow, valueRow));
              stored++;
            }
          }
          assertThat(stored).isEqualTo(ours.size());
        }
        assertThat(
                RocksDbSnapshotReader.open(
                    scope,
                    store,
                    version + 1,
                    scala.Option.empty(),
                    hadoopConf,
                    new TaskTimer("test"),
                    null))
            .as("no snapshot of that version: the provider's")
            .isNull();
      }
      StateStoreProvider provider =
          io.stateshift.spark.state.StateStores.open(
              liveRoot, spec, partition, storeConf, hadoopConf);
      try {
        ReadStateStore store = provider.getReadStore(version);
        try {
          assertThat(ours).isNotEmpty().isEqualTo(hex(LineCalls.rows(store)));
        } finally {
          store.abort();
        }
      } finally {
        provider.close();
      }
    }
  }

  private static Map<String, String> hex(StateStoreIterator<UnsafeRowPair> rows) {
    Map<String, String> entries = new TreeMap<>();
    HexFormat hex = HexFormat.of();
    while (rows.hasNext()) {
      UnsafeRowPair pair = rows.next();
      entries.put(hex.formatHex(pair.key().getBytes()), hex.formatHex(pair.value().getBytes()));
    }
    return entries;
  }
}
