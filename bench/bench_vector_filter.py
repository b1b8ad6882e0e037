"""Filtered k-NN recall and latency for small, medium and huge tenants in one embedded index.

Run: .venv/bin/python bench/bench_vector_filter.py [--docs 1000000] [--queries 200] [--dim 384]

One index of --docs synthetic vectors holds tenants of 50, 5,000 and 500,000 documents (rows
assigned at random, not contiguous) plus ~100 filler tenants. Vectors are synthetic because
encoding 1M texts is infeasible on this machine (~26 hours at the measured MiniLM rate): a
mixture of 2,000 clusters on the unit sphere with noise (neighbours at cosine ~0.6-0.8, like
sentence embeddings), and queries drawn from the same distribution. Documents go in through
EmbeddedBackend.ingest_sync (tantivy + the vector store, with a FunctionEncoder that looks up
the prepared vector), so the HNSW graphs (one per tenant above the exact limit: here only the
500,000-document one), the scope filter and the totals are the product's own.

Recall@10 is measured against exact search computed independently (numpy over the tenant's
rows); totals are the store's in-scope counts against the true tenant sizes. Writes
bench/results/vector_filter.json and .md. Runtime at 1M: ~20-30 minutes on 2 cores (the HNSW
build dominates), ~4.5 GB peak memory, ~3 GB under .cache/bench-vector-filter (deleted after).
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import shutil
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import machine, percentiles, write_results

from scopegate.backends.embedded import EmbeddedBackend
from scopegate.context import CallContext
from scopegate.demo.corpus import ticket_spec
from scopegate.scope import Scope
from scopegate.search.tools import SearchTool
from scopegate.vector.encoder import FunctionEncoder

REPO = Path(__file__).resolve().parents[1]
TENANTS = {"t50": 50, "t5k": 5_000, "t500k": 500_000}


def clustered(n: int, dim: int, rng: np.random.Generator, centroids: np.ndarray, noise: float) -> np.ndarray:
    picks = rng.integers(0, len(centroids), n)
    out = centroids[picks] + rng.standard_normal((n, dim), dtype=np.float32) * noise
    out /= np.linalg.norm(out, axis=1, keepdims=True)
    return out.astype(np.float32)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--docs", type=int, default=1_000_000)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--dim", type=int, default=384)
    parser.add_argument("--clusters", type=int, default=2_000)
    parser.add_argument("--noise", type=float, default=0.045, help="per-dimension noise around a cluster centre")
    parser.add_argument("--keep", action="store_true", help="keep the index under .cache afterwards")
    parser.add_argument("--ef-search", type=int, default=None, help="HNSW efSearch (default: the store's)")
    parser.add_argument("--out", default="vector_filter", help="result file name under bench/results/")
    parser.add_argument(
        "--smoke", action="store_true", help="120k docs, tenants of 50 / 5,000 / 50,000 (a quick check)"
    )
    args = parser.parse_args()
    if args.smoke:
        args.docs = 120_000
        TENANTS["t500k"] = 50_000
    load_start = [round(x, 2) for x in os.getloadavg()]
    rng = np.random.default_rng(7)
    centroids = rng.standard_normal((args.clusters, args.dim), dtype=np.float32)
    centroids /= np.linalg.norm(centroids, axis=1, keepdims=True)
    vectors = clustered(args.docs, args.dim, rng, centroids, args.noise)
    tenant_of = np.empty(args.docs, dtype=object)
    order = rng.permutation(args.docs)
    start = 0
    for name, size in TENANTS.items():
        tenant_of[order[start : start + size]] = name
        start += size
    fillers = max(1, (args.docs - start) // 5_000)
    tenant_of[order[start:]] = [f"f{i % fillers:03d}" for i in range(args.docs - start)]

    encoder = FunctionEncoder(lambda texts: vectors[[int(t) for t in texts]], model_id="synthetic", dim=args.dim)
    spec = dataclasses.replace(ticket_spec(), retrieval="vector", text_fields=ticket_spec().text_fields)
    path = REPO / ".cache" / "bench-vector-filter"
    shutil.rmtree(path, ignore_errors=True)
    backend = EmbeddedBackend(spec, path, encoder=encoder)

    def docs() -> Any:
        for row in range(args.docs):
            yield {"ticket_id": f"V{row:08d}", "tenant_id": tenant_of[row], "body": str(row)}

    started = time.perf_counter()
    report = backend.ingest_sync(docs(), batch_size=50_000)
    ingest_s = time.perf_counter() - started
    assert backend.vectors is not None
    store = backend.vectors.store
    if args.ef_search:
        store.ef_search = args.ef_search
    graph_s = ingest_s  # ensure_graph runs at the end of ingest_sync
    queries = clustered(args.queries, args.dim, np.random.default_rng(99), centroids, args.noise)
    rows_of = {name: np.flatnonzero(tenant_of == name) for name in TENANTS}
    results: dict[str, Any] = {}
    for name, size in TENANTS.items():
        rows = rows_of[name]
        recalls: list[float] = []
        latency: list[float] = []
        exact_latency: list[float] = []
        totals: set[int] = set()
        for q in queries:
            t0 = time.perf_counter()
            found, in_scope = store.search(q, Scope(name), (), 10)
            latency.append((time.perf_counter() - t0) * 1000)
            totals.add(in_scope)
            t1 = time.perf_counter()
            truth = rows[np.argsort(-np.einsum("ij,j->i", vectors[rows], q))[:10]]
            exact_latency.append((time.perf_counter() - t1) * 1000)
            want = {f"V{r:08d}" for r in truth}
            recalls.append(len(want & {d for d, _ in found}) / len(want))
            assert all(tenant_of[int(d[1:])] == name for d, _ in found), "a hit from another tenant"
        path_used = "tenant's HNSW graph + in-scope bitmap" if name in store._graphs else "exact"
        results[name] = {
            "tenant_docs": size,
            "store_in_scope_counts": sorted(totals),
            "recall_at_10": round(float(np.mean(recalls)), 4),
            "recall_at_10_min": round(float(np.min(recalls)), 4),
            "search_ms": percentiles(latency),
            "numpy_exact_ms": percentiles(exact_latency),
            "path": path_used,
        }
        print(name, results[name], flush=True)
    # Through the tool: the total the model sees for each tenant.
    import asyncio

    tool = SearchTool(spec, backend)

    async def tool_totals() -> dict[str, Any]:
        out = {}
        for name in TENANTS:
            res = (await tool.run({"query": "12345"}, CallContext(state={"tenant_id": name}))).result
            out[name] = {"total": res["total"], "total_text": res["total_text"], "ids": len(res["results"])}
        return out

    seen_by_model = asyncio.run(tool_totals())
    data = {
        "machine": machine(),
        "load_start": load_start,
        "load_end": [round(x, 2) for x in os.getloadavg()],
        "docs": args.docs,
        "dim": args.dim,
        "generator": {"clusters": args.clusters, "noise": args.noise, "queries": args.queries},
        "ingest_seconds_incl_hnsw": round(graph_s, 1),
        "ingest_docs_per_s_incl_hnsw": round(report.indexed / graph_s),
        "exact_limit": store.exact_limit,
        "hnsw": {"M": store.hnsw_m, "efSearch": store.ef_search, "efConstruction": 64},
        "tenants": results,
        "tool_totals": seen_by_model,
    }
    write_results(f"{args.out}_smoke" if args.smoke else args.out, data, markdown(data))
    print(markdown(data))
    if not args.keep:
        shutil.rmtree(path, ignore_errors=True)
    return 0


def markdown(data: dict[str, Any]) -> str:
    lines = [
        "# Filtered k-NN: tenants of 50, 5,000 and 500,000 documents in one embedded index",
        "",
        f"{data['docs']:,} synthetic unit vectors, {data['dim']} dims ({data['generator']['clusters']} clusters, "
        f"noise {data['generator']['noise']}), {data['generator']['queries']} queries per tenant, k = 10. "
        f"Machine: {data['machine']['cpus']} cores, {data['machine']['when']}, load {data['load_start']} -> "
        f"{data['load_end']} (shared: latencies are upper bounds). Ingest incl. HNSW build: "
        f"{data['ingest_seconds_incl_hnsw']} s ({data['ingest_docs_per_s_incl_hnsw']:,} docs/s). "
        f"Exact search up to {data['exact_limit']:,} in-scope rows, else the tenant's HNSW graph "
        f"(M {data['hnsw']['M']}, efSearch {data['hnsw']['efSearch']}), its walk restricted to the in-scope rows "
        "by a bitmap.",
        "",
        "| tenant docs | path | recall@10 vs exact (mean / min) | in-scope count | total the model sees | "
        "search p50 / p95 ms | numpy exact p50 / p95 ms |",
        "|---|---|---|---|---|---|---|",
    ]
    for name, r in data["tenants"].items():
        seen = data["tool_totals"][name]
        lines.append(
            f"| {r['tenant_docs']:,} | {r['path']} | {r['recall_at_10']} / {r['recall_at_10_min']} | "
            f"{', '.join(map(str, r['store_in_scope_counts']))} | {seen['total_text']} | "
            f"{r['search_ms']['p50']} / {r['search_ms']['p95']} | "
            f"{r['numpy_exact_ms']['p50']} / {r['numpy_exact_ms']['p95']} |"
        )
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    sys.exit(main())
