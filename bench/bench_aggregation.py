"""Counting on the embedded engine: tantivy's aggregation API against one filtered count per bucket.

For each size: ingest docs/s with the aggregation layout (fast keyword fields + a date field)
and with the layout of indexes written before it; then, per query (40 tenants, the tenant filter
always, a product filter on every other query), p50/p95/p99 ms of

* ``api``: ``EmbeddedBackend.aggregate_sync`` (one ``terms`` or 1-day ``date_histogram`` call,
  plus the total and, for terms, the documents with a value);
* ``counts``: the alternative without the aggregation API: one ``count`` per enumerated value
  (or per date bucket) plus the same total;
* ``tool``: ``AggregateTool.run`` (validation, scope, thread hop, the api call, shaping).

Each measurement is repeated ``--runs`` times; the table shows the median run and the spread
of p50 over runs. Figures taken while the machine is shared are provisional.

Run: .venv/bin/python bench/bench_aggregation.py [--sizes 100000 1000000] [--queries 400] [--runs 3]
(about 1 minute for 100k, 8 for 1M). Writes bench/results/aggregation.json and aggregation.md.
"""

from __future__ import annotations

import argparse
import asyncio
import datetime as dt
import os
import random
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import tantivy

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import generated_tickets, machine, percentiles, write_results

from scopegate.backends.embedded import EmbeddedBackend, IndexLayout, build_schema
from scopegate.context import CallContext
from scopegate.demo.corpus import ticket_spec
from scopegate.scope import Scope
from scopegate.search.agg_tool import AggregateTool
from scopegate.search.aggregation import AggregationQuery, build_query, validate_aggregation_args
from scopegate.search.dates import bucket_starts, midnight

TODAY = dt.date(2025, 6, 30)
DAYS = 181


def dated_tickets(count: int) -> Iterator[dict[str, Any]]:
    rng = random.Random(3)
    start = dt.datetime(2025, 1, 1, tzinfo=dt.UTC)
    for ticket in generated_tickets(count):
        moment = start + dt.timedelta(seconds=rng.randrange(DAYS * 86400))
        yield {**ticket, "created_at": moment.strftime("%Y-%m-%dT%H:%M:%SZ")}


def plan(n: int) -> list[tuple[str, dict[str, Any]]]:
    rng = random.Random(5)
    out = []
    for i in range(n):
        tenant = f"tenant{rng.randrange(40):03d}"
        args: dict[str, Any] = {"group_by": "status"}
        if i % 3 == 0:
            args = {"group_by": "created_at", "interval": "week", "since": "2025-03-01", "until": "2025-05-31"}
        if i % 2:
            args["product"] = rng.choice(["payments", "payouts", "billing", "identity"])
        out.append((tenant, args))
    return out


def filtered_counts(backend: EmbeddedBackend, query: AggregationQuery) -> dict[str, int]:
    """The alternative to the aggregation API: one count per bucket (what legacy fields would need)."""
    schema = build_schema(backend.spec, backend.layout)
    searcher = backend._index.searcher()
    base = backend._aggregation_base(query)

    def count(extra: tantivy.Query) -> int:
        both = tantivy.Query.boolean_query([(tantivy.Occur.Must, base), (tantivy.Occur.Must, extra)])
        return int(searcher.search(both, 1, count=True).count or 0)

    out = {"total": int(searcher.search(base, 1, count=True).count or 0)}
    if query.kind == "terms":
        for value in query.values:
            out[value] = count(tantivy.Query.term_query(schema, query.field, value))
        return out
    assert query.interval is not None and query.start is not None and query.end is not None
    starts = bucket_starts(query.start, query.end, query.interval, limit=1000) or ()
    for first, nxt in zip(starts, [*starts[1:], query.end], strict=True):
        window = tantivy.Query.range_query(
            schema, query.field, tantivy.FieldType.Date, midnight(first), midnight(nxt), include_lower=True,
            include_upper=False,
        )  # fmt: skip
        out[first.isoformat()] = count(window)
    return out


def timed(fn: Callable[[], Any]) -> float:
    t0 = time.perf_counter()
    fn()
    return (time.perf_counter() - t0) * 1000


async def measure(backend: EmbeddedBackend, queries: int) -> dict[str, Any]:
    tool = AggregateTool(backend.spec, backend, today=lambda: TODAY)
    api_ms: list[float] = []
    counts_ms: list[float] = []
    tool_ms: list[float] = []
    steps = plan(queries)
    for tenant, args in steps[:40]:  # warm-up
        await tool.run(args, CallContext(state={"tenant_id": tenant}))
    for tenant, args in steps:
        request = validate_aggregation_args(tool.settings, args, TODAY)
        assert not isinstance(request, dict), request
        query = build_query(tool.settings, request, Scope(tenant))
        api_ms.append(timed(lambda q=query: backend.aggregate_sync(q)))
        counts_ms.append(timed(lambda q=query: filtered_counts(backend, q)))
        t0 = time.perf_counter()
        result = (await tool.run(args, CallContext(state={"tenant_id": tenant}))).result
        tool_ms.append((time.perf_counter() - t0) * 1000)
        assert result["status"] == "ok", result
    return {"api_ms": percentiles(api_ms), "counts_ms": percentiles(counts_ms), "tool_ms": percentiles(tool_ms)}


def ingest(path: Path, size: int, layout: IndexLayout | None) -> tuple[EmbeddedBackend, float]:
    spec = ticket_spec()
    if layout is not None:  # an index as older scopegate versions wrote it
        path.mkdir(parents=True)
        tantivy.Index(build_schema(spec, layout), path=str(path), reuse=True, sort_by_field=spec.tenant_field)
    backend = EmbeddedBackend(spec, path)
    t0 = time.perf_counter()
    report = backend.ingest_sync(dated_tickets(size), batch_size=50_000)
    return backend, report.indexed / (time.perf_counter() - t0)


def spread(runs: list[dict[str, Any]], key: str) -> dict[str, Any]:
    p50s = sorted(r[key]["p50"] for r in runs)
    median = sorted(runs, key=lambda r: r[key]["p50"])[len(runs) // 2][key]
    return {**median, "p50_min": p50s[0], "p50_max": p50s[-1]}


async def run(sizes: list[int], queries: int, runs: int) -> dict[str, Any]:
    out: dict[str, Any] = {
        "machine": machine(),
        "loadavg_start": os.getloadavg(),
        "queries": queries,
        "runs": runs,
        "sizes": {},
    }
    root = Path(tempfile.mkdtemp(prefix="scopegate-bench-agg-"))
    try:
        for size in sizes:
            rates: dict[str, list[float]] = {"aggregation_layout": [], "legacy_layout": []}
            measured: list[dict[str, Any]] = []
            for attempt in range(runs):
                legacy, rate = ingest(root / f"legacy-{size}-{attempt}", size, IndexLayout(frozenset(), None))
                rates["legacy_layout"].append(rate)
                await legacy.close()
                backend, rate = ingest(root / f"new-{size}-{attempt}", size, None)
                rates["aggregation_layout"].append(rate)
                measured.append(await measure(backend, queries))
                await backend.close()
                for path in root.iterdir():
                    shutil.rmtree(path, ignore_errors=True)
            entry = {
                "ingest_docs_per_s": {k: round(statistics.median(v)) for k, v in rates.items()},
                "ingest_docs_per_s_range": {k: [round(min(v)), round(max(v))] for k, v in rates.items()},
                **{key: spread(measured, key) for key in ("api_ms", "counts_ms", "tool_ms")},
            }
            out["sizes"][str(size)] = entry
            print(size, entry, flush=True)
    finally:
        shutil.rmtree(root, ignore_errors=True)
    out["loadavg_end"] = os.getloadavg()
    return out


def to_markdown(data: dict[str, Any]) -> str:
    m = data["machine"]
    lines = [
        "# Counting on the embedded engine: aggregation API vs one count per bucket",
        "",
        f"Machine: {m['cpus']} cores, Python {m['python']}, {m['when']}; load average "
        f"{', '.join(f'{x:.2f}' for x in data['loadavg_start'])} at start, "
        f"{', '.join(f'{x:.2f}' for x in data['loadavg_end'])} at the end (shared machine: provisional).",
        f"{data['queries']} queries per run, {data['runs']} runs; 40 tenants; two thirds count by status (product "
        "filter on half), one third by week over 3 months. p50 / p95 / p99 ms of the median run, "
        "[p50 min - max over runs].",
        "",
        "| documents | ingest docs/s (aggregation layout / legacy) | api | one count per bucket | tool |",
        "|---|---|---|---|---|",
    ]
    for size, e in data["sizes"].items():
        cells = []
        for key in ("api_ms", "counts_ms", "tool_ms"):
            s = e[key]
            cells.append(f"{s['p50']} / {s['p95']} / {s['p99']} [{s['p50_min']}-{s['p50_max']}]")
        rate = e["ingest_docs_per_s"]
        lines.append(
            f"| {int(size):,} | {rate['aggregation_layout']:,} / {rate['legacy_layout']:,} | {' | '.join(cells)} |"
        )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sizes", type=int, nargs="+", default=[100_000])
    parser.add_argument("--queries", type=int, default=400)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    data = asyncio.run(run(args.sizes, args.queries, args.runs))
    write_results("aggregation", data, to_markdown(data))
    print(to_markdown(data))


if __name__ == "__main__":
    main()
