package io.stateshift.testing;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.File;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;

/**
 * A real Spark standalone cluster on loopback: one Master and {@code workers} Workers (1 core each)
 * as child JVMs, started from a SPARK_HOME folder laid out as a Spark distribution's: {@code jars/}
 * with a link to every jar of the test class path, a {@code RELEASE} file and {@code conf/}.
 * stateshift's own classes are not in it, nor the S3A connector (hadoop-aws and the AWS SDK), so
 * executors get them only the way users ship them ({@code spark.jars}, {@code --jars}). Executors
 * are JVMs the Workers start, as in production.
 *
 * <p>Ports: the Master at {@code firstPort}, its web UI at {@code firstPort + 1} (its JSON tells
 * when the Workers have registered), Workers from {@code firstPort + 2}; drivers {@link #appConf}
 * describes use {@code firstPort + 10} and up, executors' block managers {@code firstPort + 20} and
 * up. {@link #close} stops every JVM of the cluster (executors included) and deletes its folders;
 * the logs stay in {@code logDir}.
 */
public final class StandaloneCluster implements AutoCloseable {
  private static final ObjectMapper JSON = new ObjectMapper();

  private final Path base;
  private final Path home;
  private final Path logDir;
  private final int firstPort;
  private final List<Process> daemons = new ArrayList<>();
  private final List<Process> drivers = new ArrayList<>();

  private StandaloneCluster(Path base, Path logDir, int firstPort) {
    this.base = base;
    this.home = base.resolve("spark-home");
    this.logDir = logDir;
    this.firstPort = firstPort;
  }

  /**
   * Starts the Master and the Workers in {@code base} (a folder of the test's own; deleted by
   * {@link #close}) and waits until every Worker has registered. Logs go to {@code logDir} (emptied
   * first).
   */
  public static StandaloneCluster start(Path base, Path logDir, int firstPort, int workers)
      throws Exception {
    StandaloneCluster cluster = new StandaloneCluster(base, logDir, firstPort);
    try {
      cluster.layOutSparkHome();
      cluster.startDaemons(workers);
      return cluster;
    } catch (Exception | Error e) {
      cluster.close();
      throw e;
    }
  }

  public String masterUrl() {
    return "spark://127.0.0.1:" + firstPort;
  }

  /** The folder acting as SPARK_HOME. */
  public Path sparkHome() {
    return home;
  }

  /** The class path of Spark's own JVMs: {@code conf/} and {@code jars/*}. */
  public String sparkClassPath() {
    return home.resolve("conf") + File.pathSeparator + home.resolve("jars") + File.separator + "*";
  }

  /**
   * The Spark settings of a driver on this cluster: its master, loopback addresses and ports of
   * this cluster's range, small executors (1 core, 640 MB, JIT first tier, temp files in the
   * cluster's folder) and an uncompressed event log in {@code eventLogDir}, where a test reads
   * which executor ran which task, as the history server would.
   */
  public Map<String, String> appConf(Path eventLogDir) {
    try {
      Files.createDirectories(eventLogDir);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
    Map<String, String> conf = new LinkedHashMap<>();
    conf.put("spark.master", masterUrl());
    conf.put("spark.driver.host", "127.0.0.1");
    conf.put("spark.driver.bindAddress", "127.0.0.1");
    conf.put("spark.driver.port", Integer.toString(firstPort + 10));
    conf.put("spark.driver.blockManager.port", Integer.toString(firstPort + 11));
    conf.put("spark.blockManager.port", Integer.toString(firstPort + 20));
    conf.put("spark.port.maxRetries", "9");
    conf.put("spark.executor.cores", "1");
    conf.put("spark.executor.memory", "640m");
    conf.put(
        "spark.executor.extraJavaOptions",
        "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC -Djava.io.tmpdir=" + base.resolve("tmp"));
    conf.put("spark.ui.enabled", "false");
    conf.put("spark.eventLog.enabled", "true");
    conf.put("spark.eventLog.compress", "false");
    conf.put("spark.eventLog.rolling.enabled", "false");
    conf.put("spark.eventLog.dir", eventLogDir.toUri().toString());
    return conf;
  }

  /** {@link #appConf} as {@code --conf key=value} arguments. */
  public List<String> confArgs(Map<String, String> conf) {
    List<String> args = new ArrayList<>();
    conf.forEach(
        (k, v) -> {
          args.add("--conf");
          args.add(k + "=" + v);
        });
    return args;
  }

  /**
   * Runs a driver JVM to its end: {@code mainClass} with {@code classPathFirst} before Spark's
   * jars, output to {@code log}; returns its exit code.
   */
  public int runDriver(Path log, List<Path> classPathFirst, String mainClass, List<String> args)
      throws Exception {
    List<String> command = new ArrayList<>(javaCommand("1g"));
    List<String> classPath = new ArrayList<>();
    classPathFirst.forEach(p -> classPath.add(p.toString()));
    classPath.add(sparkClassPath());
    command.add("-Duser.home=" + Files.createDirectories(base.resolve("driver-home")));
    command.add("-cp");
    command.add(String.join(File.pathSeparator, classPath));
    command.add(mainClass);
    command.addAll(args);
    Process driver = start(command, log);
    drivers.add(driver);
    if (!driver.waitFor(6, TimeUnit.MINUTES)) {
      kill(driver);
      throw new AssertionError("driver " + mainClass + " did not finish; see " + log);
    }
    return driver.exitValue();
  }

  /** The logs of the cluster's JVMs and of its executors (copied there by {@link #close}). */
  public Path logDir() {
    return logDir;
  }

  /**
   * The S3A connector's jars on the test class path (hadoop-aws and the AWS SDK bundles): what a
   * user adds with {@code --jars} to reach s3a:// from a cluster that does not have it.
   */
  public static List<Path> s3ConnectorJars() {
    List<Path> out = new ArrayList<>();
    for (String entry : System.getProperty("java.class.path").split(File.pathSeparator)) {
      Path path = Path.of(entry);
      if (isS3Connector(path)) {
        out.add(path);
      }
    }
    return out;
  }

  private static boolean isS3Connector(Path jar) {
    String name = jar.getFileName().toString();
    return name.endsWith(".jar")
        && (name.startsWith("hadoop-aws-")
            || name.startsWith("analyticsaccelerator-")
            || name.startsWith("aws-java-sdk-bundle-")
            || (name.startsWith("bundle-") && jar.toString().contains("awssdk")));
  }

  private void layOutSparkHome() throws IOException {
    deleteTree(logDir);
    Path jars = Files.createDirectories(home.resolve("jars"));
    Set<String> names = new HashSet<>();
    for (String entry : System.getProperty("java.class.path").split(File.pathSeparator)) {
      Path path = Path.of(entry);
      String name = path.getFileName().toString();
      if (!name.endsWith(".jar") || !Files.isRegularFile(path)) {
        continue; // the modules' classes and test classes: stateshift's own
      }
      if (path.toAbsolutePath().startsWith(ProjectFiles.root())
          || name.contains("stateshift")
          || name.startsWith("surefire")
          || isS3Connector(path)) {
        continue;
      }
      String link = names.add(name) ? name : names.size() + "-" + name;
      names.add(link);
      Files.createSymbolicLink(jars.resolve(link), path.toAbsolutePath());
    }
    try (Stream<Path> linked = Files.list(jars)) {
      if (linked.anyMatch(p -> p.getFileName().toString().startsWith("spark-core"))) {
        Files.writeString(home.resolve("RELEASE"), "Spark 4.2.0 (jars of the test class path)\n");
      } else {
        throw new IllegalStateException("spark-core is not on the test class path");
      }
    }
    Path conf = Files.createDirectories(home.resolve("conf"));
    Files.writeString(
        conf.resolve("log4j2.properties"),
        String.join(
            "\n",
            "rootLogger.level = warn",
            "rootLogger.appenderRef.console.ref = console",
            "appender.console.type = Console",
            "appender.console.name = console",
            "appender.console.target = SYSTEM_ERR",
            "appender.console.layout.type = PatternLayout",
            "appender.console.layout.pattern = %d{HH:mm:ss.SSS} %p %c{1}: %m%n%ex",
            "logger.deploy.name = org.apache.spark.deploy",
            "logger.deploy.level = info",
            "logger.executor.name = org.apache.spark.executor.Executor",
            "logger.executor.level = info",
            ""));
    Files.createDirectories(base.resolve("tmp"));
    Files.createDirectories(base.resolve("local"));
    Files.createDirectories(logDir);
  }

  private void startDaemons(int workers) throws Exception {
    List<String> master = new ArrayList<>(javaCommand("256m"));
    master.addAll(
        List.of(
            "-cp",
            sparkClassPath(),
            "org.apache.spark.deploy.master.Master",
            "--host",
            "127.0.0.1",
            "--port",
            Integer.toString(firstPort),
            "--webui-port",
            Integer.toString(firstPort + 1)));
    daemons.add(start(master, logDir.resolve("master.log")));
    for (int i = 0; i < workers; i++) {
      Path work = Files.createDirectories(base.resolve("work-" + i));
      List<String> worker = new ArrayList<>(javaCommand("256m"));
      worker.addAll(
          List.of(
              "-cp",
              sparkClassPath(),
              "org.apache.spark.deploy.worker.Worker",
              masterUrl(),
              "--host",
              "127.0.0.1",
              "--port",
              Integer.toString(firstPort + 2 + 2 * i),
              "--webui-port",
              Integer.toString(firstPort + 3 + 2 * i),
              "--cores",
              "1",
              "--memory",
              "1500m",
              "--work-dir",
              work.toString()));
      daemons.add(start(worker, logDir.resolve("worker-" + i + ".log")));
    }
    awaitWorkers(workers);
  }

  /** Polls the Master's JSON until {@code count} Workers are alive (each start takes seconds). */
  private void awaitWorkers(int count) throws Exception {
    HttpClient http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(2)).build();
    URI status = URI.create("http://127.0.0.1:" + (firstPort + 1) + "/json/");
    long deadline = System.nanoTime() + TimeUnit.MINUTES.toNanos(3);
    String last = "no answer";
    while (System.nanoTime() < deadline) {
      for (Process daemon : daemons) {
        if (!daemon.isAlive()) {
          throw new IllegalStateException(
              "a cluster JVM exited with " + daemon.exitValue() + "; see " + logDir);
        }
      }
      try {
        HttpResponse<String> response =
            http.send(
                HttpRequest.newBuilder(status).timeout(Duration.ofSeconds(5)).build(),
                HttpResponse.BodyHandlers.ofString());
        last = response.body();
        int alive = 0;
        for (JsonNode worker : JSON.readTree(last).path("workers")) {
          if ("ALIVE".equals(worker.path("state").asText())) {
            alive++;
          }
        }
        if (alive >= count) {
          return;
        }
      } catch (IOException e) {
        last = e.toString(); // not listening yet
      }
      Thread.sleep(500);
    }
    throw new IllegalStateException(
        "the cluster's workers did not register in 3 minutes; last status: "
            + last
            + "; see "
            + logDir);
  }

  private List<String> javaCommand(String heap) {
    return List.of(
        Path.of(System.getProperty("java.home"), "bin", "java").toString(),
        "@" + ProjectFiles.sparkJvmOptions(),
        "-Xmx" + heap,
        "-XX:TieredStopAtLevel=1",
        "-XX:+UseSerialGC",
        "-Djava.io.tmpdir=" + base.resolve("tmp"));
  }

  private Process start(List<String> command, Path log) throws IOException {
    ProcessBuilder builder =
        new ProcessBuilder(command).redirectErrorStream(true).redirectOutput(log.toFile());
    Map<String, String> env = builder.environment();
    env.keySet().removeIf(k -> k.startsWith("SPARK_"));
    env.put("SPARK_HOME", home.toString());
    env.put("SPARK_SCALA_VERSION", "2.13");
    env.put("SPARK_LOCAL_IP", "127.0.0.1");
    env.put("SPARK_LOCAL_DIRS", base.resolve("local").toString());
    env.put("SPARK_NO_DAEMONIZE", "1");
    return builder.start();
  }

  private static void kill(Process process) throws Exception {
    List<ProcessHandle> children = process.toHandle().descendants().toList();
    process.destroy();
    if (!process.waitFor(20, TimeUnit.SECONDS)) {
      process.destroyForcibly();
      process.waitFor(20, TimeUnit.SECONDS);
    }
    for (ProcessHandle child : children) {
      child.destroyForcibly();
      child.onExit().get(20, TimeUnit.SECONDS);
    }
  }

  @Override
  public void close() throws Exception {
    List<Process> all = new ArrayList<>(drivers);
    // workers before the master, so that none of them registers again
    List<Process> reversed = new ArrayList<>(daemons);
    java.util.Collections.reverse(reversed);
    all.addAll(reversed);
    for (Process process : all) {
      kill(process);
    }
    copyExecutorLogs();
    deleteTree(base);
  }

  /** Each executor's stdout and stderr, from the Workers' work folders to the log folder. */
  private void copyExecutorLogs() throws IOException {
    if (!Files.isDirectory(base)) {
      return;
    }
    try (Stream<Path> files = Files.walk(base, 4)) {
      for (Path f :
          files
              .filter(p -> p.getFileName().toString().matches("stdout|stderr"))
              .filter(
                  p ->
                      p.getParent()
                          .getParent()
                          .getParent()
                          .getFileName()
                          .toString()
                          .startsWith("work-"))
              .toList()) {
        // work-<i>/<app id>/<executor id>/stderr
        Path app = f.getParent().getParent();
        String name =
            app.getParent().getFileName()
                + "-"
                + app.getFileName()
                + "-executor-"
                + f.getParent().getFileName()
                + "."
                + f.getFileName();
        Files.createDirectories(logDir.resolve("executors"));
        Files.copy(
            f,
            logDir.resolve("executors").resolve(name),
            java.nio.file.StandardCopyOption.REPLACE_EXISTING);
      }
    }
  }

  public static void deleteTree(Path root) throws IOException {
    if (!Files.exists(root, java.nio.file.LinkOption.NOFOLLOW_LINKS)) {
      return;
    }
    try (Stream<Path> walk = Files.walk(root)) {
      for (Path p : walk.sorted(Comparator.reverseOrder()).toList()) {
        Files.deleteIfExists(p); // links are deleted, not followed
      }
    }
  }
}
