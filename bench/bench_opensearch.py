"""OpenSearch benchmark against the real local node: ingest docs/s, filtered search latency, tool overhead.

Run: .venv/bin/python bench/bench_opensearch.py [--docs 1000000] [--queries 1000] [--url http://127.0.0.1:9200]
Without --url (or SCOPEGATE_OPENSEARCH_URL) it starts a node with the project's manager
(2 GB heap, state in .cache/opensearch-node-bench) and stops it afterwards.
Writes bench/results/opensearch.json and opensearch.md. Nothing here is asserted.

Same corpus generator and query plan as bench_embedded.py (40 tenants, tenant
filter always, product filter on about half, top 5 with an exact total).
Raw = the opensearch-py ``search`` call with the body the backend builds.
Tool = SearchTool.run: validation, scope from state, query building, the same
client call, parsing, shaping. Overhead = tool - raw, per query, same run.
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import os
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import generated_tickets, machine, percentiles, query_plan, write_results

from scopegate.backends import dsl
from scopegate.backends.opensearch import OpenSearchBackend
from scopegate.context import CallContext
from scopegate.demo.corpus import ticket_spec
from scopegate.engines.opensearch_node import URL_ENV, NodeConfig, OpenSearchNode
from scopegate.scope import Scope
from scopegate.search.model import SearchRequest
from scopegate.search.tools import SearchTool

REPO = Path(__file__).resolve().parents[1]


async def measure(backend: OpenSearchBackend, queries: int) -> dict[str, Any]:
    tool = SearchTool(backend.spec, backend)
    plan = query_plan(queries)
    raw_ms: list[float] = []
    tool_ms: list[float] = []
    overhead_ms: list[float] = []
    inner_ms: list[float] = []
    inner_overhead_ms: list[float] = []
    # Time the client call made inside the tool, so the tool's own cost is measured on the same request.
    client_search = backend.client.search
    inside: list[float] = []

    async def timed_search(*a: Any, **kw: Any) -> Any:
        t0 = time.perf_counter()
        try:
            return await client_search(*a, **kw)
        finally:
            inside.append(time.perf_counter() - t0)

    backend.client.search = timed_search  # type: ignore[method-assign]
    for text, tenant, _product in plan[:100]:  # warm-up: JIT, caches, connection pool
        await tool.run({"query": text}, CallContext(state={"tenant_id": tenant}))
    alias = backend.names.read_alias
    for i, (text, tenant, product) in enumerate(plan):
        request = SearchRequest(text, (("product", product),) if product else (), 1)
        body = dsl.search_body(backend.spec, tool.build_query(request, Scope(tenant)))
        args: dict[str, Any] = {"query": text}
        if product:
            args["product"] = product
        ctx = CallContext(state={"tenant_id": tenant})

        async def raw_call(body: dict[str, Any] = body) -> float:
            t0 = time.perf_counter()
            response = await client_search(
                index=alias, body=body, params={"request_timeout": backend.spec.client_timeout_s}
            )
            assert response["hits"]["total"]["value"] >= 0
            return time.perf_counter() - t0

        async def tool_call(args: dict[str, Any] = args, ctx: CallContext = ctx) -> float:
            inside.clear()
            t0 = time.perf_counter()
            result = (await tool.run(args, ctx)).result
            assert result["status"] == "ok", result
            return time.perf_counter() - t0

        # Alternate the order so neither side always runs on a warmer cache.
        if i % 2:
            raw, full = await raw_call(), await tool_call()
        else:
            full, raw = await tool_call(), await raw_call()
        assert len(inside) == 1, inside
        inner = inside[0]
        raw_ms.append(raw * 1000)
        tool_ms.append(full * 1000)
        overhead_ms.append((full - raw) * 1000)
        inner_ms.append(inner * 1000)
        inner_overhead_ms.append((full - inner) * 1000)
    backend.client.search = client_search  # type: ignore[method-assign]
    return {
        "raw_client_ms": percentiles(raw_ms),
        "tool_ms": percentiles(tool_ms),
        "tool_minus_separate_raw_call_ms": percentiles(overhead_ms),
        "client_call_inside_tool_ms": percentiles(inner_ms),
        "tool_overhead_ms": percentiles(inner_overhead_ms),
    }


async def run(url: str, docs: int, queries: int, batch: int) -> dict[str, Any]:
    spec = dataclasses.replace(ticket_spec(), index="bench-tickets")
    backend = OpenSearchBackend(spec, url, bulk_concurrency=2, refresh_after_write=False)
    await backend.drop()
    progress = {"done": 0, "next": 100_000}

    def report(n: int) -> None:
        progress["done"] += n
        if progress["done"] >= progress["next"]:
            print(f"  ingested {progress['done']:,}", file=sys.stderr)
            progress["next"] += 100_000

    started = time.perf_counter()
    ingest = await backend.ingest(generated_tickets(docs), batch_size=batch, progress=report)
    await backend.refresh()
    ingest_s = time.perf_counter() - started
    print(f"ingest {ingest.indexed:,} docs in {ingest_s:.1f}s (failed {ingest.failed})", file=sys.stderr)
    latency = await measure(backend, queries)
    await backend.drop()
    await backend.close()
    return {
        "documents": docs,
        "indexed": ingest.indexed,
        "failed": ingest.failed,
        "ingest_seconds": round(ingest_s, 2),
        "ingest_docs_per_s": round(ingest.indexed / ingest_s),
        "bulk_batch": batch,
        **latency,
    }


def markdown(data: dict[str, Any]) -> str:
    r = data["result"]

    def trio(p: dict[str, float]) -> str:
        return f"{p['p50']} / {p['p95']} / {p['p99']}"

    return f"""# OpenSearch benchmark (real local node)

Machine: {data["machine"]["cpus"]} cores, Python {data["machine"]["python"]}, {data["machine"]["when"]}.
Node: OpenSearch {data["engine"]} single node on 127.0.0.1, heap {data["heap"]}, 1 shard, 0 replicas,
sharing the 2 cores with the benchmark. Client: opensearch-py {data["client"]} (async, aiohttp).
{r["documents"]:,} generated tickets, 40 tenants; bulk batches of {r["bulk_batch"]:,}, 2 in flight; one refresh.
{data["queries"]} queries: tenant filter always, product filter on about half, top 5, exact total.
Raw = opensearch-py `search` with the backend's body. Tool = SearchTool.run around the same call.
Overhead = tool time minus the time of the opensearch-py call made inside that same tool call
(validation, scope, query building, response parsing, shaping and snippets). Comparing with a separate
raw call instead (same query, alternating order) mixes in the engine's own jitter: p50 / p95 =
{r["tool_minus_separate_raw_call_ms"]["p50"]} / {r["tool_minus_separate_raw_call_ms"]["p95"]} ms.

| documents | ingest docs/s | raw p50 / p95 / p99 ms | tool p50 / p95 / p99 ms | overhead p50 / p95 ms |
|---|---|---|---|---|
| {r["documents"]:,} | {r["ingest_docs_per_s"]:,} | {trio(r["raw_client_ms"])} | {trio(r["tool_ms"])} | \
{r["tool_overhead_ms"]["p50"]} / {r["tool_overhead_ms"]["p95"]} |
"""


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--docs", type=int, default=1_000_000, help="documents to ingest")
    parser.add_argument("--queries", type=int, default=1000, help="queries to time")
    parser.add_argument("--batch", type=int, default=5_000, help="documents per bulk request")
    parser.add_argument("--url", default=os.environ.get(URL_ENV), help="an existing node (default: start one)")
    parser.add_argument("--heap", default="2g", help="heap of the node this script starts")
    args = parser.parse_args()
    node = None
    url = args.url
    if not url:
        node = OpenSearchNode(NodeConfig(state_dir=REPO / ".cache" / "opensearch-node-bench", heap=args.heap))
        url = node.start(clean=True)
    try:
        import opensearchpy

        result = asyncio.run(run(url, args.docs, args.queries, args.batch))
        info = __import__("httpx").get(url, timeout=5).json()
    finally:
        if node is not None:
            node.stop()
    data = {
        "machine": machine(),
        "engine": info["version"]["number"],
        "client": ".".join(map(str, opensearchpy.VERSION)),
        "heap": args.heap if node is not None else "as started",
        "queries": args.queries,
        "result": result,
    }
    write_results("opensearch", data, markdown(data))
    print(markdown(data))
    return 0


if __name__ == "__main__":
    sys.exit(main())
