package io.stateshift.testing;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.PrintStream;
import java.io.UncheckedIOException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import kafka.server.KafkaConfig;
import kafka.server.KafkaRaftServer;
import kafka.tools.StorageTool;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.common.Uuid;
import org.apache.kafka.common.utils.Time;

/**
 * A real single-node Kafka broker in KRaft mode (broker and controller in one server), in this JVM,
 * on 127.0.0.1 with free ports and a log folder of its own, formatted the way {@code kafka-storage
 * format} does it. {@link #close} stops it and deletes the folder.
 */
public final class KafkaBroker implements AutoCloseable {
  private final Path dir;
  private final KafkaRaftServer server;
  private final String bootstrap;

  private KafkaBroker(Path dir, KafkaRaftServer server, String bootstrap) {
    this.dir = dir;
    this.server = server;
    this.bootstrap = bootstrap;
  }

  public static KafkaBroker start() throws Exception {
    Path dir = Files.createTempDirectory("stateshift-kafka");
    try {
      int port = freePort();
      int controllerPort = freePort();
      Properties props = new Properties();
      props.put("process.roles", "broker,controller");
      props.put("node.id", "1");
      props.put("controller.quorum.voters", "1@127.0.0.1:" + controllerPort);
      props.put(
          "listeners",
          "PLAINTEXT://127.0.0.1:" + port + ",CONTROLLER://127.0.0.1:" + controllerPort);
      props.put("advertised.listeners", "PLAINTEXT://127.0.0.1:" + port);
      props.put("controller.listener.names", "CONTROLLER");
      props.put("inter.broker.listener.name", "PLAINTEXT");
      props.put("listener.security.protocol.map", "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT");
      props.put("log.dirs", dir.resolve("logs").toString());
      // one node: every internal topic with one replica
      props.put("offsets.topic.replication.factor", "1");
      props.put("offsets.topic.num.partitions", "1");
      props.put("transaction.state.log.replication.factor", "1");
      props.put("transaction.state.log.min.isr", "1");
      props.put("transaction.state.log.num.partitions", "1");
      props.put("group.initial.rebalance.delay.ms", "0");
      props.put("num.partitions", "1");
      props.put("auto.create.topics.enable", "false");
      Path config = dir.resolve("server.properties");
      try (var out = Files.newOutputStream(config)) {
        props.store(out, "stateshift test broker");
      }
      ByteArrayOutputStream formatOutput = new ByteArrayOutputStream();
      int formatted =
          StorageTool.execute(
              new String[] {
                "format",
                "--config",
                config.toString(),
                "--cluster-id",
                Uuid.randomUuid().toString()
              },
              new PrintStream(formatOutput, true, StandardCharsets.UTF_8));
      if (formatted != 0) {
        throw new IllegalStateException("kafka-storage format failed: " + formatOutput);
      }
      KafkaRaftServer server = new KafkaRaftServer(KafkaConfig.fromProps(props), Time.SYSTEM);
      server.startup();
      KafkaBroker broker = new KafkaBroker(dir, server, "127.0.0.1:" + port);
      broker.awaitReady();
      return broker;
    } catch (Exception | Error e) {
      deleteTree(dir);
      throw e;
    }
  }

  public String bootstrapServers() {
    return bootstrap;
  }

  /** Creates a topic with the given partitions (one replica), waiting until it is there. */
  public void createTopic(String topic, int partitions) throws Exception {
    try (Admin admin = admin()) {
      admin
          .createTopics(List.of(new NewTopic(topic, partitions, (short) 1)))
          .all()
          .get(60, TimeUnit.SECONDS);
    }
  }

  private Admin admin() {
    return Admin.create(
        Map.of(
            AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG,
            bootstrap,
            AdminClientConfig.REQUEST_TIMEOUT_MS_CONFIG,
            10_000,
            AdminClientConfig.DEFAULT_API_TIMEOUT_MS_CONFIG,
            60_000));
  }

  /** The broker has registered with its controller once the cluster reports it. */
  private void awaitReady() throws Exception {
    long deadline = System.currentTimeMillis() + 60_000;
    try (Admin admin = admin()) {
      while (true) {
        try {
          if (!admin.describeCluster().nodes().get(10, TimeUnit.SECONDS).isEmpty()) {
            return;
          }
        } catch (java.util.concurrent.ExecutionException e) {
          if (System.currentTimeMillis() > deadline) {
            throw e;
          }
        }
        if (System.currentTimeMillis() > deadline) {
          throw new IllegalStateException("the Kafka broker did not come up in 60 s");
        }
        Thread.sleep(200);
      }
    }
  }

  @Override
  public void close() {
    try {
      server.shutdown();
      server.awaitShutdown();
    } finally {
      deleteTree(dir);
    }
  }

  private static int freePort() throws IOException {
    try (ServerSocket socket = new ServerSocket(0, 1, InetAddress.getByName("127.0.0.1"))) {
      return socket.getLocalPort();
    }
  }

  private static void deleteTree(Path dir) {
    if (!Files.exists(dir)) {
      return;
    }
    try (Stream<Path> walk = Files.walk(dir)) {
      walk.sorted(Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }
}
