package io.stateshift.cli;

import java.util.function.Function;

/**
 * One option a command declares: a flag (no value; present means on) or an option that takes a
 * value, with the default it falls back to, a one-line help and a check of its value.
 *
 * @param name the option without its dashes, for example {@code backup-to}
 * @param valueName what the value is, for the usage ({@code <path>}); null for a flag
 * @param defaultText the default as the usage shows it; null when there is none
 * @param help one line
 * @param check returns why a value is wrong, or null when it is fine
 * @param required whether the command refuses to run without it
 * @param repeatable whether it may be given more than once (each value is kept)
 */
record CliOption(
    String name,
    String valueName,
    String defaultText,
    String help,
    Function<String, String> check,
    boolean required,
    boolean repeatable) {

  static CliOption flag(String name, String help) {
    return new CliOption(name, null, null, help, v -> null, false, false);
  }

  static CliOption value(String name, String valueName, String defaultText, String help) {
    return new CliOption(name, valueName, defaultText, help, v -> null, false, false);
  }

  boolean isFlag() {
    return valueName == null;
  }

  CliOption mandatory() {
    return new CliOption(name, valueName, defaultText, help, check, true, repeatable);
  }

  CliOption many() {
    return new CliOption(name, valueName, defaultText, help, check, required, true);
  }

  CliOption checkedBy(Function<String, String> valueCheck) {
    return new CliOption(name, valueName, defaultText, help, valueCheck, required, repeatable);
  }

  /** A whole number of at least {@code min}. */
  static Function<String, String> atLeast(int min) {
    return v -> {
      try {
        int n = Integer.parseInt(v.trim());
        return n >= min ? null : "must be at least " + min + ", got " + n;
      } catch (NumberFormatException e) {
        return "takes a whole number, got '" + v + "'";
      }
    };
  }

  /** A value that is not empty. */
  static String notBlank(String v) {
    return v.isBlank() ? "must not be empty" : null;
  }

  /** How the usage shows it: {@code --backup-to <path>}. */
  String synopsis() {
    return "--" + name + (isFlag() ? "" : " " + valueName);
  }
}
