package io.stateshift.spark.state;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.TreeMap;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.rocksdb.EnvOptions;
import org.rocksdb.Options;
import org.rocksdb.ReadOptions;
import org.rocksdb.RocksDB;
import org.rocksdb.RocksIterator;
import org.rocksdb.SstFileReader;
import org.rocksdb.SstFileReaderIterator;
import org.rocksdb.SstFileWriter;

/**
 * The SST exchange copies each entry from RocksDB's iterator into a Java array and from there into
 * native memory for the SST writer ({@link RocksDbSstExchange.Slot}). Entries of every size,
 * including ones that outgrow the buffers mid-walk and empty values, reach the SST file byte for
 * byte, in order.
 */
class SstEntryCopyTest {
  @Test
  void entriesOfEverySizeReachTheSstFileAsTheyAre(@TempDir Path dir) throws Exception {
    RocksDB.loadLibrary();
    Random random = new Random(7);
    Map<byte[], byte[]> entries = new TreeMap<>(Arrays::compareUnsigned);
    int[] sizes = {1, 7, 8, 9, 15, 16, 17, 255, 256, 257, 1023, 1024, 1025, 5000, 70_000};
    for (int keySize : sizes) {
      for (int valueSize : new int[] {0, 3, 8, 1024, 1025, 70_001}) {
        byte[] key = new byte[keySize];
        random.nextBytes(key);
        byte[] value = new byte[valueSize];
        random.nextBytes(value);
        entries.put(key, value);
      }
    }
    String sst = dir.resolve("copy.sst").toString();
    try (Options options = new Options().setCreateIfMissing(true);
        RocksDB db = RocksDB.open(options, dir.resolve("db").toString())) {
      for (Map.Entry<byte[], byte[]> entry : entries.entrySet()) {
        db.put(entry.getKey(), entry.getValue());
      }
      // small first buffers, so that both grow during the walk
      try (RocksIterator it = db.newIterator();
          RocksDbSstExchange.Slot key = new RocksDbSstExchange.Slot(4);
          RocksDbSstExchange.Slot value = new RocksDbSstExchange.Slot(4);
          EnvOptions env = new EnvOptions();
          SstFileWriter writer = new SstFileWriter(env, options)) {
        writer.open(sst);
        for (it.seekToFirst(); it.isValid(); it.next()) {
          key.read(it, true);
          value.read(it, false);
          writer.put(key.toNative(), value.toNative());
        }
        writer.finish();
      }
    }
    List<byte[]> keys = new ArrayList<>();
    List<byte[]> values = new ArrayList<>();
    try (Options options = new Options();
        SstFileReader reader = new SstFileReader(options);
        ReadOptions read = new ReadOptions()) {
      reader.open(sst);
      try (SstFileReaderIterator it = reader.newIterator(read)) {
        for (it.seekToFirst(); it.isValid(); it.next()) {
          keys.add(it.key());
          values.add(it.value());
        }
      }
    }
    assertThat(keys).containsExactlyElementsOf(entries.keySet());
    assertThat(values).containsExactlyElementsOf(entries.values());
  }
}
