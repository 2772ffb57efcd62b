package io.stateshift.sql;

import org.apache.spark.sql.connector.catalog.CatalogPlugin;
import org.apache.spark.sql.util.CaseInsensitiveStringMap;

/**
 * stateshift's SQL procedures are not available on Spark 3.5, which has no {@code CALL} (no
 * procedure catalogs): configuring this catalog fails the first statement that loads it with a
 * message naming what to use instead, the command line and the Java API, which do the same.
 */
public final class StateShiftCatalog implements CatalogPlugin {
  static final String UNAVAILABLE =
      "stateshift's SQL procedures (CALL stateshift.system.*) need Spark 4.0 or later: Spark 3.5"
          + " has no CALL. On Spark 3.5 use the command line (./stateshift repartition, migrate,"
          + " inspect, verify, rollback, doctor, history) or the Java API"
          + " (io.stateshift.StateShift.get(spark).repartitionState(...)), and remove"
          + " spark.sql.catalog.<name>=io.stateshift.sql.StateShiftCatalog from the conf.";

  @Override
  public void initialize(String name, CaseInsensitiveStringMap options) {
    throw new UnsupportedOperationException(UNAVAILABLE);
  }

  @Override
  public String name() {
    return "stateshift";
  }
}
