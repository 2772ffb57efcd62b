package io.stateshift.spark.state;

import java.io.BufferedInputStream;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.EOFException;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.io.Serializable;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import org.apache.spark.serializer.DeserializationStream;
import org.apache.spark.serializer.SerializationStream;
import org.apache.spark.serializer.Serializer;
import org.apache.spark.serializer.SerializerInstance;
import scala.reflect.ClassTag;

/**
 * The shuffle serializer of the redistribution job. Its keys are {@link StateRecords} byte arrays
 * and its values are always null, so a record goes on the wire as {@code [length:int][bytes]}: no
 * class names, no object graph, no per-record allocation beyond the array itself (Spark's default
 * Java serialization spends most of its time on exactly those).
 */
final class RawRecordSerializer extends Serializer implements Serializable {

  @Override
  public SerializerInstance newInstance() {
    return new Instance();
  }

  /** Records are self-delimiting and the stream has no header: Spark may move them around. */
  @Override
  public boolean supportsRelocationOfSerializedObjects() {
    return true;
  }

  private static final class Instance extends SerializerInstance {
    @Override
    public <T> ByteBuffer serialize(T t, ClassTag<T> tag) {
      byte[] record = (byte[]) t;
      ByteBuffer buffer = ByteBuffer.allocate(4 + record.length);
      buffer.putInt(record.length).put(record).flip();
      return buffer;
    }

    @Override
    @SuppressWarnings("unchecked")
    public <T> T deserialize(ByteBuffer bytes, ClassTag<T> tag) {
      byte[] record = new byte[bytes.getInt()];
      bytes.get(record);
      return (T) record;
    }

    @Override
    public <T> T deserialize(ByteBuffer bytes, ClassLoader loader, ClassTag<T> tag) {
      return deserialize(bytes, tag);
    }

    @Override
    public SerializationStream serializeStream(OutputStream out) {
      return new Writer(out);
    }

    @Override
    public DeserializationStream deserializeStream(InputStream in) {
      return new Reader(in);
    }
  }

  private static final class Writer extends SerializationStream {
    private final DataOutputStream out;

    Writer(OutputStream out) {
      this.out = new DataOutputStream(out);
    }

    @Override
    public <T> SerializationStream writeObject(T t, ClassTag<T> tag) {
      byte[] record = (byte[]) t;
      try {
        out.writeInt(record.length);
        out.write(record);
      } catch (IOException e) {
        throw new UncheckedIOException(e);
      }
      return this;
    }

    /** Values are always null: nothing to write. */
    @Override
    public <T> SerializationStream writeValue(T value, ClassTag<T> tag) {
      return this;
    }

    @Override
    public void flush() {
      try {
        out.flush();
      } catch (IOException e) {
        throw new UncheckedIOException(e);
      }
    }

    @Override
    public void close() {
      try {
        out.close();
      } catch (IOException e) {
        throw new UncheckedIOException(e);
      }
    }
  }

  private static final class Reader extends DeserializationStream {
    private final DataInputStream in;

    Reader(InputStream in) {
      this.in = new DataInputStream(new BufferedInputStream(in, 1 << 16));
    }

    /** Throws EOFException at the end of the stream, which is how Spark's iterators stop. */
    @Override
    @SuppressWarnings("unchecked")
    public <T> T readObject(ClassTag<T> tag) {
      byte[] record;
      try {
        record = new byte[in.readInt()];
      } catch (EOFException end) {
        throw sneaky(end);
      } catch (IOException e) {
        throw new UncheckedIOException(e);
      }
      try {
        in.readFully(record);
      } catch (IOException e) {
        throw new UncheckedIOException(e);
      }
      return (T) record;
    }

    @Override
    public <T> T readValue(ClassTag<T> tag) {
      return null;
    }

    @Override
    public void close() {
      try {
        in.close();
      } catch (IOException e) {
        throw new UncheckedIOException(e);
      }
    }
  }

  /** Spark's DeserializationStream iterators end on a thrown (checked) EOFException. */
  @SuppressWarnings("unchecked")
  private static <E extends Throwable> RuntimeException sneaky(Throwable e) throws E {
    throw (E) e;
  }
}
