package io.stateshift.spark.state;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Random;
import org.apache.spark.serializer.DeserializationStream;
import org.apache.spark.serializer.SerializationStream;
import org.apache.spark.serializer.SerializerInstance;
import org.junit.jupiter.api.Test;
import scala.Tuple2;
import scala.reflect.ClassTag;
import scala.reflect.ClassTag$;

/**
 * The shuffle records of the redistribution job, without Spark running: the raw serializer gives
 * back exactly what it was given and ends the stream the way Spark's iterators expect, and the sort
 * order is RocksDB's bytewise order (unsigned bytes, shorter prefix first).
 */
class ShuffleRecordsTest {
  private static final ClassTag<Object> ANY = ClassTag$.MODULE$.Object();

  @Test
  void rawSerializerRoundTripsRecordsAsKeyValuePairsAndStopsAtTheEnd() {
    Random random = new Random(7);
    List<byte[]> records = new ArrayList<>();
    for (int i = 0; i < 500; i++) {
      byte[] key = new byte[random.nextInt(40)];
      byte[] value = new byte[random.nextInt(200)];
      random.nextBytes(key);
      random.nextBytes(value);
      records.add(StateRecords.pack(random.nextInt(64), key, value));
    }
    SerializerInstance serializer = new RawRecordSerializer().newInstance();
    ByteArrayOutputStream bytes = new ByteArrayOutputStream();
    SerializationStream out = serializer.serializeStream(bytes);
    for (byte[] record : records) {
      out.writeKey(record, ANY);
      out.writeValue(null, ANY);
    }
    out.close();

    DeserializationStream in =
        serializer.deserializeStream(new ByteArrayInputStream(bytes.toByteArray()));
    List<byte[]> back = new ArrayList<>();
    scala.collection.Iterator<Tuple2<Object, Object>> pairs = in.asKeyValueIterator();
    while (pairs.hasNext()) {
      Tuple2<Object, Object> pair = pairs.next();
      assertThat(pair._2()).isNull();
      back.add((byte[]) pair._1());
    }
    assertThat(back).hasSize(records.size());
    for (int i = 0; i < records.size(); i++) {
      assertThat(back.get(i)).isEqualTo(records.get(i));
    }
  }

  @Test
  void recordsCarryTheirTargetAndSortByUnsignedKeyBytesIgnoringValues() {
    byte[] a = StateRecords.pack(3, new byte[] {0, 1}, new byte[] {9, 9, 9});
    byte[] b = StateRecords.pack(3, new byte[] {0, 1, 0}, new byte[] {});
    byte[] c = StateRecords.pack(3, new byte[] {0, (byte) 0x80}, new byte[] {1});
    byte[] d = StateRecords.pack(3, new byte[] {0, (byte) 0xff}, new byte[] {0});
    assertThat(StateRecords.target(a)).isEqualTo(3);
    assertThat(new StateRecords.TargetPartitioner(16).getPartition(a)).isEqualTo(3);
    assertThat(StateRecords.keyLength(a)).isEqualTo(2);
    assertThat(StateRecords.valueLength(a)).isEqualTo(3);

    List<byte[]> sorted = new ArrayList<>(List.of(d, c, b, a));
    sorted.sort(new StateRecords.KeyBytesOrder());
    // 0x80 and 0xff are negative as Java bytes; RocksDB compares them as 128 and 255
    assertThat(sorted).containsExactly(a, b, c, d);
    assertThat(Arrays.equals(sorted.get(0), a)).isTrue();
  }
}
