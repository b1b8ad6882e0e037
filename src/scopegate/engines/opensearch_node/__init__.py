"""Build, start, stop and inspect the local single-node OpenSearch used for development and tests.

The node is the launcher in ``scopegate/engines/launchers/opensearch`` (a ``Node`` subclass on the
OpenSearch 2.19 Maven artifacts; ``launchers/opensearch3`` for 3.x, picked by ``--version 3`` or
``SCOPEGATE_OPENSEARCH_VERSION``, on Java 21+: see :mod:`scopegate.engines._releases`), shipped in the
wheel; it is copied to and built in ``<cache>/engines/<launcher>`` (``<cache>``: ``SCOPEGATE_CACHE_DIR``,
a checkout's ``.cache``, or ``~/.cache/scopegate`` when installed). Everything it needs lives under a
state folder (default ``<cache>/opensearch-node``, ``<cache>/opensearch-3-node`` for 3.x):

- ``home/`` the node's ``path.home`` (``data/``, ``logs/``, ``config/``)
- ``node.pid``, ``http.port``, ``url`` plain files other tools can read
- ``node.log`` the JVM's stdout and stderr

Usage from a shell (``make test`` does this)::

    python -m scopegate.engines.opensearch_node start --clean --wait
    export SCOPEGATE_OPENSEARCH_URL=$(python -m scopegate.engines.opensearch_node url)
    python -m scopegate.engines.opensearch_node stop
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

from scopegate.engines._node import (
    LAUNCHERS,
    LocalNode,
    NodeLayout,
    _cmdline,
    _env_path,
    cache_root,
    configure,
    find_java,
    free_port,
)
from scopegate.engines._releases import Release, java_for, pick, state_name
from scopegate.errors import EngineNodeError

MAIN_CLASS = "dev.scopegate.engine.OpenSearchTestNode"
JAR_NAME = "opensearch-test-node.jar"
URL_ENV = "SCOPEGATE_OPENSEARCH_URL"
_STAMP = ".scopegate-build-stamp"
_EXIT_REASONS = {2: "a required OpenSearch plugin class is missing", 64: "bad launcher arguments"}


@dataclass
class NodeConfig(NodeLayout):
    """Where the launcher's sources, its build and its state live, and how the JVM is sized.

    ``engine_dir`` holds the sources (read-only: inside the installed package); they are copied to
    ``build_dir`` (default ``<cache>/engines/<name>``) and built there, beside the copies of
    ``extra_sources`` (a pom may refer to ``../opensearch/src``)."""

    # The OpenSearch release (SCOPEGATE_OPENSEARCH_VERSION, default 2.19.6): its launcher and its Java.
    release: Release = field(default_factory=lambda: pick("opensearch"))
    engine_dir: Path | None = None  # None: the release's launcher
    state_dir: Path = field(
        default_factory=lambda: _env_path(
            "SCOPEGATE_OPENSEARCH_STATE_DIR", cache_root() / state_name(pick("opensearch"))
        )
    )
    maven_repo: Path = field(default_factory=lambda: _env_path("SCOPEGATE_MAVEN_REPO", cache_root() / "m2"))
    build_dir: Path | None = None
    heap: str = field(default_factory=lambda: os.environ.get("SCOPEGATE_OPENSEARCH_HEAP", "1g"))
    java: str | None = None
    extra_settings: tuple[str, ...] = ()
    # JVM options (e.g. -Dscopegate.extra.plugins=...) and other source folders the build reads.
    jvm_options: tuple[str, ...] = ()
    extra_sources: tuple[Path, ...] = ()

    @property
    def launcher(self) -> Path:
        """The launcher's sources: ``engine_dir``, else the release's."""
        return self.engine_dir or LAUNCHERS / self.release.launcher

    def java_command(self) -> str:
        """``java``, else one new enough for the release (see :func:`~scopegate.engines._releases.java_for`)."""
        return self.java or java_for(self.release, None, find_java())


class OpenSearchNode(LocalNode[NodeConfig]):
    """Manage the local OpenSearch node (see :class:`LocalNode`). Every method is safe to call twice."""

    url_env = URL_ENV
    label = "OpenSearch"
    ready_status = "yellow"  # a single node: replicas are never assigned (see LocalNode.ready_status)
    not_built_message = "the OpenSearch launcher is not built (run with build enabled)"

    def __init__(self, config: NodeConfig | None = None) -> None:
        super().__init__(config or NodeConfig())

    # -- build -----------------------------------------------------------
    @property
    def build_dir(self) -> Path:
        """Where the sources are copied and Maven runs (``target/`` holds the jar and its libraries)."""
        return self.config.build_dir or cache_root() / "engines" / self.config.launcher.name

    @property
    def jar(self) -> Path:
        return self.build_dir / "target" / JAR_NAME

    @property
    def lib_dir(self) -> Path:
        return self.build_dir / "target" / "lib"

    def classpath(self) -> str:
        return f"{self.jar}{os.pathsep}{self.lib_dir}{os.sep}*"

    def _source_digest(self) -> str:
        digest = hashlib.sha256()
        engine = self.config.launcher
        sources = [(engine, engine / "pom.xml"), *((engine, p) for p in sorted((engine / "src").rglob("*")))]
        for root in self.config.extra_sources:
            sources += [(root.parent, p) for p in sorted((root / "src").rglob("*"))]
        for base, path in sources:
            if path.is_file():
                digest.update(str(path.relative_to(base)).encode())
                digest.update(path.read_bytes())
        return digest.hexdigest()

    def is_built(self) -> bool:
        stamp = self.build_dir / "target" / _STAMP
        if not (self.jar.is_file() and self.lib_dir.is_dir() and stamp.is_file()):
            return False
        if not any(self.lib_dir.glob("opensearch-*.jar")):
            return False
        return stamp.read_text().strip() == self._source_digest()

    def build(self, *, force: bool = False, timeout_s: float = 900.0) -> bool:
        """Build the launcher with Maven unless it is up to date. Returns True when it built."""
        if not (self.config.launcher / "pom.xml").is_file():
            raise EngineNodeError(f"launcher sources not found in {self.config.launcher}")
        if not force and self.is_built():
            return False
        mvn = shutil.which("mvn")
        if not mvn:
            raise EngineNodeError("Maven (mvn) is not installed; it is needed to build the OpenSearch launcher")
        self._copy_sources()
        self.config.maven_repo.mkdir(parents=True, exist_ok=True)
        cmd = [mvn, "-q", "-B", f"-Dmaven.repo.local={self.config.maven_repo}", "package"]
        env = dict(os.environ)
        if self.config.java or self.config.release.java > 17:  # Maven compiles for the release's Java
            env["JAVA_HOME"] = str(Path(self.config.java_command()).resolve().parents[1])
        try:
            done = subprocess.run(cmd, cwd=self.build_dir, capture_output=True, text=True, timeout=timeout_s, env=env)
        except subprocess.TimeoutExpired as exc:
            raise EngineNodeError(f"Maven build did not finish within {timeout_s:.0f}s") from exc
        if done.returncode != 0:
            tail = "\n".join((done.stdout + done.stderr).strip().splitlines()[-40:])
            raise EngineNodeError(f"Maven build failed (exit {done.returncode}):\n{tail}")
        (self.build_dir / "target" / _STAMP).write_text(self._source_digest() + "\n")
        return True

    def _copy_sources(self) -> None:
        """The launcher's sources (and extra sources) into the build folder's parent, as siblings; stale source
        files are removed, ``target/`` is kept (Maven's incremental build)."""
        for source, dest in [
            (self.config.launcher, self.build_dir),
            *((extra, self.build_dir.parent / extra.name) for extra in self.config.extra_sources),
        ]:
            if source.resolve() == dest.resolve():
                continue  # building in place (a custom build_dir)
            dest.mkdir(parents=True, exist_ok=True)
            shutil.rmtree(dest / "src", ignore_errors=True)
            for item in source.iterdir():
                if item.name in {"target", "__pycache__"}:
                    continue
                if item.is_dir():
                    shutil.copytree(item, dest / item.name, dirs_exist_ok=True)
                else:
                    shutil.copy2(item, dest / item.name)

    # -- running -------------------------------------------------------
    def _is_our_process(self, pid: int) -> bool:
        args = _cmdline(pid)
        return args is not None and MAIN_CLASS in args and str(self.config.home) in args

    def _command(self, port: int) -> tuple[list[str], dict[str, str] | None]:
        cfg = self.config
        java = cfg.java_command()
        cmd = [
            java,
            f"-Xms{cfg.heap}",
            f"-Xmx{cfg.heap}",
            "-XX:+UseG1GC",
            "-Dfile.encoding=UTF-8",
            f"-Djava.io.tmpdir={cfg.home / 'tmp'}",
            "-Dopensearch.set.netty.runtime.available.processors=false",
            "-Dlog4j2.disable.jmx=true",
            *cfg.jvm_options,
            "-cp",
            self.classpath(),
            MAIN_CLASS,
            str(cfg.home),
            f"http.port={port}",
            f"transport.port={free_port()}",
            *cfg.extra_settings,
        ]
        return cmd, None

    def _exit_message(self, code: int) -> str:
        reason = _EXIT_REASONS.get(code, f"exit status {code}")
        return f"OpenSearch node exited during start ({reason})"


KNN_PLUGINS = ("org.opensearch.painless.PainlessPlugin", "org.opensearch.knn.plugin.KNNPlugin")


def knn_node_config(state_dir: Path | None = None, *, heap: str | None = None) -> NodeConfig:
    """The k-NN node: OpenSearch 2.19.1 + opensearch-knn 2.19.1.0 (Lucene engine) + lang-painless.

    The plugin must match the server version exactly, and Maven Central serves
    opensearch-knn 2.19.1.0 (not 2.19.6), hence a second launcher build in
    ``launchers/opensearch-knn`` from the same Java source.
    """
    return NodeConfig(
        release=Release("opensearch", "2.19.1", 17, "opensearch-knn"),
        engine_dir=LAUNCHERS / "opensearch-knn",
        state_dir=state_dir or _env_path("SCOPEGATE_OPENSEARCH_KNN_STATE_DIR", cache_root() / "opensearch-knn-node"),
        heap=heap or os.environ.get("SCOPEGATE_OPENSEARCH_HEAP", "1g"),
        jvm_options=(f"-Dscopegate.extra.plugins={','.join(KNN_PLUGINS)}",),
        extra_sources=(LAUNCHERS / "opensearch",),
    )


# -- command line ---------------------------------------------------------


def node_from_options(
    state_dir: str | Path | None = None,
    heap: str | None = None,
    version: str | None = None,
    java_home: str | Path | None = None,
) -> OpenSearchNode:
    """The node manager for the command line's ``--state-dir``, ``--heap``, ``--version`` and ``--java-home``
    (each None: the environment's or the default)."""
    release = pick("opensearch", version)
    config = NodeConfig(release=release)
    if version:
        config.state_dir = _env_path("SCOPEGATE_OPENSEARCH_STATE_DIR", cache_root() / state_name(release))
    if java_home:
        config.java = java_for(release, java_home, find_java())
    return OpenSearchNode(configure(config, state_dir=state_dir, heap=heap))
