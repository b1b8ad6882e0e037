"""OpenSearch on the realistic workload: 2M tickets ingested, tool overhead over the client call, p95 through the tool.

Run (about 3 h on a quiet 2-core machine with the defaults; --quick about 10 min):

    .venv/bin/python bench/bench_workload_opensearch.py                        # 2M tickets, heap 3g
    .venv/bin/python bench/bench_workload_opensearch.py --docs 1000000 --heap 2g
    .venv/bin/python bench/bench_workload_opensearch.py --quick                # 100k tickets, 600 queries

Starts the project's OpenSearch node (state in .cache/opensearch-node-workload,
heap ``--heap``: 2M tickets with 200 B-50 KB bodies need no more than 3 GB, and the
machine keeps the rest for the page cache and its other users) unless ``--url``
names one. The corpus is the workload's (``scopegate_lab.workload``,
generated first if missing).

1. **ingest** (``--ingest-runs``, each into a fresh index): the corpus streamed
   through ``scopegate.ingest.run.ingest_records`` (the CLI's path: progress
   bar, batch 10,000) into ``OpenSearchBackend.ingest`` (bulk, 2 requests in
   flight), then one refresh; docs/s over the whole.
2. **query** (``--runs``): the node is restarted and the index files evicted from
   the page cache; *cold*: the first ``--cold-queries`` as raw/tool pairs;
   *warm*: the whole plan once untimed, then every query as a pair;
   *concurrent*: ``--clients`` tool clients and as many raw clients (asyncio).
   Raw = the ``opensearch-py`` search call with the backend's body; the tool's
   own client call is timed too, so the overhead is tool time minus that call.

Peak RSS: the node's (VmHWM of the JVM) and this process's, per phase. Writes
bench/results/workload_opensearch.json and .md. Nothing is asserted.
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import json
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import machine, write_results
from _measure import PeakRss, evict, fmt, fmt_int, index_files, load_average, now, spread_of
from _workload_runs import Timed, concurrent_raw_async, concurrent_tool, pairs, prepared
from bench_workload_embedded import DEFAULT_CORPUS, ensure_corpus

from scopegate.backends import dsl
from scopegate.backends.opensearch import OpenSearchBackend
from scopegate.engines.opensearch_node import NodeConfig, OpenSearchNode
from scopegate.ingest.run import ingest_records
from scopegate.search.tools import SearchTool
from scopegate_lab.workload import read_corpus, read_queries, workload_spec

REPO = Path(__file__).resolve().parents[1]
STATE = REPO / ".cache" / "opensearch-node-workload"


def node_peak_rss_mb(pid: int | None) -> float | None:
    if pid is None:
        return None
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return round(int(line.split()[1]) / 1024, 1)
    except OSError:
        return None
    return None


def node_rss_mb(pid: int | None) -> float | None:
    if pid is None:
        return None
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return round(int(line.split()[1]) / 1024, 1)
    except OSError:
        return None
    return None


def spec_for_bench(args: argparse.Namespace) -> Any:
    spec = dataclasses.replace(workload_spec(), index="bench-workload")
    # An index ingested before issue 14 has no combined field: query it as best_fields (--reuse-index).
    return dataclasses.replace(spec, field_combination=args.field_combination) if args.field_combination else spec


async def ingest_once(
    url: str, corpus: Path, docs: int, node: OpenSearchNode | None, args: argparse.Namespace
) -> dict[str, Any]:
    backend = OpenSearchBackend(spec_for_bench(args), url, refresh_after_write=False)
    await backend.drop()
    with PeakRss() as rss:
        started = time.perf_counter()
        report = await ingest_records(backend, read_corpus(corpus, docs), batch_size=10_000, total=docs)
        await backend.refresh()
        seconds = time.perf_counter() - started
    await backend.close()
    return {
        "documents": report.indexed,
        "failed": report.failed,
        "seconds": round(seconds, 1),
        "docs_per_s": round(report.indexed / seconds),
        "client_peak_rss_mb": rss.mb,
        "node_peak_rss_mb": node_peak_rss_mb(node.pid() if node else None),
        "load_average": load_average(),
    }


async def query_run(url: str, corpus: Path, args: argparse.Namespace, run: int, pid: int | None) -> dict[str, Any]:
    backend = OpenSearchBackend(spec_for_bench(args), url, refresh_after_write=False)
    tool = SearchTool(backend.spec, backend)
    timed = Timed()
    # Time the client the backend searches with (the coordinating node's, when configured).
    client_search = backend.search_client.search
    backend.search_client.search = timed.wrap_async(client_search)  # type: ignore[method-assign]
    alias = backend.names.read_alias
    timeout = backend.spec.client_timeout_s

    async def raw(query: Any) -> Any:
        body = dsl.search_body(backend.spec, query)
        return await client_search(index=alias, body=body, params={"request_timeout": timeout})

    plan = prepared(tool, read_queries(corpus)[: args.queries])
    out: dict[str, Any] = {"load_average_start": load_average(), "node_rss_start_mb": node_rss_mb(pid)}
    with PeakRss() as rss:
        out["cold"] = await pairs(tool, raw, timed, plan[: args.cold_queries])
    out["cold"]["peak_rss_mb"] = rss.mb
    with PeakRss() as rss:
        for targs, ctx, _ in plan:  # warm-up, untimed
            await tool.run(targs, ctx)
        out["warm"] = await pairs(tool, raw, timed, plan)
    out["warm"]["peak_rss_mb"] = rss.mb
    concurrent: dict[str, Any] = {}
    with PeakRss() as rss:
        for side in ("tool", "raw") if run % 2 == 0 else ("raw", "tool"):
            if side == "tool":
                concurrent["tool"] = await concurrent_tool(tool, plan, args.clients)
            else:
                concurrent["raw"] = await concurrent_raw_async(raw, plan, args.clients)
    concurrent["peak_rss_mb"] = rss.mb
    concurrent["tool_single_client_calls_per_s"] = round(1000 / out["warm"]["tool_ms"]["mean"], 1)
    out["concurrent"] = concurrent
    out["node_peak_rss_mb"] = node_peak_rss_mb(pid)
    out["load_average_end"] = load_average()
    await backend.close()
    return out


def summarise(docs: int, ingests: list[dict[str, Any]], runs: list[dict[str, Any]]) -> dict[str, Any]:
    s: dict[str, Any] = {"documents": docs, "ingest_runs": len(ingests), "query_runs": len(runs)}
    if ingests:
        s["ingest"] = {k: spread_of(ingests, k) for k in ("docs_per_s", "seconds", "client_peak_rss_mb")}
        if all(i.get("node_peak_rss_mb") for i in ingests):
            s["ingest"]["node_peak_rss_mb"] = spread_of(ingests, "node_peak_rss_mb")
    for phase in ("cold", "warm"):
        s[phase] = {
            metric: {q: spread_of(runs, phase, metric, q) for q in ("p50", "p95", "p99")}
            for metric in ("raw_ms", "tool_ms", "overhead_in_call_ms", "overhead_paired_ms")
        }
        s[phase]["peak_rss_mb"] = spread_of(runs, phase, "peak_rss_mb")
    s["concurrent"] = {
        side: {
            "calls_per_s": spread_of(runs, "concurrent", side, "calls_per_s"),
            **{q: spread_of(runs, "concurrent", side, "latency_ms", q) for q in ("p50", "p95", "p99")},
        }
        for side in ("tool", "raw")
    }
    s["concurrent"]["tool_single_client_calls_per_s"] = spread_of(runs, "concurrent", "tool_single_client_calls_per_s")
    if all(r.get("node_peak_rss_mb") for r in runs):
        s["node_peak_rss_mb"] = spread_of(runs, "node_peak_rss_mb")
    return s


def markdown(data: dict[str, Any]) -> str:
    s = data["summary"]
    busy = max(data["load_average_start"]) > 1.5
    lines = [
        "# OpenSearch on the realistic workload",
        "",
        f"{data['when']}; {data['machine']['cpus']} cores; OpenSearch {data['engine']} single node, heap "
        f"{data['heap']}, 1 shard, 0 replicas, on the same machine. Load average {data['load_average_start']} at "
        f"start, {data['load_average_end']} at end" + (" (shared machine: provisional)." if busy else "."),
        f"{s['documents']:,} workload tickets; {data['queries']} held-out queries (first {data['cold_queries']} "
        f"cold, after a node restart with the index files evicted); {data['clients']} concurrent clients. "
        "Median over runs (lowest–highest run), ms. Overhead in call = tool minus the client call inside it. "
        f"Text fields combined as {data.get('field_combination', 'combined_fields')}.",
        "",
    ]
    if "ingest" in s:
        i = s["ingest"]
        node = f", node peak RSS {fmt(i['node_peak_rss_mb'], 0)} MB" if "node_peak_rss_mb" in i else ""
        lines += [
            f"Ingest ({s['ingest_runs']} runs, batch 10,000, 2 bulk requests in flight, progress bar): "
            f"{fmt_int(i['docs_per_s'])} docs/s, {fmt(i['seconds'], 0)} s; client peak RSS "
            f"{fmt(i['client_peak_rss_mb'], 0)} MB{node}.",
            "",
        ]
    lines += [
        "| phase | raw p50 / p95 / p99 | tool p50 / p95 / p99 | overhead in call p50 / p95 | "
        "overhead paired p50 / p95 |",
        "|---|---|---|---|---|",
    ]
    for phase in ("cold", "warm"):
        p = s[phase]
        lines.append(
            f"| {phase} | {fmt(p['raw_ms']['p50'])} / {fmt(p['raw_ms']['p95'])} / {fmt(p['raw_ms']['p99'])} | "
            f"{fmt(p['tool_ms']['p50'])} / {fmt(p['tool_ms']['p95'])} / {fmt(p['tool_ms']['p99'])} | "
            f"{fmt(p['overhead_in_call_ms']['p50'], 3)} / {fmt(p['overhead_in_call_ms']['p95'], 3)} | "
            f"{fmt(p['overhead_paired_ms']['p50'], 3)} / {fmt(p['overhead_paired_ms']['p95'], 3)} |"
        )
    c = s["concurrent"]
    lines += [
        "",
        f"Concurrent ({data['clients']} clients): tool {fmt(c['tool']['calls_per_s'], 0)} calls/s, p50 / p95 "
        f"{fmt(c['tool']['p50'])} / {fmt(c['tool']['p95'])}; raw {fmt(c['raw']['calls_per_s'], 0)} calls/s, "
        f"p50 / p95 {fmt(c['raw']['p50'])} / {fmt(c['raw']['p95'])}. One client through the tool: "
        f"{fmt(c['tool_single_client_calls_per_s'], 0)} calls/s."
        + (f" Node peak RSS {fmt(s['node_peak_rss_mb'], 0)} MB." if "node_peak_rss_mb" in s else ""),
    ]
    return "\n".join(lines)


async def main_async(args: argparse.Namespace) -> dict[str, Any]:
    node = None if args.url else OpenSearchNode(NodeConfig(state_dir=STATE, heap=args.heap))
    url = args.url or node.start(clean=not args.reuse_index)  # type: ignore[union-attr]
    data: dict[str, Any] = {
        "when": now(),
        "machine": machine(),
        "load_average_start": load_average(),
        "heap": args.heap if node else "as started",
        "field_combination": spec_for_bench(args).field_combination,
        "queries": args.queries,
        "cold_queries": args.cold_queries,
        "clients": args.clients,
    }
    try:
        import httpx

        data["engine"] = httpx.get(url, timeout=10).json()["version"]["number"]
        ingests = json.loads(Path(args.ingest_from).read_text()) if args.ingest_from else []
        for n in range(0 if args.reuse_index else args.ingest_runs):
            print(f"ingest run {n + 1}/{args.ingest_runs} ...", file=sys.stderr, flush=True)
            ingests.append(await ingest_once(url, args.corpus, args.docs, node, args))
            print(f"  {ingests[-1]}", file=sys.stderr, flush=True)
            # Kept at once: a later failure must not lose an hour of ingest (see --ingest-from).
            (REPO / ".cache" / "workload_opensearch_ingests.json").write_text(json.dumps(ingests, indent=2))
        runs = []
        for n in range(args.runs):
            pid = None
            if node is not None:
                node.stop()
                evict(index_files(STATE / "home" / "data"))
                url = node.start()
                pid = node.pid()
            print(f"query run {n + 1}/{args.runs} ...", file=sys.stderr, flush=True)
            runs.append(await query_run(url, args.corpus, args, n, pid))
            print(f"  warm tool p95 {runs[-1]['warm']['tool_ms']['p95']} ms", file=sys.stderr, flush=True)
        data["summary"] = summarise(args.docs, ingests, runs)
        data["raw"] = {"ingest": ingests, "query": runs}
        if not args.keep_index:
            cleanup = OpenSearchBackend(spec_for_bench(args), url)
            await cleanup.drop()
            await cleanup.close()
    finally:
        if node is not None:
            node.stop()
    data["load_average_end"] = load_average()
    return data


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--corpus", type=Path, default=DEFAULT_CORPUS)
    parser.add_argument("--docs", type=int, default=2_000_000)
    parser.add_argument("--url", help="an existing node (default: start one; then cold runs restart it)")
    parser.add_argument("--heap", default="3g")
    parser.add_argument("--ingest-runs", type=int, default=3)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--queries", type=int, default=2400)
    parser.add_argument("--cold-queries", type=int, default=200)
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--keep-index", action="store_true")
    parser.add_argument("--reuse-index", action="store_true", help="query the index the last run kept; no ingest")
    parser.add_argument(
        "--ingest-from", help="ingest results of an earlier run (.cache/workload_opensearch_ingests.json)"
    )
    parser.add_argument(
        "--field-combination",
        choices=("best_fields", "most_fields", "combined_fields"),
        help="override the spec's (an index kept from before issue 14 needs best_fields)",
    )
    parser.add_argument("--quick", action="store_true", help="100k tickets, 600 queries")
    parser.add_argument("--output", default="workload_opensearch")
    args = parser.parse_args()
    if args.quick:
        args.docs, args.queries, args.cold_queries = 100_000, 600, 100
    ensure_corpus(args.corpus, args.docs, 10)
    data = asyncio.run(main_async(args))
    write_results(args.output, data, markdown(data))
    print(markdown(data))
    return 0


if __name__ == "__main__":
    sys.exit(main())
