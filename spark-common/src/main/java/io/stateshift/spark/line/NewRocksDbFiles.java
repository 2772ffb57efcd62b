package io.stateshift.spark.line;

import java.io.File;
import java.util.List;
import org.apache.spark.sql.execution.streaming.state.RocksDBImmutableFile;

/**
 * The files of a closed RocksDB folder as Spark's commit uploads them ({@link
 * RocksDbCalls#newFiles}): each immutable file (SST, archived log) in {@code immutable}, with the
 * new unique name and size Spark's upload gives it at the same position in {@code uploads}, and the
 * other files, which go into the version's zip.
 */
public record NewRocksDbFiles(
    List<File> immutable, List<RocksDBImmutableFile> uploads, List<File> others) {}
