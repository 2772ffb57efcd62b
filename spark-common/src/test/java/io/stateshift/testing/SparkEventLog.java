package io.stateshift.testing;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.stream.Stream;

/**
 * An application's Spark event log (uncompressed, {@code spark.eventLog.dir}), as the history
 * server reads it: its Spark properties, and every task of the jobs stateshift ran (job group
 * {@code stateshift-<attempt>}) with the executor it ran on and how it ended.
 */
public final class SparkEventLog {
  private static final ObjectMapper JSON = new ObjectMapper();

  /** One task attempt: where it ran and how it ended ({@code Success} or the failure's reason). */
  public record TaskRun(
      int stage, int stageAttempt, int index, int attempt, String executor, String endReason) {
    public boolean succeeded() {
      return endReason.equals("Success");
    }
  }

  private final Map<String, String> sparkProperties = new LinkedHashMap<>();
  private final List<TaskRun> stateshiftTasks = new ArrayList<>();
  private final List<String> removedExecutors = new ArrayList<>();

  private SparkEventLog() {}

  /** The one application's log in {@code dir}. */
  public static SparkEventLog read(Path dir) throws IOException {
    List<Path> logs;
    try (Stream<Path> files = Files.walk(dir)) {
      logs = files.filter(Files::isRegularFile).toList(); // rolling logs: a folder of files
    }
    if (logs.size() != 1) {
      throw new IllegalStateException("expected one event log in " + dir + ", found " + logs);
    }
    SparkEventLog log = new SparkEventLog();
    Set<Integer> stateshiftStages = new HashSet<>();
    for (String line : Files.readAllLines(logs.get(0))) {
      if (line.isBlank()) {
        continue;
      }
      JsonNode event = JSON.readTree(line);
      switch (event.path("Event").asText()) {
        case "SparkListenerEnvironmentUpdate" ->
            event
                .path("Spark Properties")
                .properties()
                .forEach(e -> log.sparkProperties.put(e.getKey(), e.getValue().asText()));
        case "SparkListenerJobStart" -> {
          String group = event.path("Properties").path("spark.jobGroup.id").asText("");
          if (group.startsWith("stateshift-")) {
            event.path("Stage IDs").forEach(id -> stateshiftStages.add(id.asInt()));
          }
        }
        case "SparkListenerTaskEnd" -> {
          int stage = event.path("Stage ID").asInt();
          if (stateshiftStages.contains(stage)) {
            JsonNode info = event.path("Task Info");
            log.stateshiftTasks.add(
                new TaskRun(
                    stage,
                    event.path("Stage Attempt ID").asInt(),
                    info.path("Index").asInt(),
                    info.path("Attempt").asInt(),
                    info.path("Executor ID").asText(),
                    event.path("Task End Reason").path("Reason").asText()));
          }
        }
        case "SparkListenerExecutorRemoved" ->
            log.removedExecutors.add(
                event.path("Executor ID").asText() + ": " + event.path("Removed Reason").asText());
        default -> {}
      }
    }
    return log;
  }

  /** The application's Spark properties, as the driver resolved them. */
  public Map<String, String> sparkProperties() {
    return sparkProperties;
  }

  /** Every task attempt of stateshift's jobs, in the order they ended. */
  public List<TaskRun> stateshiftTasks() {
    return stateshiftTasks;
  }

  /** The executors that ran at least one of stateshift's tasks to success. */
  public Set<String> executorsThatRanStateshiftTasks() {
    Set<String> out = new HashSet<>();
    stateshiftTasks.stream().filter(TaskRun::succeeded).forEach(t -> out.add(t.executor()));
    return out;
  }

  /** The executors the driver lost while the application ran ({@code id: reason}). */
  public List<String> removedExecutors() {
    return removedExecutors;
  }
}
