package io.stateshift.checkpoint;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.api.Test;

/**
 * Which S3A the direct requests take: one that hands out its AWS SDK v2 client (hadoop-aws 3.4 and
 * later); an older one, on SDK v1 (Spark 3.5's Hadoop 3.3.4), moves through S3A's rename.
 */
class S3ObjectsTest {
  /** The shape of hadoop-aws 3.4's S3AFileSystem, as far as the check looks. */
  static final class OnSdkV2 {
    public Object getS3AInternals() {
      return null;
    }
  }

  /** The shape of hadoop-aws 3.3's: no getS3AInternals. */
  static final class OnSdkV1 {
    public Object getAmazonS3ClientForTesting(String reason) {
      return null;
    }
  }

  @Test
  void onlyAnS3AOnSdkV2TakesTheDirectRequests() {
    assertThat(S3Objects.onSdkV2(OnSdkV2.class)).isTrue();
    assertThat(S3Objects.onSdkV2(OnSdkV1.class)).isFalse();
  }
}
