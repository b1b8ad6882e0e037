"""``python -m scopegate_lab.cluster_cli ENGINE start|stop|status|url|kill|restart``: local multi-node clusters.

A test fixture (the cluster suite and bench_cluster.py), so it lives in the lab, not in the wheel.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from pathlib import Path

import click

from scopegate.cli.core import CONTEXT_SETTINGS, ExitCode, Group, echo_json, run
from scopegate_lab.cluster import DEFAULT_HEAP, ClusterConfig, LocalCluster

ENGINES = ("opensearch", "elasticsearch")


def _cluster(
    engine: str, state_dir: str | None, nodes: int = 3, coordinating: int = 1, heap: str | None = None
) -> LocalCluster:
    return LocalCluster(
        ClusterConfig(
            engine=engine,  # type: ignore[arg-type]
            state_dir=Path(state_dir) if state_dir else None,
            data_nodes=nodes,
            coordinating_nodes=coordinating,
            heap=heap or DEFAULT_HEAP,
        )
    )


state_dir_option = click.option(
    "--state-dir", type=click.Path(file_okay=False), help="Folder for the cluster's state (default under .cache/)."
)
member_argument = click.argument("member")


@click.group(cls=Group, context_settings=CONTEXT_SETTINGS)
@click.argument("engine", type=click.Choice(ENGINES))
@click.pass_context
def cluster(ctx: click.Context, engine: str) -> None:
    """A local cluster of ENGINE data nodes and coordinating-only nodes on 127.0.0.1."""
    ctx.obj = engine


@cluster.command(short_help="Start the cluster (or reuse a running one) and wait for green.")
@state_dir_option
@click.option("--nodes", type=click.IntRange(min=1), default=3, help="Data nodes (default 3).")
@click.option("--coordinating", type=click.IntRange(min=0), default=1, help="Coordinating-only nodes (default 1).")
@click.option("--heap", help=f"JVM heap of each member (default {DEFAULT_HEAP}).")
@click.option("--timeout", type=float, help="Seconds to wait for green.")
@click.option("--clean", is_flag=True, help="Delete the members' data before starting.")
@click.option("--wait/--no-wait", default=True, help="Wait for green health (default: yes).")
@click.pass_obj
def start(
    engine: str,
    state_dir: str | None,
    nodes: int,
    coordinating: int,
    heap: str | None,
    timeout: float | None,
    clean: bool,
    wait: bool,
) -> None:
    """Start the members and print the data and the coordinating nodes' URLs once the cluster is green."""
    began = time.monotonic()
    target = _cluster(engine, state_dir, nodes, coordinating, heap)
    target.start(clean=clean, timeout_s=max(timeout or 0.0, LocalCluster.start_timeout_s), wait=wait)
    click.echo(f"SCOPEGATE_CLUSTER_DATA_URLS={','.join(target.data_urls)}")
    click.echo(f"SCOPEGATE_CLUSTER_COORDINATING_URLS={','.join(target.coordinating_urls)}")
    click.echo(f"cluster of {len(target.members)} nodes ready in {time.monotonic() - began:.1f}s", err=True)


@cluster.command(short_help="Stop every member (SIGTERM, then SIGKILL).")
@state_dir_option
@click.option("--timeout", type=float, default=30.0, help="Seconds to wait before SIGKILL (default 30).")
@click.pass_obj
def stop(engine: str, state_dir: str | None, timeout: float) -> None:
    """Stop every member; prints 'stopped' or 'not running'."""
    click.echo("stopped" if _cluster(engine, state_dir).stop(grace_s=timeout) else "not running")


@cluster.command(short_help="Every member and the cluster's health, as JSON.")
@state_dir_option
@click.pass_obj
def status(engine: str, state_dir: str | None) -> int:
    """Print every member (name, role, ports, pid) and the health; exits 1 unless green or yellow."""
    found = _cluster(engine, state_dir).status()
    echo_json(found)
    return ExitCode.OK if found.get("health") in ("green", "yellow") else ExitCode.FAILURE


@cluster.command(short_help="The members' URLs, comma-separated.")
@state_dir_option
@click.option("--role", type=click.Choice(["data", "coordinating"]), help="Only the data or coordinating nodes.")
@click.pass_obj
def url(engine: str, state_dir: str | None, role: str | None) -> None:
    """Print the members' URLs, comma-separated."""
    target = _cluster(engine, state_dir)
    urls = {"data": target.data_urls, "coordinating": target.coordinating_urls}.get(role or "", target.urls)
    click.echo(",".join(urls))


@cluster.command(short_help="SIGKILL one member (failure testing).")
@state_dir_option
@member_argument
@click.pass_obj
def kill(engine: str, state_dir: str | None, member: str) -> None:
    """kill -9 the member MEMBER (e.g. data-2): no clean shutdown."""
    _cluster(engine, state_dir).kill(member)
    click.echo(f"killed {member}")


@cluster.command(short_help="Start a stopped or killed member and wait for green.")
@state_dir_option
@member_argument
@click.option("--timeout", type=float, default=LocalCluster.start_timeout_s, help="Seconds to wait for green.")
@click.pass_obj
def restart(engine: str, state_dir: str | None, member: str, timeout: float) -> None:
    """Start member MEMBER again on its old ports and wait until it has joined and health is green."""
    _cluster(engine, state_dir).restart(member, timeout_s=timeout)
    click.echo(f"{member} is back; the cluster is green")


def main(argv: Sequence[str] | None = None) -> int:
    return run(cluster, argv, prog_name="python -m scopegate_lab.cluster_cli")


if __name__ == "__main__":
    raise SystemExit(main())
