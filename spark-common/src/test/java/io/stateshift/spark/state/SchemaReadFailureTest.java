package io.stateshift.spark.state;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.EOFException;
import java.io.IOException;
import java.io.UTFDataFormatException;
import java.util.concurrent.RejectedExecutionException;
import org.junit.jupiter.api.Test;

/** A schema file that cannot be read is damage only when its bytes are the problem. */
class SchemaReadFailureTest {
  @Test
  void theFileSystemFailingIsAnIoFailure() {
    assertThat(LayoutReader.isIoFailure(new IOException("Connection reset"))).isTrue();
    assertThat(
            LayoutReader.isIoFailure(
                new IOException(
                    "read failed", new RejectedExecutionException("pool is terminated"))))
        .isTrue();
    assertThat(LayoutReader.isIoFailure(new RejectedExecutionException("terminated"))).isTrue();
  }

  @Test
  void bytesCutShortOrGarbledAreDamage() {
    assertThat(LayoutReader.isIoFailure(new EOFException())).isFalse();
    assertThat(LayoutReader.isIoFailure(new UTFDataFormatException("bad"))).isFalse();
    assertThat(LayoutReader.isIoFailure(new IllegalStateException("unknown version v9"))).isFalse();
  }
}
