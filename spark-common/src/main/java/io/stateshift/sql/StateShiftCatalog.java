package io.stateshift.sql;

import java.util.Arrays;
import java.util.Locale;
import java.util.Map;
import java.util.function.Supplier;
import org.apache.spark.sql.AnalysisException;
import org.apache.spark.sql.connector.catalog.Identifier;
import org.apache.spark.sql.connector.catalog.ProcedureCatalog;
import org.apache.spark.sql.connector.catalog.procedures.UnboundProcedure;
import org.apache.spark.sql.util.CaseInsensitiveStringMap;

/**
 * stateshift's SQL procedures, registered by conf alone:
 *
 * <pre>
 * spark.sql.catalog.stateshift=io.stateshift.sql.StateShiftCatalog
 *
 * CALL stateshift.system.repartition_state(checkpoint => '/cp', partitions => 16, dry_run => true)
 * </pre>
 *
 * The procedures live in the {@code system} namespace (the catalog's default, so {@code
 * stateshift.repartition_state} works too) and call the public Java API, so their checks, messages
 * and crash safety are the command line's. Only procedures: this catalog has no tables.
 */
public final class StateShiftCatalog implements ProcedureCatalog {
  static final String NAMESPACE = "system";

  /** The procedures, named verb_state (the sink log's repair: repair_sink_log). */
  private static final Map<String, Supplier<UnboundProcedure>> PROCEDURES =
      Map.ofEntries(
          Map.entry("repartition_state", Procedures.RepartitionState::new),
          Map.entry("migrate_state", Procedures.MigrateStateProcedure::new),
          Map.entry("prepare_state", Procedures.PrepareStateProcedure::new),
          Map.entry("inspect_state", Procedures.InspectState::new),
          Map.entry("verify_state", Procedures.VerifyState::new),
          Map.entry("rollback_state", Procedures.RollbackState::new),
          Map.entry("doctor_state", Procedures.DoctorProcedure::new),
          Map.entry("history_state", Procedures.StateHistory::new),
          Map.entry("report_state", Procedures.ReportState::new),
          Map.entry("repair_sink_log", Procedures.RepairSinkLog::new),
          Map.entry("inventory_state", Procedures.InventoryState::new),
          Map.entry("read_state", StateDataProcedures.ReadStateProcedure::new),
          Map.entry("erase_state", StateDataProcedures.EraseState::new),
          Map.entry("upsert_state", StateDataProcedures.UpsertState::new),
          Map.entry("set_state", StateDataProcedures.SetState::new),
          Map.entry("evolve_state", StateDataProcedures.EvolveStateProcedure::new));

  /** Other names the procedures answer to, not listed. */
  private static final Map<String, String> ALIASES =
      Map.of("doctor", "doctor_state", "state_history", "history_state");

  private String name = "stateshift";

  @Override
  public void initialize(String name, CaseInsensitiveStringMap options) {
    this.name = name;
  }

  @Override
  public String name() {
    return name;
  }

  @Override
  public String[] defaultNamespace() {
    return new String[] {NAMESPACE};
  }

  @Override
  public UnboundProcedure loadProcedure(Identifier ident) {
    Supplier<UnboundProcedure> procedure =
        inSystemNamespace(ident.namespace())
            ? PROCEDURES.get(
                ALIASES.getOrDefault(
                    ident.name().toLowerCase(Locale.ROOT), ident.name().toLowerCase(Locale.ROOT)))
            : null;
    if (procedure == null) {
      // An AnalysisException reaches the user as it is (Spark wraps any other exception in
      // "failed to load routine" and drops its message): name the procedures that exist.
      String wanted =
          name
              + "."
              + String.join(".", ident.namespace())
              + (ident.namespace().length == 0 ? "" : ".")
              + ident.name();
      String known =
          name
              + "."
              + NAMESPACE
              + ".{"
              + String.join(", ", PROCEDURES.keySet().stream().sorted().toList())
              + "}";
      throw sneaky(
          new AnalysisException(
              "ROUTINE_NOT_FOUND",
              new scala.collection.immutable.Map.Map1<String, String>(
                  "routineName", wanted + " (stateshift's procedures are " + known + ")")));
    }
    return procedure.get();
  }

  // ProcedureCatalog's since 4.1; on 4.0 a method of this class alone
  public Identifier[] listProcedures(String[] namespace) {
    if (!inSystemNamespace(namespace)) {
      return new Identifier[0];
    }
    return PROCEDURES.keySet().stream()
        .sorted()
        .map(p -> Identifier.of(new String[] {NAMESPACE}, p))
        .toArray(Identifier[]::new);
  }

  private static boolean inSystemNamespace(String[] namespace) {
    return namespace.length == 0
        || Arrays.equals(
            new String[] {NAMESPACE},
            Arrays.stream(namespace).map(n -> n.toLowerCase(Locale.ROOT)).toArray(String[]::new));
  }

  /** Throws a checked exception the interface does not declare, as Scala callers expect. */
  @SuppressWarnings("unchecked")
  private static <E extends Throwable> RuntimeException sneaky(Throwable e) throws E {
    throw (E) e;
  }
}
