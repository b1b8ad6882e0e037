"""``scopegate engine opensearch|elasticsearch|keycloak start|stop|status|url|build``: local nodes by hand.

The same commands run as ``python -m scopegate.engines.opensearch_node ...`` (what scripts/run-tests.sh uses).
``start --nodes N [--coordinating M]`` starts a local multi-node cluster instead
(:mod:`scopegate.engines.cluster`); ``stop|status|url --cluster`` and ``kill|restart MEMBER`` manage it.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import click

from scopegate.cli.core import CONTEXT_SETTINGS, ExitCode, Group, echo_json, run
from scopegate.engines import elasticsearch_node, keycloak_node, opensearch_node
from scopegate.engines._node import LocalNode
from scopegate.engines.cluster import DEFAULT_HEAP, ClusterConfig, LocalCluster
from scopegate.errors import EngineNodeError

NodeFactory = Callable[[str | None, str | None], LocalNode[Any]]  # (state_dir, heap) -> node


@dataclass(frozen=True)
class Engine:
    name: str
    label: str
    summary: str
    factory: NodeFactory


ENGINES = {
    e.name: e
    for e in (
        Engine(
            "opensearch",
            "OpenSearch",
            "A single-node OpenSearch 2.19 built from Maven Central.",
            opensearch_node.node_from_options,
        ),
        Engine(
            "elasticsearch",
            "Elasticsearch",
            f"A single-node Elasticsearch {elasticsearch_node.ES_VERSION} (integ-test distribution, Maven Central).",
            elasticsearch_node.node_from_options,
        ),
        Engine(
            "keycloak",
            "Keycloak",
            f"A local Keycloak {keycloak_node.KEYCLOAK_VERSION} (the identity provider of the tests, Maven Central).",
            keycloak_node.node_from_options,
        ),
    )
}

CLUSTER_ENGINES = ("opensearch", "elasticsearch")


def _cluster(
    engine: Engine, state_dir: str | None, nodes: int = 3, coordinating: int = 1, heap: str | None = None
) -> LocalCluster:
    if engine.name not in CLUSTER_ENGINES:
        raise click.UsageError(f"{engine.label} runs as one node here; clusters are for {', '.join(CLUSTER_ENGINES)}")
    return LocalCluster(
        ClusterConfig(
            engine=engine.name,  # type: ignore[arg-type]
            state_dir=Path(state_dir) if state_dir else None,
            data_nodes=nodes,
            coordinating_nodes=coordinating,
            heap=heap or DEFAULT_HEAP,
        )
    )


def node_commands(engine: Engine) -> Group:
    """The ``start|stop|status|url|build`` group of one engine."""

    @click.group(engine.name, cls=Group, context_settings=CONTEXT_SETTINGS, short_help=engine.summary)
    def group() -> None:
        pass

    group.help = f"{engine.summary} Manage the local {engine.label} node used for development and tests."
    heap_env = f"SCOPEGATE_{engine.name.upper()}_HEAP"
    state_dir = click.option(
        "--state-dir",
        type=click.Path(file_okay=False),
        help=f"Folder for the {engine.label} node's data, logs, pid and port files (default under .cache/).",
    )
    cluster_flag = click.option(
        "--cluster", "in_cluster", is_flag=True, help="The local cluster (started with --nodes) instead of the node."
    )

    @group.command(short_help="Build the launcher if needed and start a local node in the background.")
    @state_dir
    @click.option(
        "--wait/--no-wait",
        default=True,
        help="Wait until it is ready: green, or yellow on a single node, whose replicas never start (default: yes).",
    )
    @click.option(
        "--timeout", type=float, help="Seconds to wait until it is ready (default: the engine's, 120 s or more)."
    )
    @click.option("--clean", is_flag=True, help="Delete the node's data folder before starting.")
    @click.option("--port", type=click.IntRange(1, 65535), help="HTTP port (default: a free port).")
    @click.option("--heap", help=f"JVM heap, e.g. 1g (default: ${heap_env}, else the engine's default).")
    @click.option(
        "--nodes",
        type=click.IntRange(min=1),
        default=1,
        help="Data nodes: more than 1 starts a local cluster (default 1: the single test node).",
    )
    @click.option(
        "--coordinating",
        type=click.IntRange(min=0),
        default=None,
        help="Coordinating-only nodes of a cluster (default 1 with --nodes > 1).",
    )
    def start(
        state_dir: str | None,
        wait: bool,
        timeout: float | None,
        clean: bool,
        port: int | None,
        heap: str | None,
        nodes: int,
        coordinating: int | None,
    ) -> None:
        """Build the node if needed, start it in the background (or reuse a running one) and print
        URL_ENV=URL; exits 4 when it cannot start. With --nodes > 1 (or --coordinating): a cluster of data
        nodes and coordinating-only nodes on 127.0.0.1 (heap 384m each unless --heap), state in
        .cache/<engine>-cluster; prints the data and the coordinating nodes' URLs once it is green."""
        began = time.monotonic()
        if nodes > 1 or coordinating:
            if port is not None:
                raise click.UsageError("--port is for a single node; a cluster picks its ports")
            cluster = _cluster(engine, state_dir, nodes, 1 if coordinating is None else coordinating, heap)
            cluster.start(clean=clean, timeout_s=max(timeout or 0.0, LocalCluster.start_timeout_s), wait=wait)
            click.echo(f"SCOPEGATE_CLUSTER_DATA_URLS={','.join(cluster.data_urls)}")
            click.echo(f"SCOPEGATE_CLUSTER_COORDINATING_URLS={','.join(cluster.coordinating_urls)}")
            click.echo(f"cluster of {len(cluster.members)} nodes ready in {time.monotonic() - began:.1f}s", err=True)
            return
        node = engine.factory(state_dir, heap)
        url = node.start(wait=wait, timeout_s=timeout, clean=clean, http_port=port)
        click.echo(f"{node.url_env}={url}")
        click.echo(f"node ready at {url} in {time.monotonic() - began:.1f}s", err=True)

    @group.command(short_help="Stop the local node (SIGTERM, then SIGKILL).")
    @state_dir
    @click.option("--timeout", type=float, default=30.0, help="Seconds to wait before SIGKILL (default 30).")
    @cluster_flag
    def stop(state_dir: str | None, timeout: float, in_cluster: bool) -> None:
        """Stop the node this state folder records (--cluster: every member); prints 'stopped' or 'not running'."""
        target = _cluster(engine, state_dir) if in_cluster else engine.factory(state_dir, None)
        click.echo("stopped" if target.stop(grace_s=timeout) else "not running")

    @group.command(short_help="Show whether the node runs, its URL and cluster health.")
    @state_dir
    @click.option("--json", "as_json", is_flag=True, help="Print the status as JSON.")
    @cluster_flag
    def status(state_dir: str | None, as_json: bool, in_cluster: bool) -> int:
        """Print the node's pid, URL and cluster health; exits 1 unless it runs with green or yellow health.
        With --cluster: every member (name, role, ports, pid) and the cluster's health, as JSON."""
        if in_cluster:
            cluster_status = _cluster(engine, state_dir).status()
            echo_json(cluster_status)
            return ExitCode.OK if cluster_status.get("health") in ("green", "yellow") else ExitCode.FAILURE
        s = engine.factory(state_dir, None).status()
        if as_json:
            click.echo(json.dumps(s.to_dict()))
        else:
            click.echo(f"running={s.running} pid={s.pid} url={s.url} health={s.health} {s.detail}")
        return ExitCode.OK if s.running and s.health in ("green", "yellow") else ExitCode.FAILURE

    @group.command(short_help="Print the running node's URL (exit 4 if none).")
    @state_dir
    @cluster_flag
    @click.option(
        "--role",
        type=click.Choice(["data", "coordinating"]),
        help="With --cluster: only the data or the coordinating nodes' URLs (default: all).",
    )
    def url(state_dir: str | None, in_cluster: bool, role: str | None) -> None:
        """Print the running node's URL; exits 4 when no node runs. With --cluster: the members' URLs,
        comma-separated."""
        if in_cluster:
            cluster = _cluster(engine, state_dir)
            urls = {"data": cluster.data_urls, "coordinating": cluster.coordinating_urls}.get(role or "", cluster.urls)
            click.echo(",".join(urls))
            return
        node = engine.factory(state_dir, None)
        found = node.url() if node.pid() is not None else None
        if found is None:
            raise EngineNodeError("no running node")
        click.echo(found)

    @group.command(short_help=f"Fetch/build the {engine.label} node with Maven (skipped when up to date).")
    @state_dir
    @click.option("--force", is_flag=True, help="Rebuild even when up to date.")
    def build(state_dir: str | None, force: bool) -> None:
        """Fetch or build the node; exits 4 when Maven, Java or the launcher sources are missing."""
        began = time.monotonic()
        built = engine.factory(state_dir, None).build(force=force)
        click.echo(f"built in {time.monotonic() - began:.1f}s" if built else "up to date")

    member = click.argument("member")

    @group.command(short_help="SIGKILL one member of the local cluster (failure testing).")
    @state_dir
    @member
    def kill(state_dir: str | None, member: str) -> None:
        """kill -9 the cluster member MEMBER (e.g. data-2): no clean shutdown."""
        _cluster(engine, state_dir).kill(member)
        click.echo(f"killed {member}")

    @group.command(short_help="Start a stopped or killed cluster member and wait for green.")
    @state_dir
    @member
    @click.option("--timeout", type=float, default=LocalCluster.start_timeout_s, help="Seconds to wait for green.")
    def restart(state_dir: str | None, member: str, timeout: float) -> None:
        """Start cluster member MEMBER again on its old ports and wait until it has joined and health is green."""
        _cluster(engine, state_dir).restart(member, timeout_s=timeout)
        click.echo(f"{member} is back; the cluster is green")

    return group


@click.group(cls=Group, short_help="Run a local engine node or identity provider for development and tests.")
def engine() -> None:
    """Run a local search engine node (OpenSearch or Elasticsearch) or identity provider (Keycloak) for
    development and tests."""


for _engine in ENGINES.values():
    engine.add_command(node_commands(_engine))


def run_node_cli(name: str, argv: Sequence[str] | None, *, prog_name: str) -> int:
    """``python -m scopegate.engines.<name>_node``: one engine's commands on their own."""
    return run(node_commands(ENGINES[name]), argv, prog_name=prog_name)


COMMANDS = (engine,)
