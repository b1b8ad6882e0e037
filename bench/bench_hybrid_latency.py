"""Embedded keyword vs hybrid latency through the tool, query encoding included; ingest docs/s with embeddings.

Run: .venv/bin/python bench/bench_hybrid_latency.py [--docs 100000] [--queries 300] [--runs 3] [--ingest-sample 2000]

1. Ingest with embeddings: --ingest-sample generated tickets into a hybrid index with the real
   encoder (MiniLM int8, 2 threads): docs/s end to end (encoding dominates), next to keyword-only
   ingest of the same tickets.
2. Latency at --docs: 40 tenants, tenant filter always, product filter on about half (the query
   plan of bench_embedded.py), SearchTool.run top 5 with a total. Queries are encoded by the real
   model on every call (no cache). Document vectors of this index come from a hashed stand-in
   encoder, because encoding 100k tickets with MiniLM takes ~30+ minutes on 2 shared cores; the
   vector search cost depends on the number of in-scope rows and the dimension (384), not on
   which model made the vectors (tenants of 2,500 rows take the exact path either way).
Each query set is run --runs times; every run's p50/p95 is reported (spread). Writes
bench/results/hybrid_latency.json and .md. Runtime: ~5-10 minutes on 2 shared cores.
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import hashlib
import os
import shutil
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import generated_tickets, machine, percentiles, query_plan, write_results

from scopegate.backends.embedded import EmbeddedBackend
from scopegate.context import CallContext
from scopegate.demo.corpus import ticket_spec
from scopegate.search.tools import SearchTool
from scopegate.vector.encoder import Encoder, Vectors, default_encoder, normalize


class StandInDocuments:
    """Real query vectors from ``inner``; documents get hashed unit vectors (see the module docstring)."""

    def __init__(self, inner: Encoder) -> None:
        self.inner = inner
        self.model_id = f"standin+{inner.model_id}"
        self.dim = inner.dim

    def encode(self, texts: Sequence[str], *, kind: Literal["query", "document"] = "document") -> Vectors:
        if kind == "query":
            return self.inner.encode(texts, kind="query")
        seeds = [int(hashlib.sha1(t.encode()).hexdigest()[:8], 16) for t in texts]
        return normalize(
            np.stack([np.random.default_rng(s).standard_normal(self.dim, dtype=np.float32) for s in seeds])
        )


async def timed_queries(tool: SearchTool, plan: list[tuple[str, str, str | None]]) -> list[float]:
    samples = []
    for text, tenant, product in plan:
        args: dict[str, Any] = {"query": text}
        if product:
            args["product"] = product
        started = time.perf_counter()
        out = (await tool.run(args, CallContext(state={"tenant_id": tenant}))).result
        samples.append((time.perf_counter() - started) * 1000)
        assert out["status"] == "ok", out
    return samples


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--docs", type=int, default=100_000)
    parser.add_argument("--queries", type=int, default=300)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--ingest-sample", type=int, default=2_000)
    args = parser.parse_args()
    load_start = [round(x, 2) for x in os.getloadavg()]
    encoder = default_encoder(threads=2)
    hybrid_spec = dataclasses.replace(ticket_spec(), retrieval="hybrid")
    keyword_spec = ticket_spec()
    tmp = Path(tempfile.mkdtemp(prefix="scopegate-hybrid-latency-"))
    try:
        sample = list(generated_tickets(args.ingest_sample, seed=3))
        kw_report = EmbeddedBackend(keyword_spec, tmp / "kw-sample").ingest_sync(sample, batch_size=1_000)
        hy_report = EmbeddedBackend(hybrid_spec, tmp / "hy-sample", encoder=encoder).ingest_sync(
            sample, batch_size=1_000
        )
        ingest = {
            "sample_docs": args.ingest_sample,
            "keyword_docs_per_s": round(kw_report.docs_per_second),
            "hybrid_docs_per_s": round(hy_report.docs_per_second, 1),
        }
        print("ingest", ingest, flush=True)
        path = tmp / "big"
        standin = StandInDocuments(encoder)
        started = time.perf_counter()
        big = EmbeddedBackend(hybrid_spec, path, encoder=standin)
        big.ingest_sync(generated_tickets(args.docs), batch_size=20_000)
        build_s = time.perf_counter() - started
        keyword_backend = EmbeddedBackend(keyword_spec, path)
        plan = query_plan(args.queries)
        runs: dict[str, list[dict[str, float]]] = {"keyword": [], "hybrid": [], "query_encoding": []}
        for _ in range(args.runs):
            runs["keyword"].append(
                percentiles(asyncio.run(timed_queries(SearchTool(keyword_spec, keyword_backend), plan)))
            )
            runs["hybrid"].append(percentiles(asyncio.run(timed_queries(SearchTool(hybrid_spec, big), plan))))
            enc = []
            for text, _, _ in plan:
                t0 = time.perf_counter()
                encoder.encode([text], kind="query")
                enc.append((time.perf_counter() - t0) * 1000)
            runs["query_encoding"].append(percentiles(enc))
            print({k: v[-1] for k, v in runs.items()}, flush=True)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    data = {
        "machine": machine(),
        "load_start": load_start,
        "load_end": [round(x, 2) for x in os.getloadavg()],
        "docs": args.docs,
        "queries": args.queries,
        "model": encoder.model_id,
        "index_build_s_standin_vectors": round(build_s, 1),
        "ingest": ingest,
        "runs": runs,
    }
    write_results("hybrid_latency", data, markdown(data))
    print(markdown(data))
    return 0


def markdown(data: dict[str, Any]) -> str:
    def spread(name: str, key: str) -> str:
        return " / ".join(f"{r[key]:.2f}" for r in data["runs"][name])

    ing = data["ingest"]
    return f"""# Embedded keyword vs hybrid latency ({data["docs"]:,} documents)

Machine: {data["machine"]["cpus"]} cores, {data["machine"]["when"]}, load average {data["load_start"]} -> \
{data["load_end"]}: shared with other jobs, so these are upper bounds. Model {data["model"]} (2 threads).
{data["queries"]} queries per run, {len(data["runs"]["keyword"])} runs (each cell lists every run), SearchTool.run,
40 tenants (tenant filter always, product filter on about half), top 5 with a total. Hybrid = keyword (depth 100)
+ in-scope exact k-NN (depth 100) + convex fusion, query encoded on every call.

| path | p50 ms (per run) | p95 ms (per run) |
|---|---|---|
| keyword | {spread("keyword", "p50")} | {spread("keyword", "p95")} |
| hybrid, incl. query encoding | {spread("hybrid", "p50")} | {spread("hybrid", "p95")} |
| query encoding alone | {spread("query_encoding", "p50")} | {spread("query_encoding", "p95")} |

Ingest of {ing["sample_docs"]:,} generated tickets: keyword only {ing["keyword_docs_per_s"]:,} docs/s; with embeddings
{ing["hybrid_docs_per_s"]} docs/s (encoding dominates). The {data["docs"]:,}-document index used stand-in document
vectors (see the script's docstring); real query encoding is included in every hybrid call.
"""


if __name__ == "__main__":
    sys.exit(main())
