package io.stateshift;

import java.util.List;

/**
 * What {@link StateShift#repairSinkLog} did to a file sink's log.
 *
 * @param sinkLog the log folder ({@code <output>/_spark_metadata})
 * @param filled the batch ids that got an empty entry (repartition batches)
 * @param unfillable why each remaining gap could not be filled (batches that wrote output)
 */
public record SinkLogRepair(String sinkLog, List<Long> filled, List<String> unfillable) {
  public SinkLogRepair {
    filled = List.copyOf(filled);
    unfillable = List.copyOf(unfillable);
  }
}
