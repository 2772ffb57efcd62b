package io.stateshift;

import static com.tngtech.archunit.lang.syntax.ArchRuleDefinition.noClasses;
import static com.tngtech.archunit.library.dependencies.SlicesRuleDefinition.slices;

import com.tngtech.archunit.core.domain.JavaClasses;
import com.tngtech.archunit.core.importer.ClassFileImporter;
import com.tngtech.archunit.core.importer.ImportOption;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * The core's boundaries: it calls Spark through Spark's public API and {@link
 * io.stateshift.checkpoint.spi.SparkLine} only, so a new Spark line is a new module; and its areas
 * (checkpoint, protocol, doctor, monitor, report, cli, demo) depend on each other one way.
 */
class LayeringTest {
  /** Spark's and RocksDB's internals: a Spark line module's business, never the core's. */
  private static final String[] SPARK_INTERNALS = {
    "org.apache.spark.sql.execution..",
    "org.apache.spark.sql.catalyst..",
    "org.apache.spark.sql.classic..",
    "org.apache.spark.sql.internal..",
    "org.apache.spark.internal..",
    "org.apache.spark.util..",
    "org.apache.spark.metrics..",
    "org.apache.spark.deploy..",
    "org.apache.spark.storage..",
    "org.apache.spark.rdd..",
    "org.rocksdb.."
  };

  private static JavaClasses core;

  @BeforeAll
  static void importCore() {
    core =
        new ClassFileImporter()
            .withImportOption(ImportOption.Predefined.DO_NOT_INCLUDE_TESTS)
            .withImportOption(ImportOption.Predefined.DO_NOT_INCLUDE_JARS)
            .importPackages("io.stateshift");
  }

  @Test
  void coreUsesNoSparkOrRocksDbInternals() {
    noClasses()
        .should()
        .dependOnClassesThat()
        .resideInAnyPackage(SPARK_INTERNALS)
        .because(
            "the core reaches Spark's internals through a SparkLine implementation only "
                + "(docs/architecture.md)")
        .check(core);
  }

  @Test
  void coreKnowsNoSparkLineModule() {
    noClasses()
        .should()
        .dependOnClassesThat()
        .resideInAnyPackage("io.stateshift.spark..", "io.stateshift.sql..")
        .check(core);
  }

  @Test
  void areasFormNoCycles() {
    slices().matching("io.stateshift.(*)..").should().beFreeOfCycles().check(core);
  }

  @Test
  void internalPackagesServeTheirOwnArea() {
    noClasses()
        .that()
        .resideOutsideOfPackages("io.stateshift.doctor..", "io.stateshift.cli..")
        .should()
        .dependOnClassesThat()
        .resideInAPackage("io.stateshift.doctor.internal..")
        .check(core);
    noClasses()
        .that()
        .resideOutsideOfPackages("io.stateshift.monitor..")
        .should()
        .dependOnClassesThat()
        .resideInAPackage("io.stateshift.monitor.internal..")
        .check(core);
  }
}
