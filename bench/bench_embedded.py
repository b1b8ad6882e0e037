"""Embedded engine benchmark: ingest docs/s, filtered search latency at 100k and 1M, tool overhead.

Run: .venv/bin/python bench/bench_embedded.py [--sizes 100000 1000000] [--queries 1000]
Writes bench/results/embedded.json and embedded.md. Nothing here is asserted.
"""

from __future__ import annotations

import argparse
import asyncio
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import generated_tickets, machine, percentiles, query_plan, write_results

from scopegate.backends.embedded import EmbeddedBackend
from scopegate.context import CallContext
from scopegate.demo.corpus import ticket_spec
from scopegate.scope import Scope
from scopegate.search.model import SearchRequest
from scopegate.search.tools import SearchTool


async def measure(backend: EmbeddedBackend, queries: int) -> dict[str, Any]:
    tool = SearchTool(backend.spec, backend)
    plan = query_plan(queries)
    raw_ms: list[float] = []
    tool_ms: list[float] = []
    overhead_ms: list[float] = []
    for text, tenant, _product in plan[:50]:  # warm-up: caches, thread pool
        await tool.run({"query": text}, CallContext(state={"tenant_id": tenant}))
    for text, tenant, product in plan:
        request = SearchRequest(text, (("product", product),) if product else (), 1)
        query = tool.build_query(request, Scope(tenant))
        t0 = time.perf_counter()
        backend.search_sync(query)  # the raw engine call: build the tantivy query, search, load 5 docs
        t1 = time.perf_counter()
        args: dict[str, Any] = {"query": text}
        if product:
            args["product"] = product
        result = (await tool.run(args, CallContext(state={"tenant_id": tenant}))).result
        t2 = time.perf_counter()
        assert result["status"] == "ok", result
        raw_ms.append((t1 - t0) * 1000)
        tool_ms.append((t2 - t1) * 1000)
        overhead_ms.append(((t2 - t1) - (t1 - t0)) * 1000)
    return {
        "raw_engine_ms": percentiles(raw_ms),
        "tool_ms": percentiles(tool_ms),
        "tool_overhead_ms": percentiles(overhead_ms),
    }


async def run(sizes: list[int], queries: int, batch: int) -> dict[str, Any]:
    out: dict[str, Any] = {"machine": machine(), "queries_per_size": queries, "batch_size": batch, "sizes": {}}
    root = Path(tempfile.mkdtemp(prefix="scopegate-bench-"))
    try:
        for size in sizes:
            path = root / f"idx-{size}"
            backend = EmbeddedBackend(ticket_spec(), path)
            t0 = time.perf_counter()
            report = backend.ingest_sync(generated_tickets(size), batch_size=batch)
            seconds = time.perf_counter() - t0
            entry: dict[str, Any] = {
                "documents": report.indexed,
                "ingest_seconds": round(seconds, 2),
                "ingest_docs_per_s": round(report.indexed / seconds),
                "index_bytes": sum(p.stat().st_size for p in path.rglob("*") if p.is_file()),
            }
            entry.update(await measure(backend, queries))
            out["sizes"][str(size)] = entry
            print(size, entry, flush=True)
            await backend.close()
            shutil.rmtree(path, ignore_errors=True)
    finally:
        shutil.rmtree(root, ignore_errors=True)
    return out


def to_markdown(data: dict[str, Any]) -> str:
    lines = [
        "# Embedded engine (tantivy) benchmark",
        "",
        f"Machine: {data['machine']['cpus']} cores, Python {data['machine']['python']}, {data['machine']['when']}.",
        "40 tenants, tenant filter on every query, product filter on about half; "
        f"{data['queries_per_size']} queries per size; top 5 with an exact total.",
        "Raw = build the tantivy query + search + load 5 stored docs, in the calling thread.",
        "Tool = SearchTool.run: validation, scope from state, thread hop, raw call, shaping.",
        "Overhead = tool - raw, per query.",
        "",
        "| documents | ingest docs/s | raw p50 / p95 / p99 ms | tool p50 / p95 / p99 ms | overhead p50 / p95 ms |",
        "|---|---|---|---|---|",
    ]
    for size, e in data["sizes"].items():
        r, t, o = e["raw_engine_ms"], e["tool_ms"], e["tool_overhead_ms"]
        lines.append(
            f"| {int(size):,} | {e['ingest_docs_per_s']:,} | {r['p50']} / {r['p95']} / {r['p99']} | "
            f"{t['p50']} / {t['p95']} / {t['p99']} | {o['p50']} / {o['p95']} |"
        )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sizes", type=int, nargs="+", default=[100_000, 1_000_000])
    parser.add_argument("--queries", type=int, default=1000)
    parser.add_argument("--batch", type=int, default=50_000)
    args = parser.parse_args()
    data = asyncio.run(run(args.sizes, args.queries, args.batch))
    write_results("embedded", data, to_markdown(data))
    print(to_markdown(data))


if __name__ == "__main__":
    main()
