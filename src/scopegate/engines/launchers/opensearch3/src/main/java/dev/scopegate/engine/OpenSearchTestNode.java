package dev.scopegate.engine;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

import org.opensearch.Version;
import org.opensearch.common.logging.LogConfigurator;
import org.opensearch.common.settings.Settings;
import org.opensearch.common.unit.TimeValue;
import org.opensearch.env.Environment;
import org.opensearch.node.InternalSettingsPreparer;
import org.opensearch.node.Node;
import org.opensearch.plugins.Plugin;
import org.opensearch.plugins.PluginInfo;

/**
 * A single-node OpenSearch 3.x for scopegate's development and tests (Java 21+).
 *
 * <p>The 3.x twin of {@code launchers/opensearch}'s class of the same name: from 3.1 the protected
 * {@link Node} constructor takes plugin descriptors ({@link PluginInfo}) instead of plugin classes,
 * so each classpath plugin gets a descriptor built here; and the three plugin classes were renamed
 * ({@code ...ModulePlugin}). Everything else is the same.
 *
 * <p>Creating a {@link Node} directly (instead of going through OpenSearch's Bootstrap) skips the
 * production bootstrap checks, the security manager, native libraries and the refusal to run as
 * root. That is what a throwaway node on 127.0.0.1 wants. Plugins come from the classpath: the
 * class names below must all load, otherwise the launcher exits with status 2 and says which one is
 * missing (a node without the HTTP transport or the language analyzers would look healthy and then
 * fail every test in a confusing way).
 *
 * <p>Usage: {@code OpenSearchTestNode <home> [setting=value ...]}. {@code <home>} holds
 * {@code config/}, {@code data/} and {@code logs/}; with {@code node.portsfile=true} (the default
 * here) the node writes {@code logs/http.ports} once HTTP is bound. SIGTERM closes the node
 * cleanly (flushes and releases the data folder lock) before the JVM exits. A value written as
 * {@code [a,b]} is a list setting ({@code node.roles=[]} makes a coordinating-only node); with
 * {@code discovery.type=zen} and seed hosts the node joins a multi-node cluster.
 */
public final class OpenSearchTestNode extends Node {

    /** Plugins loaded from the classpath; each one is required. */
    static final List<String> PLUGIN_CLASSES = List.of(
        "org.opensearch.transport.Netty4ModulePlugin",
        "org.opensearch.analysis.common.CommonAnalysisModulePlugin",
        "org.opensearch.index.reindex.ReindexModulePlugin");

    /** Exit status when a required plugin class is not on the classpath. */
    static final int EXIT_MISSING_PLUGIN = 2;
    /** Exit status for bad arguments. */
    static final int EXIT_USAGE = 64;
    /** Exit status when the node failed to start. */
    static final int EXIT_START_FAILED = 1;

    private OpenSearchTestNode(Environment environment, Collection<Class<? extends Plugin>> plugins) {
        super(environment, descriptors(plugins), true);
    }

    /** A descriptor per classpath plugin: the server loads each by its class name. */
    static List<PluginInfo> descriptors(Collection<Class<? extends Plugin>> plugins) {
        List<PluginInfo> out = new ArrayList<>();
        for (Class<? extends Plugin> plugin : plugins) {
            out.add(new PluginInfo(plugin.getName(), "classpath plugin", "NA", Version.CURRENT,
                Runtime.version().feature() + "", plugin.getName(), null, List.of(), false));
        }
        return out;
    }

    static List<Class<? extends Plugin>> loadPlugins(List<String> names) throws ClassNotFoundException {
        List<Class<? extends Plugin>> out = new ArrayList<>();
        ClassLoader loader = OpenSearchTestNode.class.getClassLoader();
        for (String name : names) {
            Class<?> cls = Class.forName(name, false, loader);
            if (!Plugin.class.isAssignableFrom(cls)) {
                throw new ClassNotFoundException(name + " is not an OpenSearch plugin class");
            }
            out.add(cls.asSubclass(Plugin.class));
        }
        return out;
    }

    static Settings buildSettings(Path home, List<String> overrides) {
        Settings.Builder builder = Settings.builder()
            .put("path.home", home.toString())
            .put("path.data", home.resolve("data").toString())
            .put("path.logs", home.resolve("logs").toString())
            .put("cluster.name", "scopegate-test")
            .put("node.name", "scopegate-node-1")
            .put("discovery.type", "single-node")
            .put("network.host", "127.0.0.1")
            .put("http.port", "9200-9300")
            .put("transport.port", "9300-9400")
            .put("node.portsfile", true)
            // A test node lives on whatever disk it gets: never turn indices read-only on a full disk.
            .put("cluster.routing.allocation.disk.threshold_enabled", false)
            .put("action.auto_create_index", false)
            // Read the clock on every check instead of a value cached for 200 ms, so a search
            // "timeout" of a few milliseconds fires when it should (tests of partial results).
            .put("thread_pool.estimated_time_interval", "0ms")
            .put("logger.level", "WARN");
        for (String item : overrides) {
            int eq = item.indexOf('=');
            if (eq <= 0) {
                throw new IllegalArgumentException("expected setting=value, got: " + item);
            }
            String key = item.substring(0, eq).trim();
            String value = item.substring(eq + 1).trim();
            if (value.startsWith("[") && value.endsWith("]")) {
                // A list setting, e.g. node.roles=[] (a coordinating-only node) or
                // discovery.seed_hosts=[127.0.0.1:9301,127.0.0.1:9302].
                String inner = value.substring(1, value.length() - 1).trim();
                builder.putList(key, inner.isEmpty() ? List.of() : List.of(inner.split("\\s*,\\s*")));
            } else {
                builder.put(key, value);
            }
        }
        return builder.build();
    }

    public static void main(String[] args) throws Exception {
        if (args.length < 1) {
            System.err.println("usage: OpenSearchTestNode <home> [setting=value ...]");
            System.exit(EXIT_USAGE);
        }
        // Netty must not try to set the processor count itself (OpenSearch does it once).
        System.setProperty("opensearch.set.netty.runtime.available.processors", "false");

        final List<Class<? extends Plugin>> plugins;
        try {
            // Extra plugin classes (e.g. the k-NN plugin of engines/opensearch-knn), comma separated.
            List<String> names = new ArrayList<>(PLUGIN_CLASSES);
            for (String extra : System.getProperty("scopegate.extra.plugins", "").split(",")) {
                if (!extra.isBlank()) {
                    names.add(extra.trim());
                }
            }
            plugins = loadPlugins(names);
        } catch (ClassNotFoundException | LinkageError e) {
            System.err.println("FATAL: required OpenSearch plugin class is missing from the classpath: " + e.getMessage());
            System.exit(EXIT_MISSING_PLUGIN);
            return;
        }

        Path home = Paths.get(args[0]).toAbsolutePath().normalize();
        final Settings settings;
        try {
            settings = buildSettings(home, List.of(args).subList(1, args.length));
        } catch (IllegalArgumentException e) {
            System.err.println("FATAL: " + e.getMessage());
            System.exit(EXIT_USAGE);
            return;
        }
        for (String sub : new String[] {"config", "data", "logs"}) {
            Files.createDirectories(home.resolve(sub));
        }
        // A stale ports file from an earlier run must never be mistaken for this run's.
        Files.deleteIfExists(home.resolve("logs").resolve("http.ports"));
        Files.deleteIfExists(home.resolve("logs").resolve("transport.ports"));

        LogConfigurator.registerErrorListener();
        LogConfigurator.configureWithoutConfig(settings);
        String nodeName = settings.get("node.name");
        Environment environment = InternalSettingsPreparer.prepareEnvironment(
            settings, Map.of(), home.resolve("config"), () -> nodeName);
        LogConfigurator.setNodeName(nodeName);

        final OpenSearchTestNode node;
        try {
            node = new OpenSearchTestNode(environment, plugins);
            node.start();
            // One node: replicas can never be assigned, so new indices default to none and health
            // can reach green. As a cluster setting it works on 2.19 and 3.x alike.
            // A node of a multi-node cluster keeps the default (replicas can be assigned there).
            if ("single-node".equals(settings.get("discovery.type"))) {
                node.client().admin().cluster().prepareUpdateSettings()
                    .setPersistentSettings(Settings.builder().put("cluster.default_number_of_replicas", 0))
                    .get(TimeValue.timeValueSeconds(60));
            }
        } catch (Exception e) {
            System.err.println("FATAL: OpenSearch node failed to start: " + e);
            e.printStackTrace(System.err);
            System.exit(EXIT_START_FAILED);
            return;
        }

        CountDownLatch closed = new CountDownLatch(1);
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            try {
                node.close();
                if (!node.awaitClose(20, TimeUnit.SECONDS)) {
                    System.err.println("WARN: node did not close within 20s");
                }
            } catch (IOException | InterruptedException e) {
                System.err.println("WARN: error while closing the node: " + e);
            } finally {
                closed.countDown();
            }
        }, "scopegate-node-shutdown"));

        System.out.println("scopegate OpenSearch node started: home=" + home + " pid=" + ProcessHandle.current().pid());
        System.out.flush();
        closed.await();
    }
}
