"""A local single-node Elasticsearch for tests, from Maven Central's integ-test distribution.

``org.elasticsearch.distribution.integ-test-zip:elasticsearch`` is a real,
minimal Elasticsearch (core, transport-netty4, x-pack-core/security; no
analysis-common, no rest-root, no reindex). The default is ``8.19.21`` on Java 17, which the 9.x
client talks to in REST compatibility mode 8 (see :mod:`scopegate.backends.elasticsearch`);
``--version 9`` or ``SCOPEGATE_ELASTICSEARCH_VERSION=9`` runs the 9.x zip (also on Maven Central)
on Java 21+, in its own state folder (see :mod:`scopegate.engines._releases`).

Elasticsearch refuses to run as root. When this process is root, the node runs
as a dedicated system user (created with ``useradd`` if missing) via
``runuser``; otherwise it runs as the current user. Layout under the state
folder (default ``<cache>/elasticsearch-node``, ``<cache>/elasticsearch-9-node`` for 9.x, see
:func:`scopegate.engines._node.cache_root`): ``dist/`` (unpacked zip), ``home/data``, ``home/logs``,
``node.pid``, ``http.port``, ``url``, ``node.log``.

Usage::

    python -m scopegate.engines.elasticsearch_node start --clean --wait
    export SCOPEGATE_ELASTICSEARCH_URL=$(python -m scopegate.engines.elasticsearch_node url)
    python -m scopegate.engines.elasticsearch_node stop
"""

from __future__ import annotations

import os
import pwd
import stat
import subprocess
from collections.abc import Collection
from dataclasses import dataclass, field
from pathlib import Path

from scopegate.engines._node import (
    LocalNode,
    NodeLayout,
    _cmdline,
    _env_path,
    cache_root,
    configure,
    find_java,
    free_port,
    maven_fetch,
    unpack_zip,
)
from scopegate.engines._releases import RELEASES, java_for, pick, state_name
from scopegate.errors import EngineNodeError

ES_VERSION = RELEASES["elasticsearch"]["8"].version
ARTIFACT = f"org.elasticsearch.distribution.integ-test-zip:elasticsearch:{ES_VERSION}:zip"
URL_ENV = "SCOPEGATE_ELASTICSEARCH_URL"
RUN_USER = "scopegate-es"


@dataclass
class ESNodeConfig(NodeLayout):
    state_dir: Path = field(
        default_factory=lambda: _env_path(
            "SCOPEGATE_ELASTICSEARCH_STATE_DIR", cache_root() / state_name(pick("elasticsearch"))
        )
    )
    maven_repo: Path = field(default_factory=lambda: _env_path("SCOPEGATE_MAVEN_REPO", cache_root() / "m2"))
    heap: str = field(default_factory=lambda: os.environ.get("SCOPEGATE_ELASTICSEARCH_HEAP", "512m"))
    java: str | None = None
    # SCOPEGATE_ELASTICSEARCH_VERSION (a major or an exact version), default 8.19.21.
    version: str = field(default_factory=lambda: pick("elasticsearch").version)

    def java_command(self) -> str:
        """``java``, else one new enough for the version (see :func:`~scopegate.engines._releases.java_for`)."""
        return self.java or java_for(pick("elasticsearch", self.version), None, find_java())

    @property
    def dist(self) -> Path:
        return self.state_dir / "dist" / f"elasticsearch-{self.version}"


def _java_home(java: str) -> str:
    return str(Path(os.path.realpath(java)).parents[1])


class ElasticsearchNode(LocalNode[ESNodeConfig]):
    """Manage one local Elasticsearch node; same interface as :class:`OpenSearchNode`."""

    url_env = URL_ENV
    label = "Elasticsearch"
    start_timeout_s = 180.0
    start_attempts = 1
    # discovery.type=single-node: replicas are never assigned, so an index with replicas (the engine's
    # default of 1) stays yellow; waiting for green would time out and kill a node holding data.
    ready_status = "yellow"
    not_built_message = "the Elasticsearch distribution is not unpacked (run with build enabled)"
    poll_s = 0.5
    process_group = True  # runuser, the CLI launcher and the server share the session

    def __init__(self, config: ESNodeConfig | None = None) -> None:
        super().__init__(config or ESNodeConfig())

    # -- fetch ("build") ----------------------------------------------------
    @property
    def zip_path(self) -> Path:
        group = "org/elasticsearch/distribution/integ-test-zip/elasticsearch"
        return self.config.maven_repo / group / self.config.version / f"elasticsearch-{self.config.version}.zip"

    def is_built(self) -> bool:
        return (self.config.dist / "bin" / "elasticsearch").is_file()

    def build(self, *, force: bool = False, timeout_s: float = 900.0) -> bool:
        """Download the distribution with Maven and unpack it, unless already there."""
        if self.is_built() and not force:
            return False
        artifact = ARTIFACT.replace(ES_VERSION, self.config.version)
        maven_fetch(artifact, self.zip_path, self.config.maven_repo, label="Elasticsearch", timeout_s=timeout_s)
        unpack_zip(self.zip_path, self.config.dist.parent)
        return True

    # -- running -------------------------------------------------------
    def _is_our_process(self, pid: int) -> bool:
        args = _cmdline(pid)
        return args is not None and any(str(self.config.dist) in arg for arg in args)

    def _run_user(self) -> str | None:
        """The user the node runs as when we are root (created if missing), else None."""
        if os.geteuid() != 0:
            return None
        try:
            pwd.getpwnam(RUN_USER)
        except KeyError:
            done = subprocess.run(
                ["useradd", "--system", "--no-create-home", "--shell", "/usr/sbin/nologin", RUN_USER],
                capture_output=True,
                text=True,
                timeout=60,
            )
            if done.returncode != 0:
                raise EngineNodeError(
                    f"cannot create user {RUN_USER} for Elasticsearch: {done.stderr.strip()}"
                ) from None
        return RUN_USER

    def blocked_folder(self, path: Path) -> Path | None:
        """The folder on the way to ``path`` that the node's run user cannot enter (the node runs as
        another user only when started by root); None when that user gets there."""
        user = self._run_user()
        if user is None:
            return None
        entry = pwd.getpwnam(user)
        return first_closed_folder(path, entry.pw_uid, set(os.getgrouplist(user, entry.pw_gid)))

    def _prepare(self, *, clean: bool) -> None:
        super()._prepare(clean=clean)
        cfg = self.config
        for sub in ("data", "logs"):
            (cfg.home / sub).mkdir(parents=True, exist_ok=True)
        user = self._run_user()
        if user is not None:
            entry = pwd.getpwnam(user)
            for root in (cfg.dist, cfg.home):
                for path in (root, *root.rglob("*")):
                    os.chown(path, entry.pw_uid, entry.pw_gid, follow_symlinks=False)
            # The user must be able to reach the folders on the way down.
            for parent in (cfg.state_dir, cfg.dist.parent):
                parent.chmod(parent.stat().st_mode | 0o711)
            # Folders above the state folder are the caller's: said, not changed (a mktemp folder is 0700).
            # Below it everything was just opened up, so the state folder is the one path to check.
            closed = self.blocked_folder(cfg.state_dir)
            if closed is not None:
                info = closed.stat()
                raise EngineNodeError(
                    f"Elasticsearch refuses to run as root, so it runs as {user}, who cannot enter {closed} "
                    f"(mode {stat.filemode(info.st_mode)}, owner uid {info.st_uid}) on the way to "
                    f"{cfg.state_dir}: give that folder o+x (chmod o+x {closed}), or keep the node's state "
                    "where that user can reach it (--state-dir, or SCOPEGATE_CACHE_DIR)"
                )

    def _settings(self, port: int) -> list[str]:
        """The ``-E`` settings of a start on ``port`` (a cluster member replaces the discovery ones)."""
        cfg = self.config
        return [
            "discovery.type=single-node",
            "network.host=127.0.0.1",
            f"http.port={port}",
            f"transport.port={free_port()}",
            "xpack.security.enabled=false",
            f"path.data={cfg.home / 'data'}",
            f"path.logs={cfg.home / 'logs'}",
            "cluster.name=scopegate-es-test",
            "cluster.routing.allocation.disk.threshold_enabled=false",
            "action.auto_create_index=false",
            "thread_pool.estimated_time_interval=0ms",
        ]

    def _command(self, port: int) -> tuple[list[str], dict[str, str] | None]:
        cfg = self.config
        java = cfg.java_command()
        cmd = [str(cfg.dist / "bin" / "elasticsearch")]
        for item in self._settings(port):
            cmd += ["-E", item]
        user = self._run_user()  # made by _prepare
        if user is not None:
            cmd = ["runuser", "-u", user, "--", *cmd]
        env = {
            **os.environ,
            "ES_JAVA_HOME": _java_home(java),
            "ES_JAVA_OPTS": f"-Xms{cfg.heap} -Xmx{cfg.heap}",
            "ES_TMPDIR": str(cfg.home / "tmp"),
        }
        env.pop("JAVA_HOME", None)
        return cmd, env

    def _abort_start(self, pid: int) -> None:
        self.stop(grace_s=10)


def first_closed_folder(path: Path, uid: int, gids: Collection[int], *, below: Path = Path("/")) -> Path | None:
    """The first existing folder on the way from ``below`` (default ``/``) down to ``path`` that user
    ``uid`` (in groups ``gids``) cannot pass through (no execute bit for it); None when it reaches ``path``."""
    if uid == 0:
        return None
    path, below = Path(os.path.abspath(path)), Path(os.path.abspath(below))
    for folder in (*reversed(path.parents), path):
        if folder != below and below not in folder.parents:
            continue
        try:
            info = folder.stat()
        except FileNotFoundError:
            return None  # created later by the node's owner, inside a folder it reaches
        if not stat.S_ISDIR(info.st_mode):
            continue
        if info.st_uid == uid:
            bit = stat.S_IXUSR
        elif info.st_gid in gids:
            bit = stat.S_IXGRP
        else:
            bit = stat.S_IXOTH
        if not info.st_mode & bit:
            return folder
    return None


def node_from_options(
    state_dir: str | Path | None = None,
    heap: str | None = None,
    version: str | None = None,
    java_home: str | Path | None = None,
) -> ElasticsearchNode:
    """The node manager for the command line's ``--state-dir``, ``--heap``, ``--version`` and ``--java-home``
    (each None: the environment's or the default)."""
    release = pick("elasticsearch", version)
    config = ESNodeConfig(version=release.version)
    if version:
        config.state_dir = _env_path("SCOPEGATE_ELASTICSEARCH_STATE_DIR", cache_root() / state_name(release))
    if java_home:
        config.java = java_for(release, java_home, find_java())
    return ElasticsearchNode(configure(config, state_dir=state_dir, heap=heap))
