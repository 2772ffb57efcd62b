package io.stateshift.spark.state;

import com.fasterxml.jackson.databind.node.ObjectNode;
import io.stateshift.StateShiftException;
import io.stateshift.StateShiftException.Reason;
import io.stateshift.checkpoint.Checkpoint;
import io.stateshift.checkpoint.CheckpointFiles;
import io.stateshift.checkpoint.StateLayout;
import io.stateshift.checkpoint.StatefulOperator;
import io.stateshift.checkpoint.StoreSpec;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.Set;
import org.apache.hadoop.fs.Path;
import org.apache.spark.sql.execution.streaming.state.StateStoreColFamilySchema;

/**
 * The layout of a stream-stream join in state format 3 (Spark 4.2, RocksDB only): one store ({@code
 * default}) per partition whose four column families are the four stores of formats 1 and 2 ({@code
 * left-keyToNumValues}, {@code left-keyWithIndexToValue} and the same for the right side). Their
 * schemas and key encoders come from the state schema v3 file that the operator metadata v2 names
 * ({@code state/<op>/_stateSchema/default/<batch>_<uuid>}); the store is moved like a
 * transformWithState store, each key placed by its join key.
 */
final class JoinStateFormat3Layout {
  static final int FORMAT = 3;
  private static final Set<String> FAMILIES =
      Set.of(
          "left-keyToNumValues",
          "left-keyWithIndexToValue",
          "right-keyToNumValues",
          "right-keyWithIndexToValue");

  private JoinStateFormat3Layout() {}

  static StoreSpec storeSpec(
      Checkpoint checkpoint,
      StatefulOperator op,
      StatefulOperator.Store store,
      int slot,
      String provider) {
    CheckpointFiles files = checkpoint.files();
    if (!provider.equals(StateLayout.ROCKSDB_PROVIDER)) { // Spark refuses format 3 elsewhere
      throw Checkpoint.corrupt(
          files,
          "operator "
              + op.id()
              + " (stream-stream join) uses join "
              + "state format 3, which keeps its state in RocksDB column families, but the offset "
              + "log names "
              + provider,
          Checkpoint.RESTORE);
    }
    Optional<Path> metadataPath = checkpoint.latestV2Metadata(op.id());
    if (metadataPath.isEmpty()) {
      throw Checkpoint.corrupt(
          files,
          "operator "
              + op.id()
              + " (stream-stream join, state "
              + "format 3) has no operator metadata v2 (state/"
              + op.id()
              + "/_metadata/v2/), which "
              + "names its state schema",
          Checkpoint.RESTORE);
    }
    ObjectNode metadata = checkpoint.readMetadataJson(metadataPath.get());
    Path schemaFile;
    try {
      schemaFile = TransformWithStateLayout.schemaFile(files, op, store, metadata);
    } catch (StateShiftException e) {
      throw e;
    } catch (RuntimeException e) {
      throw Checkpoint.corrupt(
          files,
          files.relativize(metadataPath.get())
              + " does not name the "
              + "state schema of operator "
              + op.id()
              + " ("
              + e.getMessage()
              + ")",
          Checkpoint.RESTORE);
    }
    List<StateStoreColFamilySchema> schemas =
        TransformWithStateLayout.readColumnFamilySchemas(files, op, schemaFile);
    List<ColumnFamilySchema> families = new ArrayList<>();
    for (StateStoreColFamilySchema schema : schemas) {
      String name = schema.colFamilyName();
      if (name.equals(StateStores.DEFAULT_COLUMN_FAMILY)) {
        continue; // the join keeps nothing there
      }
      if (!FAMILIES.contains(name) || schema.keyStateEncoderSpec().isEmpty()) {
        throw Checkpoint.corrupt(
            files,
            "the state schema "
                + files.relativize(schemaFile)
                + " of join operator "
                + op.id()
                + " lists column family "
                + name
                + (FAMILIES.contains(name) ? " without a key encoder" : ", which is no join store"),
            Checkpoint.RESTORE);
      }
      families.add(
          new ColumnFamilySchema(
              name,
              schema.keySchema(),
              schema.valueSchema(),
              schema.keyStateEncoderSpec().get(),
              false,
              false,
              null));
    }
    if (families.size() != FAMILIES.size()) {
      throw Checkpoint.corrupt(
          files,
          "the state schema "
              + files.relativize(schemaFile)
              + " of join operator "
              + op.id()
              + " lists "
              + families.size()
              + " of the four join "
              + "column families "
              + FAMILIES,
          Checkpoint.RESTORE);
    }
    // the provider's default family is a placeholder (Spark opens it with a dummy schema)
    ColumnFamilySchema placeholder = families.get(0);
    return new StoreSpec(
        slot,
        op.id(),
        op.name(),
        store.name(),
        0,
        placeholder.keySchema(),
        placeholder.valueSchema(),
        FORMAT,
        List.copyOf(families));
  }

  /** Format 4 is still under development in Spark 4.2: refused, naming the fix. */
  static StateShiftException unsupportedFormat(StatefulOperator op, int format) {
    return new StateShiftException(
        Reason.UNSUPPORTED_OPERATOR,
        "Operator "
            + op.id()
            + " (stream-stream join) uses join state format "
            + format
            + " ("
            + StateLayout.JOIN_FORMAT
            + "), which Spark 4.2 offers for testing only; this "
            + "version of stateshift repartitions join state formats 1, 2 and 3. The checkpoint "
            + "was not changed. Start the query on a new checkpoint with the new partition "
            + "count, or with join state format 2 (the default) or 3.");
  }
}
