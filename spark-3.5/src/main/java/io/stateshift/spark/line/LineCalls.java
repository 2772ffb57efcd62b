package io.stateshift.spark.line;

import io.stateshift.checkpoint.StoreSpec;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.util.List;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FSDataInputStream;
import org.apache.spark.sql.execution.streaming.state.ReadStateStore;
import org.apache.spark.sql.execution.streaming.state.RocksDBStateEncoder;
import org.apache.spark.sql.execution.streaming.state.RocksDBStateEncoder$;
import org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider$;
import org.apache.spark.sql.execution.streaming.state.SchemaHelper;
import org.apache.spark.sql.execution.streaming.state.StateStoreConf;
import org.apache.spark.sql.execution.streaming.state.StateStoreProvider;
import org.apache.spark.sql.execution.streaming.state.StateStoreProvider$;
import org.apache.spark.sql.execution.streaming.state.StateStoreProviderId;
import org.apache.spark.sql.execution.streaming.state.UnsafeRowPair;
import org.apache.spark.sql.types.StringType;
import org.apache.spark.sql.types.StructType;

/**
 * Spark 3.5's state store calls (spark-common's LineCalls on the 4.x lines): one column family per
 * store, a prefix-key column count instead of an encoder spec, no checkpoint ids (format v2), a
 * schema file of one key and one value schema, strings without collations.
 */
public final class LineCalls {
  private LineCalls() {}

  /** The name stateshift gives a store's one column family (3.5 has no column families). */
  public static final String DEFAULT_COLUMN_FAMILY = "default";

  /** A provider of the store, initialized. */
  public static StateStoreProvider createAndInit(
      StateStoreProviderId id,
      StoreSpec spec,
      boolean columnFamilies,
      StateStoreConf storeConf,
      Configuration hadoopConf) {
    if (columnFamilies) {
      // refused before it gets here: LineFeatures.TRANSFORM_WITH_STATE
      throw new IllegalStateException("Spark 3.5's state stores have no column families");
    }
    return StateStoreProvider$.MODULE$.createAndInit(
        id, spec.keySchema(), spec.valueSchema(), spec.numColsPrefixKey(), storeConf, hadoopConf);
  }

  /** Version {@code version} of the provider's partition, to read (3.5 has no checkpoint ids). */
  public static ReadStateStore readStore(
      StateStoreProvider provider, long version, scala.Option<String> checkpointId) {
    if (checkpointId.isDefined()) {
      throw new IllegalStateException("Spark 3.5 has no state checkpoint format v2");
    }
    return provider.getReadStore(version);
  }

  /** Every row of a store; the caller closes it. */
  public static StateStoreIterator<UnsafeRowPair> rows(ReadStateStore store) {
    return new StateStoreIterator<>(store.iterator());
  }

  /**
   * Whether the shuffle's read side opens a RocksDB version's own snapshot read-only ({@link
   * #snapshotRows}) rather than loading it with the provider: on 3.5, whose stores the file
   * exchanges cannot read, where its {@code RocksDB} has the private local folder the shared {@code
   * RocksDbTaskScope} reads ({@link StateCalls#localRootDir}).
   */
  public static final boolean SHUFFLE_READS_SNAPSHOTS = StateCalls.hasLocalRootDir();

  /**
   * Every row of {@code db}, a RocksDB version of the store {@code spec} opened read-only, decoded
   * by Spark 3.5's own encoder as the provider's iterator decodes them (each row valid until the
   * next); the caller closes it before the database.
   */
  public static StateStoreIterator<UnsafeRowPair> snapshotRows(
      org.rocksdb.RocksDB db, StoreSpec spec) {
    RocksDBStateEncoder encoder =
        RocksDBStateEncoder$.MODULE$.getEncoder(
            spec.keySchema(), spec.valueSchema(), spec.numColsPrefixKey());
    StoredEntries stored = new StoredEntries(db);
    UnsafeRowPair pair = new UnsafeRowPair(null, null);
    scala.collection.Iterator<UnsafeRowPair> rows =
        new scala.collection.AbstractIterator<>() {
          @Override
          public boolean hasNext() {
            return stored.hasNext();
          }

          @Override
          public UnsafeRowPair next() {
            StoredEntries entry = stored.next();
            return pair.withRows(encoder.decodeKey(entry.key), encoder.decodeValue(entry.value));
          }
        };
    return new StateStoreIterator<>(rows, stored::close);
  }

  /**
   * The byte Spark 3.5's encoder writes before each key and each value of the store {@code spec}
   * when both are stored as that byte and the UnsafeRow's own bytes (keys without a prefix), or -1
   * for another layout (the prefix keys of session windows): with it, a record for the write side
   * is made from the stored bytes as they are ({@link #snapshotRows} decodes them).
   */
  public static int plainRowVersion(StoreSpec spec) {
    return spec.numColsPrefixKey() == 0
            && RocksDBStateStoreProvider$.MODULE$.STATE_ENCODING_NUM_VERSION_BYTES() == 1
        ? RocksDBStateStoreProvider$.MODULE$.STATE_ENCODING_VERSION()
        : -1;
  }

  /**
   * The schema of a schema file Spark 3.5 wrote in a store's _metadata folder (its version, then
   * the key and value schemas), as the store's one column family.
   */
  public static List<StateStoreColFamilySchema> readSchemaFile(FSDataInputStream in) {
    try {
      scala.Tuple2<StructType, StructType> schemas =
          SchemaHelper.SchemaReader$.MODULE$.createSchemaReader(in.readUTF()).read(in);
      return List.of(
          new StateStoreColFamilySchema(DEFAULT_COLUMN_FAMILY, schemas._1(), schemas._2()));
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  /** Spark 3.5's strings have no collations: every one compares its bytes. */
  public static boolean binaryString(StringType type) {
    return true;
  }
}
