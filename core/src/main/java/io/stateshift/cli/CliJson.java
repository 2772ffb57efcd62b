package io.stateshift.cli;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;

/**
 * The command line's JSON output ({@code --json}). Every document is one object that starts with
 * the same envelope: {@code schema} ({@value #SCHEMA}; a field is only ever added within one schema
 * version, never renamed or removed), {@code command}, {@code ok} (the exit code is 0) and {@code
 * exitCode}; the command's fields follow. When {@code ok} is false, {@code error} holds a {@code
 * reason} (a {@link io.stateshift.StateShiftException.Reason} name, {@code USAGE}, or a command's
 * own, such as {@code PROBLEMS_FOUND}) and a {@code message}.
 */
final class CliJson {
  static final String SCHEMA = "stateshift/v1";
  static final ObjectMapper MAPPER = new ObjectMapper();

  private CliJson() {}

  static ObjectNode envelope(String command, int exitCode) {
    ObjectNode root = MAPPER.createObjectNode();
    root.put("schema", SCHEMA);
    if (command == null) {
      root.putNull("command");
    } else {
      root.put("command", command);
    }
    root.put("ok", exitCode == 0);
    root.put("exitCode", exitCode);
    return root;
  }

  static ObjectNode error(String command, int exitCode, String reason, String message) {
    ObjectNode root = envelope(command, exitCode);
    withError(root, reason, message);
    return root;
  }

  static ObjectNode withError(ObjectNode root, String reason, String message) {
    ObjectNode error = root.putObject("error");
    error.put("reason", reason);
    error.put("message", message);
    return root;
  }

  /** Adds every field of an object the library already renders as JSON (inspect, doctor). */
  static ObjectNode merge(ObjectNode root, String json) {
    try {
      root.setAll((ObjectNode) MAPPER.readTree(json));
      return root;
    } catch (JsonProcessingException e) {
      throw new IllegalStateException(e);
    }
  }

  /** A count or id, null where it is unknown (negative): JSON null, never -1. */
  static void count(ObjectNode node, String key, long value) {
    if (value < 0) {
      node.putNull(key);
    } else {
      node.put(key, value);
    }
  }

  /** A text, null where it is unknown (null or empty): JSON null, never "". */
  static void text(ObjectNode node, String key, String value) {
    if (value == null || value.isEmpty()) {
      node.putNull(key);
    } else {
      node.put(key, value);
    }
  }

  static String text(ObjectNode root) {
    try {
      return MAPPER.writerWithDefaultPrettyPrinter().writeValueAsString(root);
    } catch (JsonProcessingException e) {
      throw new IllegalStateException(e);
    }
  }
}
