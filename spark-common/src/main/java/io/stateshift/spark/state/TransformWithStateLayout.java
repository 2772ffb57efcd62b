package io.stateshift.spark.state;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.stateshift.StateShiftException;
import io.stateshift.StateShiftException.Reason;
import io.stateshift.checkpoint.Checkpoint;
import io.stateshift.checkpoint.CheckpointFiles;
import io.stateshift.checkpoint.StatefulOperator;
import io.stateshift.checkpoint.StoreSpec;
import io.stateshift.spark.line.LineCalls;
import io.stateshift.spark.line.TransformWithStateNames;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Locale;
import java.util.Optional;
import org.apache.hadoop.fs.FSDataInputStream;
import org.apache.hadoop.fs.Path;
import org.apache.spark.sql.execution.streaming.operators.stateful.transformwithstate.StateVariableType;
import org.apache.spark.sql.execution.streaming.operators.stateful.transformwithstate.TransformWithStateOperatorProperties;
import org.apache.spark.sql.execution.streaming.operators.stateful.transformwithstate.TransformWithStateVariableInfo;
import org.apache.spark.sql.execution.streaming.state.StateStoreColFamilySchema;
import org.apache.spark.sql.execution.streaming.state.StateStoreConf;

/**
 * The layout of a transformWithState store: its column families from the state schema v3 file that
 * the operator metadata v2 of the last committed batch names ({@code
 * state/<op>/_stateSchema/<store>/<batch>_<uuid>}), and the state variable each belongs to from the
 * operator properties in that metadata (timer and TTL index families map to the variable they
 * serve, as Spark's own repartition maps them).
 */
final class TransformWithStateLayout {
  private TransformWithStateLayout() {}

  static StoreSpec storeSpec(
      Checkpoint checkpoint,
      StatefulOperator op,
      StatefulOperator.Store store,
      int slot,
      StateStoreConf storeConf) {
    CheckpointFiles files = checkpoint.files();
    if (!"unsaferow".equals(storeConf.stateStoreEncodingFormat().toLowerCase(Locale.ROOT))) {
      throw new StateShiftException(
          Reason.UNSUPPORTED_CHECKPOINT,
          "Operator "
              + op.id()
              + " (transformWithState) keeps its state in the "
              + storeConf.stateStoreEncodingFormat()
              + " encoding "
              + "(spark.sql.streaming.stateStore.encodingFormat); this version of stateshift "
              + "repartitions transformWithState state in the default unsaferow encoding only. "
              + "The checkpoint was not changed. Start the query on a new checkpoint with the new "
              + "partition count.");
    }
    Optional<Path> metadataPath = checkpoint.latestV2Metadata(op.id());
    if (metadataPath.isEmpty()) {
      throw Checkpoint.corrupt(
          files,
          "operator "
              + op.id()
              + " (transformWithState) has no "
              + "operator metadata v2 (state/"
              + op.id()
              + "/_metadata/v2/), which names its state "
              + "schema",
          Checkpoint.RESTORE);
    }
    ObjectNode metadata = checkpoint.readMetadataJson(metadataPath.get());
    String where = files.relativize(metadataPath.get());
    List<TransformWithStateVariableInfo> variables;
    Path schemaFile;
    try {
      variables =
          ScalaBridge.javaList(
              TransformWithStateOperatorProperties.fromJson(
                      metadata.get("operatorPropertiesJson").asText())
                  .stateVariables());
      schemaFile = schemaFile(files, op, store, metadata);
    } catch (StateShiftException e) {
      throw e;
    } catch (RuntimeException e) {
      throw Checkpoint.corrupt(
          files,
          where
              + " does not name the state variables and state "
              + "schema of operator "
              + op.id()
              + " ("
              + e.getMessage()
              + ")",
          Checkpoint.RESTORE);
    }
    List<StateStoreColFamilySchema> schemas = readColumnFamilySchemas(files, op, schemaFile);
    List<ColumnFamilySchema> families = new ArrayList<>();
    StateStoreColFamilySchema placeholder = null;
    for (StateStoreColFamilySchema schema : schemas) {
      String name = schema.colFamilyName();
      if (name.equals(StateStores.DEFAULT_COLUMN_FAMILY)) {
        placeholder = schema; // unused by transformWithState; the provider needs a default
        continue;
      }
      String variableName = TransformWithStateNames.stateVariable(name);
      TransformWithStateVariableInfo variable =
          variables.stream()
              .filter(v -> v.stateName().equals(variableName))
              .findFirst()
              .orElseThrow(
                  () ->
                      Checkpoint.corrupt(
                          files,
                          "column family "
                              + name
                              + " of operator "
                              + op.id()
                              + " belongs to no state variable the operator metadata "
                              + where
                              + " lists",
                          Checkpoint.RESTORE));
      if (schema.keyStateEncoderSpec().isEmpty()) {
        throw Checkpoint.corrupt(
            files,
            "the state schema "
                + files.relativize(schemaFile)
                + " records no key encoder for column family "
                + name,
            Checkpoint.RESTORE);
      }
      boolean list =
          variable.stateVariableType() == StateVariableType.ListState()
              && variable.stateName().equals(name);
      families.add(
          new ColumnFamilySchema(
              name,
              schema.keySchema(),
              schema.valueSchema(),
              schema.keyStateEncoderSpec().get(),
              list,
              TransformWithStateNames.internal(name),
              variable));
    }
    if (families.isEmpty()) {
      throw Checkpoint.corrupt(
          files,
          "the state schema "
              + files.relativize(schemaFile)
              + " of operator "
              + op.id()
              + " lists no state variable",
          Checkpoint.RESTORE);
    }
    if (placeholder == null) {
      placeholder =
          schemas.stream()
              .filter(s -> s.colFamilyName().equals(families.get(0).name()))
              .findFirst()
              .orElseThrow();
    }
    return new StoreSpec(
        slot,
        op.id(),
        op.name(),
        store.name(),
        0,
        placeholder.keySchema(),
        placeholder.valueSchema(),
        0,
        List.copyOf(families));
  }

  /**
   * The newest schema file the metadata names, looked up in this checkpoint's own {@code
   * _stateSchema} folder: the metadata records absolute paths, which point elsewhere once a
   * checkpoint has been copied or moved.
   */
  /** Every column family's schema in a state schema v3 file, sorted by name. */
  static List<StateStoreColFamilySchema> readColumnFamilySchemas(
      CheckpointFiles files, StatefulOperator op, Path schemaFile) {
    List<StateStoreColFamilySchema> schemas;
    try (FSDataInputStream in = files.fs().open(schemaFile)) {
      schemas = new ArrayList<>(LineCalls.readSchemaFile(in));
    } catch (Exception e) { // Spark throws checked exceptions here too
      throw Checkpoint.corrupt(
          files,
          "the state schema "
              + files.relativize(schemaFile)
              + " of "
              + "operator "
              + op.id()
              + " cannot be read ("
              + e.getMessage()
              + ")",
          Checkpoint.RESTORE);
    }
    schemas.sort(Comparator.comparing(StateStoreColFamilySchema::colFamilyName));
    return schemas;
  }

  static Path schemaFile(
      CheckpointFiles files,
      StatefulOperator op,
      StatefulOperator.Store store,
      ObjectNode metadata) {
    for (JsonNode info : metadata.get("stateStoreInfo")) {
      if (!info.get("storeName").asText().equals(store.name())) {
        continue;
      }
      JsonNode paths = info.get("stateSchemaFilePaths");
      if (paths == null || !paths.isArray() || paths.isEmpty()) {
        break;
      }
      String recorded = paths.get(paths.size() - 1).asText();
      String name = recorded.substring(recorded.lastIndexOf('/') + 1);
      Path local = files.path("state/" + op.id() + "/_stateSchema/" + store.name() + "/" + name);
      if (!files.exists(local)) {
        throw Checkpoint.corrupt(
            files,
            "the state schema state/"
                + op.id()
                + "/_stateSchema/"
                + store.name()
                + "/"
                + name
                + " of operator "
                + op.id()
                + " is missing",
            Checkpoint.RESTORE);
      }
      return local;
    }
    throw new IllegalArgumentException("no stateSchemaFilePaths for store " + store.name());
  }
}
