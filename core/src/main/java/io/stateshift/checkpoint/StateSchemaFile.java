package io.stateshift.checkpoint;

import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.io.UncheckedIOException;
import org.apache.hadoop.fs.FSDataOutputStream;
import org.apache.hadoop.fs.Path;
import org.apache.spark.sql.types.StructType;

/**
 * The state schema file Spark keeps for a store in partition 0 ({@code
 * state/<op>/0[/<store>]/_metadata/schema}) and checks a restarted query's state schema against.
 * Format version 2, which Spark 3.5 to 4.2 write for every operator but transformWithState: the
 * string {@code v2} as {@link DataOutputStream#writeUTF}, then the key's and the value's schema as
 * JSON, each as an int count of chunks followed by that many UTF chunks of at most 65,535 chars.
 */
public final class StateSchemaFile {
  private static final int CHUNK = 65_535;

  private StateSchemaFile() {}

  /** Where a store's schema file is, relative to the checkpoint root. */
  public static String path(long operatorId, String storeName) {
    return StatefulOperator.storeDir(operatorId, 0, storeName) + "/_metadata/schema";
  }

  /** The format version a schema file names in its first field ({@code v2} gives 2), or -1. */
  public static int version(CheckpointFiles files, Path path) {
    try (DataInputStream in = new DataInputStream(files.fs().open(path))) {
      String head = in.readUTF();
      return head.matches("v\\d+") ? Integer.parseInt(head.substring(1)) : -1;
    } catch (IOException e) {
      return -1;
    }
  }

  /** Writes a version 2 schema file at {@code path}, which must not exist. */
  public static void writeV2(CheckpointFiles files, Path path, StructType key, StructType value) {
    try (FSDataOutputStream out = files.fs().create(path, false)) {
      out.writeUTF("v2");
      writeJson(out, key.json());
      writeJson(out, value.json());
    } catch (IOException e) {
      throw new UncheckedIOException("Cannot write the state schema file " + path, e);
    }
  }

  private static void writeJson(DataOutputStream out, String json) throws IOException {
    int chunks = (json.length() - 1) / CHUNK + 1;
    out.writeInt(chunks);
    for (int i = 0; i < chunks; i++) {
      out.writeUTF(json.substring(i * CHUNK, Math.min(json.length(), (i + 1) * CHUNK)));
    }
  }
}
