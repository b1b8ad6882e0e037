"""A local multi-node OpenSearch (or Elasticsearch) cluster on 127.0.0.1 for tests and benchmarks.

``N`` data nodes (cluster-manager eligible, ``data`` and ``ingest`` roles) and
``M`` coordinating-only nodes (``node.roles: []``), one JVM each, each with its
own HTTP port, transport port, data folder and heap. Discovery goes through
``discovery.seed_hosts`` (every data node's transport port) and
``cluster.initial_cluster_manager_nodes`` (``initial_master_nodes`` on
Elasticsearch), so the first start bootstraps the cluster and a restarted node
rejoins it. Every member is a :class:`~scopegate.engines._node.LocalNode`
(the same start/stop/kill code as the single test node) in its own state
folder under the cluster's::

    <state_dir>/cluster.json        engine, cluster name, members (name, role, ports)
    <state_dir>/<member>/           node.pid, http.port, url, node.log, home/

Ports are chosen once and kept, so a member stopped or killed restarts on the
same URL and a client holding the URLs recovers by itself.

Library use (the test fixtures and ``bench/bench_cluster.py``)::

    cluster = LocalCluster(ClusterConfig(state_dir=Path(".cache/os-cluster")))
    cluster.start(clean=True)               # all members, then waits for green with every node joined
    cluster.data_urls, cluster.coordinating_urls
    cluster.kill("data-2"); cluster.restart("data-2")
    cluster.stop()

Command line: ``scopegate engine opensearch start --nodes 3 --coordinating 1``, then
``stop|status|url --cluster`` and ``kill|restart MEMBER`` (:mod:`scopegate.cli.engines`).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import pwd
import shutil
import signal
import socket
import time
from collections.abc import Sequence
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import httpx

from scopegate.backends.layout import health_rank
from scopegate.engines._node import LocalNode, NodeStatus, _cmdline, _env_path, _pid_alive, cache_root
from scopegate.engines.elasticsearch_node import ElasticsearchNode, ESNodeConfig
from scopegate.engines.opensearch_node import NodeConfig, OpenSearchNode
from scopegate.errors import EngineNodeError

Engine = Literal["opensearch", "elasticsearch"]
Role = Literal["data", "coordinating"]
ENGINES: tuple[Engine, ...] = ("opensearch", "elasticsearch")
STATE_FILE = "cluster.json"
DEFAULT_HEAP = "384m"
# Quicker than the defaults (1 s x 3 and 10 s timeouts) so a frozen node leaves the cluster
# in seconds; a killed node is noticed at once anyway (its transport connections close).
FAULT_DETECTION = (
    "cluster.fault_detection.leader_check.timeout=3s",
    "cluster.fault_detection.follower_check.timeout=3s",
)


def _default_state_dir(engine: Engine) -> Path:
    env = "SCOPEGATE_OPENSEARCH_CLUSTER_DIR" if engine == "opensearch" else "SCOPEGATE_ELASTICSEARCH_CLUSTER_DIR"
    return _env_path(env, cache_root() / f"{engine}-cluster")


def free_ports(count: int) -> list[int]:
    """``count`` distinct ports that were free on 127.0.0.1 a moment ago (all held open while choosing)."""
    with ExitStack() as stack:
        ports = []
        for _ in range(count):
            sock = stack.enter_context(socket.socket(socket.AF_INET, socket.SOCK_STREAM))
            sock.bind(("127.0.0.1", 0))
            ports.append(int(sock.getsockname()[1]))
        return ports


@dataclass(frozen=True)
class Member:
    """One node of the cluster as planned: its name, role and fixed ports."""

    name: str
    role: Role
    http_port: int
    transport_port: int

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.http_port}"

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "role": self.role,
            "http_port": self.http_port,
            "transport_port": self.transport_port,
        }


@dataclass
class ClusterConfig:
    """Shape and sizing of a local cluster. Heaps are small on purpose: 4 JVMs share a 2-core machine."""

    engine: Engine = "opensearch"
    state_dir: Path | None = None
    data_nodes: int = 3
    coordinating_nodes: int = 1
    heap: str = DEFAULT_HEAP
    java: str | None = None
    settings: tuple[str, ...] = ()  # extra ``key=value`` node settings for every member
    maven_repo: Path | None = None
    es_version: str | None = None

    def __post_init__(self) -> None:
        if self.engine not in ENGINES:
            raise EngineNodeError(f"unknown engine {self.engine!r}; known: {', '.join(ENGINES)}")
        if self.data_nodes < 1 or self.coordinating_nodes < 0:
            raise EngineNodeError("a cluster needs at least one data node and zero or more coordinating nodes")
        if self.state_dir is None:
            self.state_dir = _default_state_dir(self.engine)
        self.state_dir = Path(self.state_dir).resolve()

    @property
    def root(self) -> Path:
        assert self.state_dir is not None
        return self.state_dir

    @property
    def cluster_name(self) -> str:
        """Unique per state folder, so two clusters on one machine never merge."""
        return f"scopegate-{self.engine[:2]}-{hashlib.sha1(str(self.root).encode()).hexdigest()[:10]}"


# -- members: the single-node managers with cluster settings ----------------------------
def _discovery_settings(cfg: ClusterConfig, member: Member, members: Sequence[Member]) -> list[str]:
    data = [m for m in members if m.role == "data"]
    seeds = ",".join(f"127.0.0.1:{m.transport_port}" for m in data)
    initial = ",".join(m.name for m in data)
    bootstrap = (
        "cluster.initial_cluster_manager_nodes" if cfg.engine == "opensearch" else "cluster.initial_master_nodes"
    )
    manager_role = "cluster_manager" if cfg.engine == "opensearch" else "master"
    roles = f"[{manager_role},data,ingest]" if member.role == "data" else "[]"
    return [
        f"cluster.name={cfg.cluster_name}",
        f"node.name={member.name}",
        f"transport.port={member.transport_port}",
        f"discovery.seed_hosts=[{seeds}]",
        f"{bootstrap}=[{initial}]",
        f"node.roles={roles}",
        *FAULT_DETECTION,
        *cfg.settings,
    ]


class OpenSearchMember(OpenSearchNode):
    """An OpenSearch node of the cluster: the test launcher with discovery settings (later settings win)."""

    ready_status = "green"  # members of a cluster can hold replicas

    def __init__(self, config: NodeConfig, member: Member) -> None:
        super().__init__(config)
        self.member = member


def _opensearch_member(cfg: ClusterConfig, member: Member, members: Sequence[Member]) -> OpenSearchMember:
    settings = ["discovery.type=zen", *_discovery_settings(cfg, member, members)]
    node_cfg = NodeConfig(
        state_dir=cfg.root / member.name, heap=cfg.heap, java=cfg.java, extra_settings=tuple(settings)
    )
    if cfg.maven_repo is not None:
        node_cfg.maven_repo = cfg.maven_repo
    return OpenSearchMember(node_cfg, member)


@dataclass
class MemberESConfig(ESNodeConfig):
    """An Elasticsearch member: its own state folder, the cluster's one unpacked distribution."""

    shared_dist: Path = field(default_factory=Path)
    settings: tuple[str, ...] = ()

    @property
    def dist(self) -> Path:
        return self.shared_dist


class ElasticsearchMember(ElasticsearchNode):
    """An Elasticsearch node of the cluster.

    ``node.roles: []`` cannot be given as ``-E`` (an empty value means "default
    roles"), so each member gets its own config folder (a copy of the
    distribution's, plus an ``elasticsearch.yml`` with the list settings) through
    ``ES_PATH_CONF``.
    """

    config: MemberESConfig
    ready_status = "green"  # members of a cluster can hold replicas

    def __init__(self, config: MemberESConfig, member: Member) -> None:
        super().__init__(config)
        self.member = member

    @property
    def conf_dir(self) -> Path:
        return self.config.home / "config"

    def _is_our_process(self, pid: int) -> bool:
        args = _cmdline(pid)
        return args is not None and any(str(self.config.home) in arg for arg in args)

    def _prepare(self, *, clean: bool) -> None:
        super()._prepare(clean=clean)
        conf = self.conf_dir
        if conf.exists():
            shutil.rmtree(conf)
        shutil.copytree(self.config.dist / "config", conf)
        lines = []
        for item in self.config.settings:
            key, _, value = item.partition("=")
            if value.startswith("[") and value.endswith("]"):
                items = [v.strip() for v in value[1:-1].split(",") if v.strip()]
                lines.append(f"{key}: {json.dumps(items)}")
            else:
                lines.append(f"{key}: {json.dumps(value)}")
        (conf / "elasticsearch.yml").write_text("\n".join(lines) + "\n")
        user = self._run_user()
        if user is not None:
            entry = pwd.getpwnam(user)
            for path in (conf, *conf.rglob("*")):
                os.chown(path, entry.pw_uid, entry.pw_gid, follow_symlinks=False)

    def _settings(self, port: int) -> list[str]:
        keep = [s for s in super()._settings(port) if not s.startswith(("discovery.type=", "transport.port="))]
        return [*keep, f"transport.port={self.member.transport_port}"]

    def _command(self, port: int) -> tuple[list[str], dict[str, str] | None]:
        cmd, env = super()._command(port)
        env = dict(env or {})
        env["ES_PATH_CONF"] = str(self.conf_dir)
        return cmd, env


def _elasticsearch_member(
    cfg: ClusterConfig, member: Member, members: Sequence[Member], dist: Path
) -> ElasticsearchMember:
    settings = [s for s in _discovery_settings(cfg, member, members) if not s.startswith("transport.port=")]
    es_cfg = MemberESConfig(state_dir=cfg.root / member.name, heap=cfg.heap, java=cfg.java, shared_dist=dist)
    es_cfg.settings = tuple(settings)
    return ElasticsearchMember(es_cfg, member)


# -- the cluster ----------------------------------------------------------------------
@dataclass(frozen=True)
class ClusterHealth:
    status: str | None
    nodes: int
    detail: str = ""


class LocalCluster:
    """Start, inspect, fault and stop a local cluster (see module docstring). Safe to call twice."""

    start_timeout_s = 240.0
    poll_s = 0.5

    def __init__(self, config: ClusterConfig | None = None) -> None:
        self.config = config or ClusterConfig()
        self._members: list[Member] | None = None
        self._nodes: dict[str, LocalNode[Any]] = {}
        self._stopped_on_purpose: set[str] = set()  # members killed or stopped by kill()/stop_member()

    # -- plan ------------------------------------------------------------
    @property
    def state_file(self) -> Path:
        return self.config.root / STATE_FILE

    def exists(self) -> bool:
        """Whether a cluster was planned in this state folder (running or not)."""
        return self.state_file.is_file()

    def _load(self) -> list[Member] | None:
        try:
            data = json.loads(self.state_file.read_text())
        except (OSError, ValueError):
            return None
        if data.get("engine") != self.config.engine:
            raise EngineNodeError(f"{self.config.root} holds a {data.get('engine')} cluster, not {self.config.engine}")
        return [Member(m["name"], m["role"], int(m["http_port"]), int(m["transport_port"])) for m in data["members"]]

    def _plan(self) -> list[Member]:
        cfg = self.config
        total = cfg.data_nodes + cfg.coordinating_nodes
        ports = free_ports(2 * total)
        names = [(f"data-{i}", "data") for i in range(1, cfg.data_nodes + 1)]
        names += [(f"coord-{i}", "coordinating") for i in range(1, cfg.coordinating_nodes + 1)]
        members = [Member(n, r, ports[2 * i], ports[2 * i + 1]) for i, (n, r) in enumerate(names)]  # type: ignore[arg-type]
        cfg.root.mkdir(parents=True, exist_ok=True)
        state = {
            "engine": cfg.engine,
            "cluster_name": cfg.cluster_name,
            "heap": cfg.heap,
            "members": [m.to_dict() for m in members],
        }
        self.state_file.write_text(json.dumps(state, indent=2) + "\n")
        return members

    @property
    def members(self) -> list[Member]:
        if self._members is None:
            loaded = self._load()
            if loaded is None:
                raise EngineNodeError(f"no cluster planned in {self.config.root} (start it first)")
            self._members = loaded
        return self._members

    def member(self, name: str) -> Member:
        for m in self.members:
            if m.name == name:
                return m
        raise EngineNodeError(f"no cluster member {name!r}; members: {', '.join(m.name for m in self.members)}")

    def node(self, name: str) -> LocalNode[Any]:
        """The manager of one member (pid, url, log tail, stop)."""
        if name not in self._nodes:
            member = self.member(name)
            if self.config.engine == "opensearch":
                self._nodes[name] = _opensearch_member(self.config, member, self.members)
            else:
                self._nodes[name] = _elasticsearch_member(self.config, member, self.members, self._es_dist())
        return self._nodes[name]

    def _es_template(self) -> ElasticsearchNode:
        es_cfg = ESNodeConfig(state_dir=self.config.root / "shared", heap=self.config.heap, java=self.config.java)
        if self.config.maven_repo is not None:
            es_cfg.maven_repo = self.config.maven_repo
        if self.config.es_version:
            es_cfg.version = self.config.es_version
        return ElasticsearchNode(es_cfg)

    def _es_dist(self) -> Path:
        return self._es_template().config.dist

    @property
    def data_urls(self) -> list[str]:
        return [m.url for m in self.members if m.role == "data"]

    @property
    def coordinating_urls(self) -> list[str]:
        return [m.url for m in self.members if m.role == "coordinating"]

    @property
    def urls(self) -> list[str]:
        return [m.url for m in self.members]

    # -- lifecycle -------------------------------------------------------
    def build(self, *, force: bool = False) -> bool:
        if self.config.engine == "opensearch":
            node_cfg = NodeConfig(state_dir=self.config.root / "shared")
            if self.config.maven_repo is not None:
                node_cfg.maven_repo = self.config.maven_repo
            return OpenSearchNode(node_cfg).build(force=force)
        return self._es_template().build(force=force)

    def start(self, *, clean: bool = False, timeout_s: float | None = None, wait: bool = True) -> list[str]:
        """Start every member not running (planning the cluster on first use) and wait for green.

        ``clean`` stops a running cluster, wipes every member's data and plans fresh ports.
        Returns the URLs of all members (data nodes first).
        """
        if clean:
            if self.exists():
                self.stop()
                for m in self.members:
                    shutil.rmtree(self.config.root / m.name, ignore_errors=True)
            self.state_file.unlink(missing_ok=True)
            self._members, self._nodes = None, {}
        self.build()
        if not self.exists():
            self._members, self._nodes = self._plan(), {}
        for m in self.members:
            node = self.node(m.name)
            if node.pid() is None:
                node.start(wait=False, http_port=m.http_port, build=False)
        if wait:
            try:
                self.wait_healthy(timeout_s=timeout_s)
            except EngineNodeError:
                self.stop(grace_s=10)
                raise
        return self.urls

    def wait_healthy(
        self,
        *,
        status: str = "green",
        nodes: int | None = None,
        index: str | None = None,
        via: str | None = None,
        timeout_s: float | None = None,
    ) -> ClusterHealth:
        """Wait until health is ``status`` or better with every member joined, or exactly ``nodes`` nodes.

        ``index``: the health of that index (pattern or alias) instead of the whole cluster's.
        ``via``: ask only that member (a restarted node answers once it has joined).
        """
        exact = nodes is not None
        want = len(self.members) if nodes is None else nodes
        timeout = self.start_timeout_s if timeout_s is None else timeout_s
        deadline = time.monotonic() + timeout
        last = ClusterHealth(None, 0, "no answer yet")
        while time.monotonic() < deadline:
            for m in self.members:
                node = self.node(m.name)
                state = node.status(timeout_s=0.5)
                if not state.running and m.name not in self._stopped_on_purpose:
                    raise EngineNodeError(f"cluster member {m.name} is not running:\n{node.log_tail()}")
            last = self.health(wait_for_status=status, wait_for_nodes=want, exact=exact, index=index, via=via)
            enough = last.nodes == want if exact else last.nodes >= want
            if enough and health_rank(last.status) >= health_rank(status):
                return last
            time.sleep(self.poll_s)
        tails = "\n".join(f"--- {m.name}:\n{self.node(m.name).log_tail(8)}" for m in self.members)
        raise EngineNodeError(
            f"{self.config.engine} cluster not {status} with {want} nodes within {timeout:.0f}s "
            f"(last: {last.status}, {last.nodes} nodes, {last.detail}):\n{tails}"
        )

    def health(
        self,
        *,
        wait_for_status: str | None = None,
        wait_for_nodes: int | None = None,
        exact: bool = False,
        index: str | None = None,
        via: str | None = None,
    ) -> ClusterHealth:
        """Cluster health as seen by the first member that answers, or by member ``via`` only (waiting up
        to 2 s for the conditions)."""
        params: dict[str, str] = {"timeout": "2s"}
        if wait_for_status:
            params["wait_for_status"] = wait_for_status
        if wait_for_nodes:
            params["wait_for_nodes"] = str(wait_for_nodes) if exact else f">={wait_for_nodes}"
        detail = "no member answered"
        for m in [self.member(via)] if via else self.members:
            try:
                path = f"/_cluster/health/{index}" if index else "/_cluster/health"
                resp = httpx.get(f"{m.url}{path}", params=params, timeout=4.0)
                body = resp.json()
            except (httpx.HTTPError, ValueError) as exc:
                detail = f"{m.name}: {type(exc).__name__}"
                continue
            if isinstance(body, dict) and "status" in body:
                return ClusterHealth(str(body["status"]), int(body.get("number_of_nodes", 0)))
            detail = f"{m.name}: HTTP {resp.status_code}"
        return ClusterHealth(None, 0, detail)

    def kill(self, name: str) -> None:
        """SIGKILL one member (no clean shutdown): the failure the tests inject."""
        self._stopped_on_purpose = {*self._stopped_on_purpose, name}
        self.node(name).stop(kill=True)

    def stop_member(self, name: str, *, grace_s: float = 30.0) -> None:
        """SIGTERM one member (a clean shutdown, e.g. of the coordinating node)."""
        self._stopped_on_purpose = {*self._stopped_on_purpose, name}
        self.node(name).stop(grace_s=grace_s)

    def restart(self, name: str, *, wait: bool = True, timeout_s: float | None = None) -> None:
        """Start a stopped or killed member on its old ports; wait until it has joined and health is green.

        Health is asked of the restarted member itself: the others may not have noticed yet that it was gone.
        """
        member = self.member(name)
        node = self.node(name)
        if node.pid() is None:
            node.start(wait=False, http_port=member.http_port, build=False)
        self._stopped_on_purpose = self._stopped_on_purpose - {name}
        if wait:
            self.wait_healthy(via=name, timeout_s=timeout_s)

    def stop(self, *, grace_s: float = 30.0) -> bool:
        """Stop every member (coordinating nodes first), then SIGKILL any process still running from this
        cluster's folder (a member whose pid file was lost). Returns True if any was running."""
        any_running = False
        if self.exists():
            for m in sorted(self.members, key=lambda m: m.role != "coordinating"):
                any_running = self.node(m.name).stop(grace_s=grace_s) or any_running
        self._stopped_on_purpose = set()
        strays = self.stray_pids()
        for pid in strays:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)
        deadline = time.monotonic() + 10
        alive = strays
        while alive and time.monotonic() < deadline:
            time.sleep(0.05)
            alive = [pid for pid in alive if _pid_alive(pid)]
        return any_running or bool(strays)

    def stray_pids(self) -> list[int]:
        """JVMs (or their ``runuser`` wrappers) whose command line names this cluster's folder: the
        members' processes, so none once the cluster is stopped."""
        marker = f"{self.config.root}{os.sep}"
        found = []
        for entry in Path("/proc").iterdir():
            if not entry.name.isdigit() or int(entry.name) == os.getpid():
                continue
            args = _cmdline(int(entry.name))
            if not args or Path(args[0]).name not in ("java", "runuser"):
                continue
            if any(marker in arg for arg in args[1:]) and _pid_alive(int(entry.name)):
                found.append(int(entry.name))
        return sorted(found)

    def status(self) -> dict[str, Any]:
        members: list[dict[str, Any]] = []
        if not self.exists():
            return {"engine": self.config.engine, "planned": False, "members": members}
        for m in self.members:
            st: NodeStatus = self.node(m.name).status(timeout_s=1.0)
            members.append({**m.to_dict(), "url": m.url, "running": st.running, "pid": st.pid})
        health = self.health()
        return {
            "engine": self.config.engine,
            "planned": True,
            "cluster_name": self.config.cluster_name,
            "health": health.status,
            "nodes": health.nodes,
            "members": members,
        }
