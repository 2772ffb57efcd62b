package io.stateshift.spark.state;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.io.File;
import java.io.RandomAccessFile;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.TreeMap;
import org.apache.hadoop.conf.Configuration;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/** The staged runs of the RocksDB file exchange: split by many writers, merged back in order. */
class SortedRunsTest {
  @TempDir Path tmp;

  private static final int OLD = 30;
  private static final int NEW = 7;

  /**
   * Runs in files only (a cluster), in memory until a small budget is spent (some of each), and all
   * in memory (local mode with room): the same merged partitions.
   */
  @ParameterizedTest(name = "memory budget {0}")
  @ValueSource(longs = {0, 40_000, Long.MAX_VALUE})
  void runsOfManyOldPartitionsMergeIntoEachNewPartitionInKeyOrder(long memoryBudget)
      throws Exception {
    String exchange = tmp.resolve("exchange").toString();
    InMemoryRuns.open(exchange, memoryBudget);
    try {
      mergesInKeyOrder(exchange, memoryBudget);
    } finally {
      InMemoryRuns.close(exchange);
    }
  }

  private void mergesInKeyOrder(String exchange, long memoryBudget) throws Exception {
    Random random = new Random(42);
    // every key once, in some old partition, and a new partition from its bytes
    List<TreeMap<String, byte[]>> old = new ArrayList<>();
    for (int p = 0; p < OLD; p++) {
      old.add(new TreeMap<>());
    }
    List<TreeMap<String, String>> expected = new ArrayList<>();
    for (int p = 0; p < NEW; p++) {
      expected.add(new TreeMap<>());
    }
    for (int i = 0; i < 5000; i++) {
      byte[] key = new byte[1 + random.nextInt(40)];
      random.nextBytes(key);
      String hex = HexFormat.of().formatHex(key); // hex order is unsigned byte order
      if (expected.stream().anyMatch(m -> m.containsKey(hex))) {
        continue;
      }
      byte[] value = ("value-" + i).repeat(random.nextInt(20)).getBytes(StandardCharsets.UTF_8);
      old.get(random.nextInt(OLD)).put(hex, value);
      expected.get(Math.floorMod(hex.hashCode(), NEW)).put(hex, HexFormat.of().formatHex(value));
    }
    List<List<StateRedistributionJob.StagedFile>> perTarget = new ArrayList<>();
    for (int p = 0; p < NEW; p++) {
      perTarget.add(new ArrayList<>());
    }
    for (int o = 0; o < OLD; o++) {
      File file = tmp.resolve("old-" + o + ".runs").toFile();
      // a small flush size: several runs per new partition in one file
      try (SortedRuns.Writer writer =
          new SortedRuns.Writer(file, 100, NEW, 2000).keepingInMemory(exchange)) {
        for (Map.Entry<String, byte[]> e : old.get(o).entrySet()) {
          byte[] key = HexFormat.of().parseHex(e.getKey());
          writer.add(
              Math.floorMod(e.getKey().hashCode(), NEW),
              key,
              key.length,
              e.getValue(),
              e.getValue().length);
        }
        for (StateRedistributionJob.StagedFile f :
            SortedRuns.staged(writer.finish(), file.getAbsolutePath(), file.length())) {
          if (InMemoryRuns.isMemoryPath(f.path())) {
            assertThat(f.fileBytes()).isGreaterThanOrEqualTo(f.offset() + f.length());
          } else {
            assertThat(f.fileBytes()).isEqualTo(writer.fileBytes());
          }
          perTarget.get(f.target() - 100).add(f);
        }
      }
    }
    assertThat(perTarget.get(0).size()).as("runs of one new partition").isGreaterThan(OLD);
    long inMemory =
        perTarget.stream()
            .flatMap(List::stream)
            .filter(f -> InMemoryRuns.isMemoryPath(f.path()))
            .count();
    long all = perTarget.stream().mapToLong(List::size).sum();
    if (memoryBudget == 0) {
      assertThat(inMemory).isZero();
    } else if (memoryBudget == Long.MAX_VALUE) {
      assertThat(inMemory).isEqualTo(all);
    } else {
      assertThat(inMemory).as("runs in memory of %s", all).isBetween(1L, all - 1);
    }
    for (int p = 0; p < NEW; p++) {
      List<String[]> merged = new ArrayList<>();
      long count =
          SortedRuns.merge(
              perTarget.get(p),
              new Configuration(),
              (k, ko, kl, v, vo, vl) ->
                  merged.add(
                      new String[] {
                        HexFormat.of().formatHex(k, ko, ko + kl),
                        HexFormat.of().formatHex(v, vo, vo + vl)
                      }));
      assertThat(count).isEqualTo(expected.get(p).size());
      Map<String, String> inOrder = new java.util.LinkedHashMap<>();
      merged.forEach(e -> inOrder.put(e[0], e[1]));
      assertThat(inOrder).containsExactlyEntriesOf(expected.get(p));
    }
  }

  @Test
  void aTruncatedStagedFileFailsTheMerge() throws Exception {
    File file = tmp.resolve("one.runs").toFile();
    List<StateRedistributionJob.StagedFile> staged;
    try (SortedRuns.Writer writer = new SortedRuns.Writer(file, 0, 1)) {
      writer.add(0, new byte[] {1}, 1, new byte[] {2, 3}, 2);
      writer.add(0, new byte[] {4}, 1, new byte[] {5, 6}, 2);
      staged = SortedRuns.staged(writer.finish(), file.getAbsolutePath(), file.length());
    }
    try (RandomAccessFile raf = new RandomAccessFile(file, "rw")) {
      raf.setLength(file.length() - 1);
    }
    assertThatThrownBy(
            () -> SortedRuns.merge(staged, new Configuration(), (a, b, c, d, e, f) -> {}))
        .hasMessageContaining("the attempt is abandoned");
  }
}
