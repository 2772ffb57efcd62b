package io.stateshift.cli;

import java.util.ArrayList;
import java.util.List;
import java.util.Optional;

/**
 * A command of the command line and the options it takes; its usage text is made from them, so the
 * help cannot drift from what the parser accepts.
 *
 * @param name the command, for example {@code repartition}
 * @param summary one line for the global usage
 * @param description a few lines for the command's own usage
 * @param options every option the command accepts
 * @param example one command line that works
 * @param operands what the arguments that are not options are, for the usage ({@code <folder>...}),
 *     at least one required; null when the command takes none
 */
record CliCommand(
    String name,
    String summary,
    String description,
    List<CliOption> options,
    String example,
    String operands) {

  /** A command that takes options only. */
  CliCommand(
      String name, String summary, String description, List<CliOption> options, String example) {
    this(name, summary, description, options, example, null);
  }

  Optional<CliOption> option(String optionName) {
    return options.stream().filter(o -> o.name().equals(optionName)).findFirst();
  }

  /** Whether the command prints a result that {@code --json} turns into JSON. */
  boolean takesJson() {
    return option("json").isPresent();
  }

  /** The command's usage: synopsis, description, each option with its default, an example. */
  String usage() {
    StringBuilder synopsis = new StringBuilder("usage: stateshift ").append(name);
    for (CliOption o : options) {
      if (o.required()) {
        synopsis.append(' ').append(o.synopsis());
      }
    }
    if (options.stream().anyMatch(o -> !o.required())) {
      synopsis.append(" [options]");
    }
    if (operands != null) {
      synopsis.append(' ').append(operands);
    }
    StringBuilder out = new StringBuilder(synopsis).append("\n\n");
    out.append(description.strip().indent(2)).append('\n');
    out.append("options:\n");
    List<String[]> rows = new ArrayList<>();
    for (CliOption o : options) {
      StringBuilder help = new StringBuilder(o.help());
      if (o.required()) {
        help.append(" (required)");
      } else if (o.defaultText() != null) {
        help.append(" (default: ").append(o.defaultText()).append(')');
      }
      if (o.repeatable()) {
        help.append("; repeatable");
      }
      rows.add(new String[] {o.synopsis(), help.toString()});
    }
    rows.add(new String[] {"-h, --help", "this help"});
    int width = rows.stream().mapToInt(r -> r[0].length()).max().orElse(0);
    for (String[] row : rows) {
      out.append(String.format("  %-" + width + "s  ", row[0]));
      wrap(out, row[1], width + 4, LINE - width - 4);
    }
    out.append("\nexample:\n  ").append(example).append('\n');
    return out.toString();
  }

  private static final int LINE = 100;

  /** Appends {@code text} in lines of at most {@code width}, continued at {@code indent}. */
  private static void wrap(StringBuilder out, String text, int indent, int width) {
    int column = 0;
    for (String word : text.split(" ")) {
      if (column > 0 && column + 1 + word.length() > width) {
        out.append('\n').append(" ".repeat(indent));
        column = 0;
      } else if (column > 0) {
        out.append(' ');
        column++;
      }
      out.append(word);
      column += word.length();
    }
    out.append('\n');
  }
}
