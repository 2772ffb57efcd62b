package io.stateshift.testing;

import java.io.IOException;
import java.net.HttpURLConnection;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.URI;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.TimeUnit;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FileSystem;
import software.amazon.awssdk.auth.credentials.AwsBasicCredentials;
import software.amazon.awssdk.auth.credentials.StaticCredentialsProvider;
import software.amazon.awssdk.core.sync.RequestBody;
import software.amazon.awssdk.regions.Region;
import software.amazon.awssdk.services.s3.S3Client;
import software.amazon.awssdk.services.s3.model.S3Exception;

/**
 * A real S3 API server on loopback for the object-store tests: s3proxy (from Maven Central, copied
 * to {@code target/s3proxy/s3proxy.jar} by the build) in a JVM of its own, with its in-memory
 * {@code transient-nio2} back end, which lists directory markers as S3 does and makes a PUT with
 * {@code If-None-Match: *} atomic (s3proxy's plain {@code transient} back end refuses conditional
 * writes with 501; releases before 2.8 ignore the header). The server is a separate process, so a
 * test can SIGKILL a client JVM without touching the store, and everything it holds goes with it
 * when {@link #close} stops it.
 *
 * <p>The S3A settings it gives are per bucket ({@code fs.s3a.bucket.<bucket>.*}), so they change
 * nothing for other file systems of the shared test Spark session.
 */
public final class S3Server implements AutoCloseable {
  /** The ports given to these tests; one server per test class. */
  private static final int FIRST_PORT = 19100;

  private static final int LAST_PORT = 19199;
  private static final String ACCESS_KEY = "stateshift";
  private static final String SECRET_KEY = "stateshift-secret";

  private final Process process;
  private final int port;
  private final String bucket;
  private final Thread stopAtExit;

  private S3Server(Process process, int port, String bucket) {
    this.process = process;
    this.port = port;
    this.bucket = bucket;
    this.stopAtExit = new Thread(process::destroyForcibly, "s3proxy-stop");
    Runtime.getRuntime().addShutdownHook(stopAtExit);
  }

  /**
   * Whether the S3A connector on the test class path loads: a hadoop-aws of another Hadoop than the
   * line's does not, and the S3 tests cannot run then.
   */
  public static boolean connectorLoads() {
    try {
      Class.forName(
          "org.apache.hadoop.fs.s3a.S3AFileSystem", true, S3Server.class.getClassLoader());
      return true;
    } catch (ClassNotFoundException | LinkageError e) {
      return false;
    }
  }

  /** Why an S3 test does not run where {@link #connectorLoads} is false. */
  public static final String NO_CONNECTOR =
      "S3A does not load: a hadoop-aws of another Hadoop than this line's on the class path";

  /**
   * Whether the S3A on the test class path is on the AWS SDK v2 (hadoop-aws 3.4 and later), whose
   * client the direct requests use ({@link io.stateshift.checkpoint.S3Objects}); on the SDK v1
   * (Spark 3.5's hadoop-aws 3.3.4) S3A's rename moves the files.
   */
  public static boolean directRequests() {
    try {
      return io.stateshift.checkpoint.S3Objects.onSdkV2(
          Class.forName(
              "org.apache.hadoop.fs.s3a.S3AFileSystem", false, S3Server.class.getClassLoader()));
    } catch (ClassNotFoundException | LinkageError e) {
      return false;
    }
  }

  /** Starts a server with one empty bucket, its log and properties under {@code dir}. */
  public static S3Server start(Path dir) throws Exception {
    // beside the test classes: <module>/target/test-classes -> <module>/target/s3proxy
    Path testClasses =
        Path.of(S3Server.class.getProtectionDomain().getCodeSource().getLocation().toURI());
    Path jar = testClasses.getParent().resolve("s3proxy").resolve("s3proxy.jar");
    if (!Files.exists(jar)) {
      throw new IllegalStateException(
          jar + " is missing: the build copies it (mvn process-test-classes)");
    }
    Files.createDirectories(dir);
    IOException lastFailure = null;
    for (int attempt = 0; attempt < 5; attempt++) {
      int port = freePort();
      Path properties = dir.resolve("s3proxy-" + port + ".properties");
      Files.writeString(
          properties,
          String.join(
              "\n",
              "s3proxy.endpoint=http://127.0.0.1:" + port,
              "s3proxy.authorization=aws-v2-or-v4",
              "s3proxy.identity=" + ACCESS_KEY,
              "s3proxy.credential=" + SECRET_KEY,
              "jclouds.provider=transient-nio2",
              "jclouds.identity=local",
              "jclouds.credential=local",
              ""));
      List<String> command = new ArrayList<>();
      command.add(Path.of(System.getProperty("java.home"), "bin", "java").toString());
      command.addAll(
          List.of(
              "-Xmx512m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-cp", jar.toString()));
      command.addAll(List.of("org.gaul.s3proxy.Main", "--properties", properties.toString()));
      Path log = dir.resolve("s3proxy-" + port + ".log");
      Process process =
          new ProcessBuilder(command)
              .redirectErrorStream(true)
              .redirectOutput(log.toFile())
              .start();
      String bucket = "stateshift-" + UUID.randomUUID().toString().substring(0, 8);
      S3Server server = new S3Server(process, port, bucket);
      try {
        server.awaitListening(log);
        server.createBucket();
        server.checkConditionalCreate();
        return server;
      } catch (IOException e) {
        lastFailure = e; // the port was taken in the meantime: another one
        server.close();
      } catch (RuntimeException | Error e) {
        server.close();
        throw e;
      }
    }
    throw lastFailure;
  }

  private static int freePort() throws IOException {
    int start = FIRST_PORT + (int) (ProcessHandle.current().pid() % 50);
    for (int i = 0; i <= LAST_PORT - FIRST_PORT; i++) {
      int port = FIRST_PORT + (start - FIRST_PORT + i) % (LAST_PORT - FIRST_PORT + 1);
      try (ServerSocket probe = new ServerSocket(port, 1, InetAddress.getLoopbackAddress())) {
        return port;
      } catch (IOException taken) {
        // next
      }
    }
    throw new IOException("no free port in " + FIRST_PORT + "-" + LAST_PORT);
  }

  private void awaitListening(Path log) throws Exception {
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
    while (System.nanoTime() < deadline) {
      if (!process.isAlive()) {
        throw new IOException("s3proxy exited: " + Files.readString(log));
      }
      try {
        HttpURLConnection c =
            (HttpURLConnection) URI.create(endpoint() + "/").toURL().openConnection();
        c.setConnectTimeout(500);
        c.setReadTimeout(2000);
        c.getResponseCode(); // any answer (403 without credentials) means it serves
        c.disconnect();
        return;
      } catch (IOException notYet) {
        Thread.sleep(200);
      }
    }
    throw new IllegalStateException("s3proxy did not start in 60 s: " + Files.readString(log));
  }

  private S3Client client() {
    return S3Client.builder()
        .endpointOverride(URI.create(endpoint()))
        .region(Region.US_EAST_1)
        .forcePathStyle(true)
        .credentialsProvider(
            StaticCredentialsProvider.create(AwsBasicCredentials.create(ACCESS_KEY, SECRET_KEY)))
        .build();
  }

  private void createBucket() {
    try (S3Client s3 = client()) {
      s3.createBucket(b -> b.bucket(bucket));
    }
  }

  /** The lock relies on it: a second PUT with If-None-Match: * of one key must get 412. */
  private void checkConditionalCreate() {
    try (S3Client s3 = client()) {
      String key = "_probe/conditional";
      // the header itself: the SDK of an older Hadoop (3.4.1) has no ifNoneMatch on the request
      s3.putObject(
          b ->
              b.bucket(bucket)
                  .key(key)
                  .overrideConfiguration(o -> o.putHeader("If-None-Match", "*")),
          RequestBody.fromString("a"));
      try {
        s3.putObject(
            b ->
                b.bucket(bucket)
                    .key(key)
                    .overrideConfiguration(o -> o.putHeader("If-None-Match", "*")),
            RequestBody.fromString("b"));
        throw new IllegalStateException("s3proxy overwrote an object despite If-None-Match: *");
      } catch (S3Exception expected) {
        if (expected.statusCode() != 412) {
          throw expected;
        }
      }
      s3.deleteObject(b -> b.bucket(bucket).key(key));
    }
  }

  public String endpoint() {
    return "http://127.0.0.1:" + port;
  }

  public String bucket() {
    return bucket;
  }

  /** {@code s3a://<bucket>/<path>}. */
  public String uri(String path) {
    return "s3a://" + bucket + "/" + (path.startsWith("/") ? path.substring(1) : path);
  }

  /** The S3A settings for this server's bucket (Hadoop keys). */
  public Map<String, String> hadoopSettings() {
    Map<String, String> out = new LinkedHashMap<>();
    String prefix = "fs.s3a.bucket." + bucket + ".";
    out.put(prefix + "endpoint", endpoint());
    out.put(prefix + "endpoint.region", "us-east-1");
    out.put(prefix + "path.style.access", "true");
    out.put(prefix + "connection.ssl.enabled", "false");
    out.put(prefix + "access.key", ACCESS_KEY);
    out.put(prefix + "secret.key", SECRET_KEY);
    out.put(prefix + "create.conditional.enabled", "true");
    // a dead server fails a test in seconds, not after minutes of retries
    out.put(prefix + "attempts.maximum", "2");
    out.put(prefix + "retry.limit", "2");
    // in milliseconds, without a unit: S3A before 3.4 (Spark 3.5's 3.3.4) reads a plain number
    out.put(prefix + "connection.establish.timeout", "5000");
    return out;
  }

  /** The same as Spark settings ({@code spark.hadoop.*}), for a session or {@code --conf}. */
  public Map<String, String> sparkSettings() {
    Map<String, String> out = new LinkedHashMap<>();
    hadoopSettings().forEach((k, v) -> out.put("spark.hadoop." + k, v));
    return out;
  }

  /** {@code --conf key=value} arguments for the command line. */
  public List<String> cliConf() {
    List<String> out = new ArrayList<>();
    sparkSettings()
        .forEach(
            (k, v) -> {
              out.add("--conf");
              out.add(k + "=" + v);
            });
    return out;
  }

  /** Starts a server in {@code dir} and points the shared test session's Hadoop conf at it. */
  public static S3Server startForTestSession(Path dir) throws Exception {
    S3Server server = start(dir);
    server.applyTo(SparkTestSession.get().sparkContext().hadoopConfiguration());
    return server;
  }

  /**
   * Undoes {@link #startForTestSession}: closes the session's S3A file system, removes this
   * server's settings from its conf, and stops the server.
   */
  public void closeForTestSession() throws IOException {
    Configuration conf = SparkTestSession.get().sparkContext().hadoopConfiguration();
    fileSystem(conf).close();
    hadoopSettings().keySet().forEach(conf::unset);
    close();
  }

  /** Applies {@link #hadoopSettings} to a Hadoop configuration (the Spark context's, say). */
  public void applyTo(Configuration conf) {
    hadoopSettings().forEach(conf::set);
  }

  /** The S3A file system of this bucket, from {@code conf} with this server's settings. */
  public FileSystem fileSystem(Configuration conf) throws IOException {
    Configuration ours = new Configuration(conf);
    applyTo(ours);
    return FileSystem.get(URI.create("s3a://" + bucket + "/"), ours);
  }

  /**
   * Copies a local folder (a checkpoint built on local disk, say) to {@code path} in the bucket,
   * without Hadoop's local checksum side files ({@code .<name>.crc}).
   */
  public void upload(Path localDir, String path, Configuration conf) throws IOException {
    FileSystem s3a = fileSystem(conf);
    try (var walk = Files.walk(localDir)) {
      for (Path file : (Iterable<Path>) walk::iterator) {
        String name = file.getFileName().toString();
        if (Files.isDirectory(file) || (name.startsWith(".") && name.endsWith(".crc"))) {
          continue;
        }
        String relative = localDir.relativize(file).toString().replace('\\', '/');
        try (var out =
            s3a.create(new org.apache.hadoop.fs.Path(uri(path + "/" + relative)), true)) {
          Files.copy(file, out);
        }
      }
    }
  }

  @Override
  public void close() {
    process.destroyForcibly();
    try {
      process.waitFor(30, TimeUnit.SECONDS);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
    try {
      Runtime.getRuntime().removeShutdownHook(stopAtExit);
    } catch (IllegalStateException shuttingDown) {
      // the hook runs anyway
    }
  }
}
