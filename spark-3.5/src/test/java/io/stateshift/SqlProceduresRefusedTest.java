package io.stateshift;

import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.stateshift.testing.SparkTestSession;
import org.apache.spark.sql.SparkSession;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

/**
 * Spark 3.5 has no {@code CALL}: a session configured with stateshift's SQL procedures' catalog
 * fails the first statement that loads it, naming the command line and the API instead.
 */
class SqlProceduresRefusedTest {
  @Test
  @Tag("cover")
  void theProceduresCatalogFailsNamingTheCommandLineAndTheApi() {
    SparkSession spark = SparkTestSession.get().newSession();
    spark.conf().set("spark.sql.catalog.stateshift", "io.stateshift.sql.StateShiftCatalog");
    assertThatThrownBy(() -> spark.sql("SHOW NAMESPACES IN stateshift").collectAsList())
        .isInstanceOf(UnsupportedOperationException.class)
        .hasMessageContaining("need Spark 4.0 or later")
        .hasMessageContaining("./stateshift repartition")
        .hasMessageContaining("StateShift.get(spark).repartitionState");
  }
}
