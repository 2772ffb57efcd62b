package io.stateshift;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Collections;
import java.util.List;
import java.util.jar.JarFile;
import java.util.zip.ZipEntry;
import org.junit.jupiter.api.Test;

/**
 * The jars Maven builds before the tests: the runtime jar (for {@code --jars}) carries nothing that
 * could clash with what Spark ships, and the library jar's POM leaves Spark and Delta to the user's
 * runtime (for {@code --packages}).
 */
class RuntimeJarTest {
  private static List<String> entries(String property) throws Exception {
    Path jar = Path.of(System.getProperty(property, "unset"));
    assertThat(jar)
        .as("%s: run through Maven (mvn test builds the jars before the tests)", property)
        .isRegularFile();
    try (JarFile file = new JarFile(jar.toFile())) {
      return Collections.list(file.entries()).stream().map(ZipEntry::getName).toList();
    }
  }

  @Test
  void runtimeJarHoldsOnlyStateshiftClasses() throws Exception {
    List<String> entries = entries("stateshift.runtimeJar");
    assertThat(entries)
        .contains(
            "io/stateshift/StateShiftExtensions.class",
            "io/stateshift/sql/StateShiftCatalog.class");
    assertThat(entries)
        .allSatisfy(
            e ->
                assertThat(
                        e.startsWith("io/")
                            || e.startsWith("META-INF/")
                            || e.equals("stateshift-log4j2.properties"))
                    .as("unexpected entry %s: relocate it under io.stateshift.shaded", e)
                    .isTrue());
    assertThat(entries).noneMatch(e -> e.endsWith(".class") && !e.startsWith("io/stateshift/"));
  }

  @Test
  void libraryPomLeavesSparkAndDeltaToTheRuntime() throws Exception {
    String artifact = System.getProperty("stateshift.artifactId");
    assertThat(artifact)
        .isEqualTo(
            "stateshift-spark-"
                + System.getProperty("stateshift.line")
                + "_"
                + System.getProperty("stateshift.scala"));
    // the POM `mvn install` publishes (flattened): the core, compiled in, is no dependency of it
    Path published = Path.of(".flattened-pom.xml");
    assertThat(published).isRegularFile();
    {
      String text = Files.readString(published);
      var doc =
          javax.xml.parsers.DocumentBuilderFactory.newInstance()
              .newDocumentBuilder()
              .parse(
                  new java.io.ByteArrayInputStream(
                      text.getBytes(java.nio.charset.StandardCharsets.UTF_8)));
      var deps = doc.getElementsByTagName("dependency");
      assertThat(deps.getLength()).isPositive();
      for (int i = 0; i < deps.getLength(); i++) {
        var dep = (org.w3c.dom.Element) deps.item(i);
        String id = dep.getElementsByTagName("artifactId").item(0).getTextContent();
        String scope =
            dep.getElementsByTagName("scope").getLength() == 0
                ? "compile"
                : dep.getElementsByTagName("scope").item(0).getTextContent();
        // nothing a --packages user would download besides stateshift itself
        assertThat(scope).as("scope of %s", id).isIn("provided", "test");
        // Spark and Delta themselves come from the runtime (connectors the tests use are test)
        assertThat(id).as("the core is bundled, not a dependency").doesNotStartWith("stateshift-");
        if (id.startsWith("spark-sql_") || id.startsWith("delta-")) {
          assertThat(scope).as("scope of %s", id).isEqualTo("provided");
        }
      }
    }
  }
}
