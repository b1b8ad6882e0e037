"""Cluster benchmark: one node vs a 3+1 node cluster, routing by tenant vs not, p95 through a node failure.

Run:  .venv/bin/python bench/bench_cluster.py [--quick] [--docs 40000] [--runs 3] [--seconds 8]
          [--concurrency 1,8] [--heap 384m] [--no-failover] [--elasticsearch]
Runtime: about 3.5 minutes with --quick (8,000 docs, 3 runs of 3 s), 8-10 minutes by default
(40,000 docs, 3 runs of 8 s), on the shared 2-core machine; most of it is starting JVMs and the failover run.
--elasticsearch adds 2-3 minutes: after the OpenSearch part, the same 3+1 cluster of Elasticsearch 8.19
(integ-test distribution, ``standard`` analyser) is started, costed (start, RSS) and measured the same way.
Writes bench/results/cluster.json and cluster.md. Nothing is asserted.

What runs (all on 127.0.0.1, started and stopped here, state under .cache/*-bench):
- one OpenSearch node (heap --heap): index with 1 shard, no replica;
- a cluster of 3 data nodes + 1 coordinating-only node (heap --heap each): two indices with
  3 shards and 1 replica, one routed by tenant, one not. Agents' clients know only the coordinating node.
Same 40-tenant corpus (bench/_common.generated_tickets) in every index, same query plan
(tenant always, a product filter on about half), through SearchTool.run (validation, scope,
query building, the engine call, parsing, shaping). Closed loop: each of C workers sends its next
call when the previous answers. The configurations are interleaved run by run, so machine load
drifts hit all of them alike.
Failover: routed index through the coordinating node, C=4 for the whole run; data-2 gets kill -9
a few seconds in and is restarted later; latency is reported per window (before, the 5 s after the
kill, degraded, while the node rejoins and recovers, after green).
Figures on this shared machine are provisional: load average is recorded before and after.
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import psutil
from _common import generated_tickets, machine, percentiles, query_plan, write_results

from scopegate.backends.opensearch import OpenSearchBackend
from scopegate.demo.corpus import ticket_spec
from scopegate.engines.opensearch_node import NodeConfig, OpenSearchNode
from scopegate.search.tools import SearchTool
from scopegate_lab.cluster import ClusterConfig, LocalCluster
from scopegate_lab.load import Call, CallRecord, LoadRunner, between, run_timeline

REPO = Path(__file__).resolve().parents[1]


def rss_mb(pid: int | None) -> float | None:
    """Resident memory of a process and its children (an Elasticsearch node is a launcher plus a server)."""
    if pid is None:
        return None
    try:
        proc = psutil.Process(pid)
        total = proc.memory_info().rss + sum(c.memory_info().rss for c in proc.children(recursive=True))
    except psutil.Error:
        return None
    return round(total / 2**20, 1)


def calls_for(tool: SearchTool, label: str, plan: list[tuple[str, str, str | None]]) -> list[Call]:
    out = []
    for text, tenant, product in plan:
        args: dict[str, Any] = {"query": text}
        if product:
            args["product"] = product
        out.append(Call(label, tool, tenant, args))
    return out


def stats(records: list[CallRecord], seconds: float) -> dict[str, Any]:
    ok = [r for r in records if r.status == "ok"]
    return {
        **percentiles([r.latency_s * 1000 for r in ok]),
        "calls_per_s": round(len(records) / seconds, 1) if seconds > 0 else None,
        "errors": len(records) - len(ok),
        "partial": sum(r.partial for r in ok),
    }


async def ingest(backend: OpenSearchBackend, docs: int) -> float:
    began = time.perf_counter()
    report = await backend.ingest(generated_tickets(docs), batch_size=2_000)
    if report.failed:
        raise SystemExit(f"ingest into {backend.spec.index} failed: {report.errors[:3]}")
    await backend.wait_for_health(timeout_s=300)
    return round(time.perf_counter() - began, 1)


def spread(values: list[float]) -> dict[str, float]:
    return {"median": round(statistics.median(values), 2), "min": round(min(values), 2), "max": round(max(values), 2)}


async def compare(
    configs: dict[str, SearchTool], plan: list[tuple[str, str, str | None]], args: argparse.Namespace
) -> dict[str, Any]:
    """Per config and concurrency: every run's p50/p95/p99 and calls/s, then median (min-max) over runs."""
    raw: dict[str, dict[int, list[dict[str, Any]]]] = {name: {c: [] for c in args.concurrency} for name in configs}
    for tool in configs.values():  # warm-up: JIT, caches, connections
        await LoadRunner(calls_for(tool, "warm", plan), "ticket_id", concurrency=4).run_for(1.5)
    for run in range(args.runs):
        for concurrency in args.concurrency:
            for name, tool in configs.items():
                runner = LoadRunner(calls_for(tool, name, plan), "ticket_id", concurrency=concurrency, seed=run)
                records = await runner.run_for(args.seconds)
                raw[name][concurrency].append(stats(records, args.seconds))
                print(f"run {run + 1} C={concurrency} {name}: {raw[name][concurrency][-1]}", file=sys.stderr)
    summary: dict[str, Any] = {}
    for name, by_c in raw.items():
        summary[name] = {}
        for concurrency, runs in by_c.items():
            summary[name][str(concurrency)] = {
                key: spread([r[key] for r in runs]) for key in ("p50", "p95", "p99", "calls_per_s")
            } | {"errors": sum(r["errors"] for r in runs), "partial": sum(r["partial"] for r in runs), "runs": runs}
    return summary


async def failover(
    cluster: LocalCluster, tool: SearchTool, plan: list[tuple[str, str, str | None]], args: argparse.Namespace
) -> dict[str, Any]:
    runner = LoadRunner(calls_for(tool, "failover", plan), "ticket_id", concurrency=4, seed=99)
    victim = "data-2"
    events = await run_timeline(
        runner,
        [
            ("killed", lambda: cluster.kill(victim)),
            ("restarted", lambda: cluster.restart(victim, timeout_s=300)),
        ],
        settle_s=args.failover_settle,
    )
    records = runner.records
    killed, restart_begin, green = events["killed"], events["restarted.begin"], events["restarted"]
    windows = {
        "before kill": (events["start"], events["killed.begin"]),
        "first 5 s after kill": (killed, killed + 5.0),
        "degraded (node down)": (killed + 5.0, restart_begin),
        "node rejoining until green": (restart_begin, green),
        "after green": (green, events["end"]),
    }
    return {
        "events_s": {k: round(v - events["start"], 2) for k, v in events.items()},
        "restart_to_green_s": round(green - restart_begin, 1),
        "windows": {name: stats(between(records, a, b), max(b - a, 1e-9)) for name, (a, b) in windows.items() if b > a},
    }


def markdown(data: dict[str, Any]) -> str:
    m = data["machine"]
    lines = [
        "# Cluster benchmark (provisional: shared machine)",
        "",
        f"{m['when']}, {m['cpus']} cores, load average {data['load_before']} before, {data['load_after']} after; "
        f"runtime {data['runtime_s']} s; {data['docs']:,} docs over 40 tenants; heap {data['heap']} per node; "
        f"{data['runs']} runs of {data['seconds']} s per configuration and concurrency, interleaved. "
        "Latency through SearchTool.run, ms; median of the runs (min-max).",
        "",
        "| configuration | C | p50 ms | p95 ms | p99 ms | calls/s | errors | partial |",
        "|---|---|---|---|---|---|---|---|",
    ]

    def cell(v: dict[str, float]) -> str:
        return f"{v['median']:g} ({v['min']:g}-{v['max']:g})"

    for name, by_c in data["compare"].items():
        for c, s in by_c.items():
            lines.append(
                f"| {name} | {c} | {cell(s['p50'])} | {cell(s['p95'])} | {cell(s['p99'])} | {cell(s['calls_per_s'])} "
                f"| {s['errors']} | {s['partial']} |"
            )
    if data.get("elasticsearch"):
        lines += [
            "",
            "The ES rows: the same 3+1 cluster of Elasticsearch 8.19 (integ-test distribution, `standard` analyser),",
            "measured after the OpenSearch part (OpenSearch stopped), same data, plan and runs.",
        ]
    lines += ["", "Start and memory:", ""]
    lines += [f"- {k}: {v}" for k, v in data["cost"].items()]
    if data.get("failover"):
        f = data["failover"]
        lines += [
            "",
            f"Failover (routed index via the coordinating node, C=4; kill -9 of data-2, restart to green "
            f"{f['restart_to_green_s']} s):",
            "",
            "| window | calls | p50 ms | p95 ms | p99 ms | errors | partial |",
            "|---|---|---|---|---|---|---|",
        ]
        for name, s in f["windows"].items():
            lines.append(
                f"| {name} | {s.get('n', 0)} | {s.get('p50', '-')} | {s.get('p95', '-')} | {s.get('p99', '-')} "
                f"| {s['errors']} | {s['partial']} |"
            )
    return "\n".join(lines)


async def elasticsearch_part(args: argparse.Namespace, plan: list[tuple[str, str, str | None]]) -> dict[str, Any]:
    """The Elasticsearch 3+1 cluster: start and memory cost, then the cluster rows of the comparison."""
    from scopegate.backends.elasticsearch import ElasticsearchBackend

    cluster = LocalCluster(
        ClusterConfig(engine="elasticsearch", state_dir=REPO / ".cache" / "elasticsearch-cluster-bench", heap=args.heap)
    )
    base = ticket_spec()
    backends: list[ElasticsearchBackend] = []
    cost: dict[str, Any] = {}
    try:
        t = time.monotonic()
        cluster.start(clean=True, timeout_s=600)
        cost["ES cluster 3+1: start to green s"] = round(time.monotonic() - t, 1)
        common: dict[str, Any] = {"analysis": "standard", "server_major": 8}
        readers = {}
        for name, routing in (("no routing", "none"), ("routing by tenant", "tenant")):
            spec = dataclasses.replace(base, index=f"bench-es-{routing}")
            writer = ElasticsearchBackend(spec, cluster.data_urls, shards=3, replicas=1, routing=routing, **common)
            reader = ElasticsearchBackend(spec, cluster.coordinating_urls, routing=routing, **common)
            backends += [writer, reader]
            await writer.drop()
            began = time.perf_counter()
            report = await writer.ingest(generated_tickets(args.docs), batch_size=2_000)
            assert report.failed == 0, report.errors[:3]
            await writer.wait_for_health(timeout_s=300)
            cost[f"ingest ES cluster, {name} s"] = round(time.perf_counter() - began, 1)
            readers[f"ES cluster, 3x2 shards, {name}"] = SearchTool(spec, reader)
        compared = await compare(readers, plan, args)
        for m in cluster.members:
            cost[f"ES cluster {m.name} RSS MB (launcher + server JVM)"] = rss_mb(cluster.node(m.name).pid())
        t = time.monotonic()
        cluster.kill("data-2")
        cluster.restart("data-2", timeout_s=300)
        cost["ES data node kill -9 to green again s"] = round(time.monotonic() - t, 1)
    finally:
        for backend in backends:
            await backend.close()
        cluster.stop()
    return {"compare": compared, "cost": cost}


async def main_async(args: argparse.Namespace) -> dict[str, Any]:
    began = time.monotonic()
    load_before = [round(x, 2) for x in os.getloadavg()]
    base = ticket_spec()
    single_node = OpenSearchNode(
        NodeConfig(state_dir=REPO / ".cache" / "opensearch-node-bench-cluster", heap=args.heap)
    )
    cluster = LocalCluster(ClusterConfig(state_dir=REPO / ".cache" / "opensearch-cluster-bench", heap=args.heap))
    backends: list[OpenSearchBackend] = []
    cost: dict[str, Any] = {}
    try:
        t = time.monotonic()
        single_url = single_node.start(clean=True, timeout_s=300)
        cost["one node: start to green s"] = round(time.monotonic() - t, 1)
        t = time.monotonic()
        cluster.start(clean=True, timeout_s=400)
        cost["cluster 3+1: start to green s"] = round(time.monotonic() - t, 1)

        def spec(name: str) -> Any:
            return dataclasses.replace(base, index=f"bench-{name}")

        writers = {
            "one node, 1 shard": OpenSearchBackend(spec("single"), single_url, shards=1, replicas=0),
            "cluster, 3x2 shards, no routing": OpenSearchBackend(spec("flat"), cluster.data_urls, shards=3, replicas=1),
            "cluster, 3x2 shards, routing by tenant": OpenSearchBackend(
                spec("routed"), cluster.data_urls, shards=3, replicas=1, routing="tenant"
            ),
        }
        backends += writers.values()
        for name, writer in writers.items():
            await writer.drop()
            cost[f"ingest {name} s"] = await ingest(writer, args.docs)
        readers = {
            "one node, 1 shard": writers["one node, 1 shard"],
            "cluster, 3x2 shards, no routing": OpenSearchBackend(spec("flat"), cluster.coordinating_urls),
            "cluster, 3x2 shards, routing by tenant": OpenSearchBackend(
                spec("routed"), cluster.coordinating_urls, routing="tenant"
            ),
        }
        backends += [b for name, b in readers.items() if b is not writers[name]]
        tools = {name: SearchTool(b.spec, b) for name, b in readers.items()}
        plan = query_plan(400)
        result: dict[str, Any] = {"compare": await compare(tools, plan, args)}
        cost["one node RSS MB"] = rss_mb(single_node.pid())
        for m in cluster.members:
            cost[f"cluster {m.name} RSS MB"] = rss_mb(cluster.node(m.name).pid())
        if args.failover:
            single_node.stop()  # the failover run is about the cluster alone
            result["failover"] = await failover(cluster, tools["cluster, 3x2 shards, routing by tenant"], plan, args)
    finally:
        for backend in backends:
            await backend.close()
        cluster.stop()
        single_node.stop()
    if args.elasticsearch:
        es = await elasticsearch_part(args, plan)
        result["compare"].update(es["compare"])
        cost.update(es["cost"])
    return {
        **result,
        "cost": cost,
        "machine": machine(),
        "load_before": load_before,
        "load_after": [round(x, 2) for x in os.getloadavg()],
        "runtime_s": round(time.monotonic() - began, 1),
        "docs": args.docs,
        "heap": args.heap,
        "runs": args.runs,
        "seconds": args.seconds,
        "concurrency": args.concurrency,
        "quick": args.quick,
        "elasticsearch": args.elasticsearch,
    }


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--quick", action="store_true", help="8,000 docs, 3 runs of 3 s, a short failover run")
    p.add_argument("--docs", type=int, default=None, help="documents per index (default 40,000; quick 8,000)")
    p.add_argument("--runs", type=int, default=3, help="runs per configuration and concurrency (default 3)")
    p.add_argument("--seconds", type=float, default=None, help="seconds per run (default 8; quick 3)")
    p.add_argument("--concurrency", default="1,8", help="closed-loop workers, comma-separated (default 1,8)")
    p.add_argument("--heap", default="384m", help="heap of every node, single and cluster (default 384m)")
    p.add_argument("--no-failover", dest="failover", action="store_false", help="skip the failover run")
    p.add_argument("--elasticsearch", action="store_true", help="also cost and measure an Elasticsearch 3+1 cluster")
    args = p.parse_args()
    args.docs = args.docs or (8_000 if args.quick else 40_000)
    args.seconds = args.seconds or (3.0 if args.quick else 8.0)
    args.failover_settle = 8.0 if args.quick else 12.0
    args.concurrency = [int(c) for c in str(args.concurrency).split(",") if c.strip()]
    data = asyncio.run(main_async(args))
    write_results("cluster", data, markdown(data))
    print(markdown(data))


if __name__ == "__main__":
    main()
