package io.stateshift.testing;

import java.util.ArrayList;
import java.util.List;
import java.util.stream.Stream;
import org.junit.jupiter.params.provider.Arguments;

/**
 * Which cases a parameterized suite runs. {@code mvn test} covers every step of a matrix at least
 * once; {@code mvn test -Pextended} (system property {@code stateshift.extended=true}) runs every
 * combination. A crash test kills at every write step either way; the extended set does it on every
 * store too.
 */
public final class TestSets {
  private TestSets() {}

  /**
   * Whether this run is a line's cover (the lines other than the default one, in {@code mvn test}):
   * the tests tagged {@code cover}, each with only the cases {@link #orCover} keeps.
   */
  public static boolean cover() {
    return "cover".equals(System.getProperty("stateshift.cover"));
  }

  /** {@code cases}, or in a line's cover ({@link #cover}) those {@code inCover} keeps. */
  public static Stream<Arguments> orCover(
      Stream<Arguments> cases, java.util.function.Predicate<Object[]> inCover) {
    return cover() ? cases.filter(c -> inCover.test(c.get())) : cases;
  }

  /** Whether the whole matrices run ({@code -Pextended}). */
  public static boolean extended() {
    return Boolean.getBoolean("stateshift.extended");
  }

  /**
   * Every step with every variant under {@code -Pextended}; otherwise every step once, the variants
   * taking turns (step i with variant i mod n), so each variant still meets several steps.
   */
  public static <V> Stream<Arguments> everyStep(List<V> variants, List<String> steps) {
    List<Arguments> out = new ArrayList<>();
    for (int i = 0; i < steps.size(); i++) {
      if (extended()) {
        for (V variant : variants) {
          out.add(Arguments.of(variant, steps.get(i)));
        }
      } else {
        out.add(Arguments.of(variants.get(i % variants.size()), steps.get(i)));
      }
    }
    return out.stream();
  }

  /**
   * For a protocol that runs the repartition's steps (whose own crash suite kills at every one):
   * every step with every variant under {@code -Pextended}; otherwise only {@code sample}, the
   * steps where it writes something of its own, the variants taking turns.
   */
  public static <V> Stream<Arguments> sampledSteps(
      List<V> variants, List<String> steps, List<String> sample) {
    if (!steps.containsAll(sample)) {
      throw new IllegalArgumentException("Not a step: " + sample + " of " + steps);
    }
    return everyStep(variants, extended() ? steps : sample);
  }

  /**
   * All of {@code cases} under {@code -Pextended}; otherwise those {@code inDefault} keeps (by
   * index in {@code cases}).
   */
  public static Stream<Arguments> subset(
      List<Arguments> cases, java.util.function.IntPredicate inDefault) {
    if (extended()) {
      return cases.stream();
    }
    List<Arguments> out = new ArrayList<>();
    for (int i = 0; i < cases.size(); i++) {
      if (inDefault.test(i)) {
        out.add(cases.get(i));
      }
    }
    return out.stream();
  }
}
