package io.stateshift.cli;

import java.io.IOException;
import java.io.InputStream;
import java.util.Properties;

/**
 * The version of stateshift and the Spark line it is built for, from a resource Maven fills in at
 * build time; and the Spark found on the class path at run time, without starting it.
 */
record BuildInfo(
    String version, String sparkVersion, String scalaVersion, String sparkOnClassPath) {
  private static final String RESOURCE = "/io/stateshift/stateshift-version.properties";
  private static final String SPARK_POM =
      "/META-INF/maven/org.apache.spark/spark-core_%s/pom.properties";

  static BuildInfo read() {
    Properties own = load(RESOURCE);
    String scala = own.getProperty("scala.binary.version", "unknown");
    Properties spark = load(String.format(SPARK_POM, scala));
    return new BuildInfo(
        own.getProperty("version", "unknown"),
        own.getProperty("spark.version", "unknown"),
        scala,
        spark.getProperty("version", "not found"));
  }

  /** The Spark line, {@code 4.2} for 4.2.0. */
  String sparkLine() {
    return io.stateshift.checkpoint.spi.SparkLines.lineOf(sparkVersion);
  }

  String text() {
    return "stateshift "
        + version
        + "\n"
        + "built for Spark "
        + sparkLine()
        + " (compiled against "
        + sparkVersion
        + ", Scala "
        + scalaVersion
        + "), Java 17+\n"
        + "Spark on the class path: "
        + sparkOnClassPath
        + "\n";
  }

  private static Properties load(String resource) {
    Properties p = new Properties();
    try (InputStream in = BuildInfo.class.getResourceAsStream(resource)) {
      if (in != null) {
        p.load(in);
      }
    } catch (IOException e) {
      // an unreadable resource reads as unknown
    }
    return p;
  }
}
