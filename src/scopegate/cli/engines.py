"""``scopegate engine opensearch|elasticsearch start|stop|status|url|build``: a local node without Docker.

The same commands run as ``python -m scopegate.engines.opensearch_node ...`` (what scripts/run-tests.sh uses).
Multi-node clusters and the Keycloak identity provider are test fixtures: they live in the repository's
lab package (``python -m scopegate_lab.cluster_cli``, ``python -m scopegate_lab.keycloak_node``), which reuses
:func:`node_commands` for its own nodes.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import click

from scopegate.cli.core import CONTEXT_SETTINGS, ExitCode, Group, run
from scopegate.engines import elasticsearch_node, opensearch_node
from scopegate.engines._node import LocalNode
from scopegate.engines._releases import RELEASES, java_home_env, version_env
from scopegate.errors import EngineNodeError

NodeFactory = Callable[[str | None, str | None], LocalNode[Any]]  # (state_dir, heap) -> node
# (state_dir, heap, version, java_home) -> node: an engine whose command line takes --version/--java-home
VersionedFactory = Callable[[str | None, str | None, str | None, str | None], LocalNode[Any]]


@dataclass(frozen=True)
class Engine:
    name: str
    label: str
    summary: str
    factory: NodeFactory
    versioned: VersionedFactory | None = None  # given: the commands take --version and --java-home

    def node(
        self, state_dir: str | None, heap: str | None, version: str | None = None, java_home: str | None = None
    ) -> LocalNode[Any]:
        if self.versioned is not None:
            return self.versioned(state_dir, heap, version, java_home)
        return self.factory(state_dir, heap)


ENGINES = {
    e.name: e
    for e in (
        Engine(
            "opensearch",
            "OpenSearch",
            "A single-node OpenSearch 2.19 (or 3.x) built from Maven Central.",
            opensearch_node.node_from_options,
            opensearch_node.node_from_options,
        ),
        Engine(
            "elasticsearch",
            "Elasticsearch",
            f"A single-node Elasticsearch {elasticsearch_node.ES_VERSION} (or 9.x; integ-test distribution, "
            "Maven Central).",
            elasticsearch_node.node_from_options,
            elasticsearch_node.node_from_options,
        ),
    )
}


def node_commands(engine: Engine) -> Group:
    """The ``start|stop|status|url|build`` group of one engine."""

    @click.group(engine.name, cls=Group, context_settings=CONTEXT_SETTINGS, short_help=engine.summary)
    def group() -> None:
        pass

    group.help = f"{engine.summary} Manage the local {engine.label} node used for development and tests."
    heap_env = f"SCOPEGATE_{engine.name.upper()}_HEAP"
    state_dir_option = click.option(
        "--state-dir",
        type=click.Path(file_okay=False),
        help=f"Folder for the {engine.label} node's data, logs, pid and port files (default under .cache/).",
    )

    def where(command: Callable[..., Any]) -> Callable[..., Any]:
        """The options that say which node: ``--state-dir``, and ``--version``/``--java-home`` on a versioned
        engine."""
        if engine.versioned is not None:
            majors = RELEASES[engine.name]
            listed = ", ".join(f"{major} ({release.version})" for major, release in majors.items())
            command = click.option(
                "--java-home",
                type=click.Path(file_okay=False, exists=True),
                help=f"The JDK that runs this version (default: ${java_home_env(engine.name)}, else `java` when "
                "new enough, else the newest JDK installed).",
            )(command)
            command = click.option(
                "--version",
                "version",
                metavar="VERSION",
                help=f"{engine.label} version: {listed}, or N.x (default: ${version_env(engine.name)}, else the "
                "first). Each major keeps its own state folder.",
            )(command)
        return state_dir_option(command)

    @group.command(short_help="Build the launcher if needed and start a local node in the background.")
    @where
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
    def start(
        state_dir: str | None,
        wait: bool,
        timeout: float | None,
        clean: bool,
        port: int | None,
        heap: str | None,
        version: str | None = None,
        java_home: str | None = None,
    ) -> None:
        """Build the node if needed, start it in the background (or reuse a running one) and print
        URL_ENV=URL; exits 4 when it cannot start."""
        began = time.monotonic()
        node = engine.node(state_dir, heap, version, java_home)
        url = node.start(wait=wait, timeout_s=timeout, clean=clean, http_port=port)
        click.echo(f"{node.url_env}={url}")
        click.echo(f"node ready at {url} in {time.monotonic() - began:.1f}s", err=True)

    @group.command(short_help="Stop the local node (SIGTERM, then SIGKILL).")
    @where
    @click.option("--timeout", type=float, default=30.0, help="Seconds to wait before SIGKILL (default 30).")
    def stop(state_dir: str | None, timeout: float, version: str | None = None, java_home: str | None = None) -> None:
        """Stop the node this state folder records; prints 'stopped' or 'not running'."""
        node = engine.node(state_dir, None, version, java_home)
        click.echo("stopped" if node.stop(grace_s=timeout) else "not running")

    @group.command(short_help="Show whether the node runs, its URL and cluster health.")
    @where
    @click.option("--json", "as_json", is_flag=True, help="Print the status as JSON.")
    def status(state_dir: str | None, as_json: bool, version: str | None = None, java_home: str | None = None) -> int:
        """Print the node's pid, URL and cluster health; exits 1 unless it runs with green or yellow health."""
        s = engine.node(state_dir, None, version, java_home).status()
        if as_json:
            click.echo(json.dumps(s.to_dict()))
        else:
            click.echo(f"running={s.running} pid={s.pid} url={s.url} health={s.health} {s.detail}")
        return ExitCode.OK if s.running and s.health in ("green", "yellow") else ExitCode.FAILURE

    @group.command(short_help="Print the running node's URL (exit 4 if none).")
    @where
    def url(state_dir: str | None, version: str | None = None, java_home: str | None = None) -> None:
        """Print the running node's URL; exits 4 when no node runs."""
        node = engine.node(state_dir, None, version, java_home)
        found = node.url() if node.pid() is not None else None
        if found is None:
            raise EngineNodeError("no running node")
        click.echo(found)

    @group.command(short_help=f"Fetch/build the {engine.label} node with Maven (skipped when up to date).")
    @where
    @click.option("--force", is_flag=True, help="Rebuild even when up to date.")
    def build(state_dir: str | None, force: bool, version: str | None = None, java_home: str | None = None) -> None:
        """Fetch or build the node; exits 4 when Maven, Java or the launcher sources are missing."""
        began = time.monotonic()
        built = engine.node(state_dir, None, version, java_home).build(force=force)
        click.echo(f"built in {time.monotonic() - began:.1f}s" if built else "up to date")

    return group


@click.group(cls=Group, short_help="Run a local OpenSearch or Elasticsearch node (no Docker needed).")
def engine() -> None:
    """Run a local single-node OpenSearch or Elasticsearch, built from Maven Central, for development and
    tests (no Docker needed)."""


for _engine in ENGINES.values():
    engine.add_command(node_commands(_engine))


def run_node_cli(name: str | Engine, argv: Sequence[str] | None, *, prog_name: str) -> int:
    """``python -m scopegate.engines.<name>_node``: one engine's commands on their own (an ``Engine`` for
    nodes defined elsewhere, such as the lab's identity provider)."""
    return run(node_commands(name if isinstance(name, Engine) else ENGINES[name]), argv, prog_name=prog_name)


COMMANDS = (engine,)
