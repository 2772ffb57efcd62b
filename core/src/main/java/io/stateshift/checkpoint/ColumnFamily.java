package io.stateshift.checkpoint;

import java.io.Serializable;

/**
 * One column family of a store that keeps several: a transformWithState state variable or one of
 * Spark's internal ones, or one of the four stores of a stream-stream join in state format 3. The
 * Spark line that read the schema keeps its encoding details in its own implementation.
 */
public interface ColumnFamily extends Serializable {
  String name();
}
