package io.stateshift.spark.state;

import io.stateshift.checkpoint.PreparedManifest;
import io.stateshift.checkpoint.StateFileDamage;
import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.nio.ByteBuffer;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.zip.ZipEntry;
import java.util.zip.ZipInputStream;
import org.apache.hadoop.fs.FileStatus;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;
import org.apache.spark.io.CompressionCodec;
import org.apache.spark.sql.execution.streaming.state.RocksDBCheckpointMetadata;
import org.apache.spark.unsafe.Platform;

/**
 * The tail of a RocksDB store with column families (transformWithState, a join in state format 3),
 * as the prepared path replays it.
 *
 * <p>RocksDB logs such a store's batches in its second changelog format: {@code "v2"}, then records
 * of a type byte (put, removal, merge, range removal), the key and the value, ended by a zero byte.
 * A merge appends one value to a list state's key, so a key's tail is not its newest entry alone:
 * what still matters is its last put or removal and the merges after it, or, with neither, every
 * merge, in batch order. That is what {@link #read} keeps per key, and what a new partition's log
 * replays.
 *
 * <p>A key starts with its column family's id in two bytes. RocksDB numbers the families of a
 * partition as its store creates them, so the ids of an old partition (named in its snapshots'
 * metadata) and those of a new one (in the prepared zip) may differ: keys are translated by family
 * name on the way.
 */
final class ColumnFamilyTail {
  static final byte PUT = 0x01;
  static final byte REMOVE = 0x10;
  static final byte MERGE = 0x11;
  static final byte REMOVE_RANGE = 0x20;
  static final byte END = 0x00;
  static final String FORMAT = "v2";

  /** The same records after a lineage line: RocksDB's changelog under checkpoint format v2. */
  static final String LINEAGE_FORMAT = "v4";

  static final int FAMILY_ID_BYTES = 2;

  private ColumnFamilyTail() {}

  /**
   * The changes of one old partition's changelog files, oldest first: per key (its old family id
   * ahead of it), the operations a replay needs, encoded as {@code [type][int length][value]}
   * (length -1 for a removal).
   */
  static Map<ByteBuffer, byte[]> read(FileSystem fs, List<Path> oldestFirst, CompressionCodec codec)
      throws IOException {
    Map<ByteBuffer, ByteArrayOutputStream> changes = new LinkedHashMap<>();
    for (Path file : oldestFirst) {
      forEachRecord(fs, file, codec, (type, key, value) -> append(changes, key, type, value));
    }
    Map<ByteBuffer, byte[]> out = new LinkedHashMap<>();
    changes.forEach((key, ops) -> out.put(key, ops.toByteArray()));
    return out;
  }

  /** What {@link #forEachRecord} hands each record to. */
  interface Records {
    /** A record: its type, its key, its value (null for a removal). */
    void accept(byte type, byte[] key, byte[] value) throws IOException;
  }

  /** Every record of one changelog file in this format, in order. */
  static void forEachRecord(FileSystem fs, Path file, CompressionCodec codec, Records records)
      throws IOException {
    try (DataInputStream in = HdfsFileExchange.decoding(fs.open(file), codec, file)) {
      readFile(in, file, records);
    } catch (PreparedManifest.Rejected e) {
      throw e;
    } catch (IOException | RuntimeException e) {
      throw StateFileDamage.classify(file, e);
    }
  }

  private static void readFile(DataInputStream in, Path file, Records records) throws IOException {
    String format = in.readUTF();
    if (LINEAGE_FORMAT.equals(format)) {
      in.readUTF(); // the lineage (state checkpoint format v2), which the replay does not need
    } else if (!FORMAT.equals(format)) {
      throw new PreparedManifest.Rejected(
          "the changelog file "
              + file
              + " is in RocksDB's changelog format "
              + format
              + ", which the prepared path does not replay");
    }
    for (byte type = in.readByte(); type != END; type = in.readByte()) {
      byte[] key = block(in);
      switch (type) {
        case PUT, MERGE -> records.accept(type, key, block(in));
        case REMOVE -> {
          int marker = in.readInt();
          if (marker != -1) {
            throw new IOException("a removal record with a value length of " + marker);
          }
          records.accept(REMOVE, key, null);
        }
        case REMOVE_RANGE ->
            throw new PreparedManifest.Rejected(
                "the changelog file "
                    + file
                    + " removes a range of keys, which the prepared path does not replay");
        default -> throw new IOException("an unknown record type " + type);
      }
    }
  }

  private static void append(
      Map<ByteBuffer, ByteArrayOutputStream> changes, byte[] key, byte type, byte[] value)
      throws IOException {
    ByteBuffer k = ByteBuffer.wrap(key);
    ByteArrayOutputStream ops = changes.get(k);
    if (ops == null || type != MERGE) {
      ops = new ByteArrayOutputStream(); // a put or a removal makes what came before moot
      changes.put(k, ops);
    }
    DataOutputStream out = new DataOutputStream(ops);
    out.writeByte(type);
    out.writeInt(value == null ? -1 : value.length);
    if (value != null) {
      out.write(value);
    }
  }

  private static byte[] block(DataInputStream in) throws IOException {
    int length = in.readInt();
    if (length < 0) {
      throw new IOException("a record of length " + length);
    }
    byte[] data = new byte[length];
    in.readFully(data);
    return data;
  }

  /**
   * Writes a log of {@code changes} for a new partition in RocksDB's changelog format: each key's
   * family moved from its index ({@code FAMILY_ID_BYTES} bytes, big-endian, in the store's list of
   * families) to the new partition's id for it. With a {@code lineage} (state checkpoint format
   * v2), the format that carries it.
   */
  static long write(
      java.io.OutputStream file,
      CompressionCodec codec,
      Map<ByteBuffer, byte[]> changes,
      short[] idOfFamily,
      String lineage)
      throws IOException {
    long bytes = 0;
    try (DataOutputStream out =
        new DataOutputStream(
            new java.io.BufferedOutputStream(codec.compressedOutputStream(file), 1 << 16))) {
      if (lineage == null) {
        out.writeUTF(FORMAT);
      } else {
        out.writeUTF(LINEAGE_FORMAT);
        out.writeUTF(lineage);
      }
      for (Map.Entry<ByteBuffer, byte[]> change : changes.entrySet()) {
        byte[] indexed = change.getKey().array();
        int family = (indexed[0] & 0xff) << 8 | (indexed[1] & 0xff);
        byte[] key = new byte[indexed.length];
        Platform.putShort(key, Platform.BYTE_ARRAY_OFFSET, idOfFamily[family]);
        System.arraycopy(indexed, FAMILY_ID_BYTES, key, FAMILY_ID_BYTES, key.length - 2);
        DataInputStream ops = new DataInputStream(new ByteArrayInputStream(change.getValue()));
        while (ops.available() > 0) {
          byte type = ops.readByte();
          int length = ops.readInt();
          out.writeByte(type);
          out.writeInt(key.length);
          out.write(key);
          out.writeInt(length);
          if (length >= 0) {
            byte[] value = new byte[length];
            ops.readFully(value);
            out.write(value);
            bytes += length;
          }
          bytes += key.length;
        }
      }
      out.writeByte(END);
    }
    return bytes;
  }

  /** The family id a stored key starts with, in RocksDB's (native) byte order. */
  static short familyId(byte[] key) {
    return Platform.getShort(key, Platform.BYTE_ARRAY_OFFSET);
  }

  /** A RocksDB version's family names by id, from its metadata; empty when it has none. */
  static Map<Short, String> namesById(RocksDBCheckpointMetadata metadata) {
    Map<Short, String> out = new HashMap<>();
    if (metadata.columnFamilyMapping().isDefined()) {
      scala.collection.Iterator<scala.Tuple2<String, Object>> it =
          metadata.columnFamilyMapping().get().iterator();
      while (it.hasNext()) {
        scala.Tuple2<String, Object> e = it.next();
        out.put((Short) e._2(), e._1());
      }
    }
    return out;
  }

  /**
   * The family names by id of an old partition, from its newest snapshot at or before {@code
   * version}: RocksDB forces a snapshot when a store creates a family, and never reuses an id.
   */
  static Map<Short, String> oldFamilies(FileSystem fs, Path partitionDir, long version)
      throws IOException {
    long newest = -1;
    Path zip = null;
    for (FileStatus status : fs.listStatus(partitionDir)) {
      Matcher m = LayoutReader.ROCKSDB_FILE.matcher(status.getPath().getName());
      if (m.matches() && m.group(3).equals("zip") && Long.parseLong(m.group(1)) <= version) {
        if (Long.parseLong(m.group(1)) > newest) {
          newest = Long.parseLong(m.group(1));
          zip = status.getPath();
        }
      }
    }
    if (zip == null) {
      throw new PreparedManifest.Rejected(
          "no snapshot of " + partitionDir + " names its column families");
    }
    RocksDBCheckpointMetadata metadata;
    try (InputStream in = fs.open(zip)) {
      metadata = zipMetadata(in);
    }
    if (metadata == null) {
      throw new PreparedManifest.Rejected(
          "the snapshot " + zip + " holds no RocksDB metadata this Spark line reads");
    }
    return namesById(metadata);
  }

  /** The metadata in a RocksDB version's zip, or null when it has none this line reads. */
  static RocksDBCheckpointMetadata zipMetadata(InputStream zip) throws IOException {
    try (ZipInputStream in = new ZipInputStream(zip)) {
      for (ZipEntry e = in.getNextEntry(); e != null; e = in.getNextEntry()) {
        if (e.getName().equals("metadata")) {
          return RocksDbMetadataFile.plain(
              new String(in.readAllBytes(), java.nio.charset.StandardCharsets.UTF_8));
        }
      }
    }
    return null;
  }
}
