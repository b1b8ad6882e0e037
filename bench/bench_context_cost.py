"""Context cost: characters a model receives per search, scopegate vs raw ``_source`` vs full documents.

Run (about 4 min: builds a 100,000-ticket index from the workload corpus, then 2,400 queries):

    .venv/bin/python bench/bench_context_cost.py
    .venv/bin/python bench/bench_context_cost.py --index .cache/bench-embedded/idx-2000000
    .venv/bin/python bench/bench_context_cost.py --quick      # 20,000 tickets, 400 queries

Same queries, same engine, same hits; only what is handed to the model differs:

- **scopegate**: the search tool's whole result (ids, subject, status, a bounded snippet,
  honest total, hint, next page, note), as JSON;
- **raw _source** (what the Elasticsearch MCP server's ``search`` tool returns:
  ``Total results: N, showing K.`` then the hits' ``_source`` as a JSON array):
  every stored field of each hit, for the same 5 hits and for Elasticsearch's
  default ``size`` of 10;
- **ADK-style full documents**: a function tool returning
  ``{"status": "success", "documents": [...]}`` with the 5 hits' full documents.

Characters are counted on compact JSON; tokens are estimated at 4 characters each.
Writes bench/results/context_cost.json and .md. Nothing is asserted.
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import json
import shutil
import statistics
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import machine, write_results
from _measure import load_average, now
from _workload_runs import prepared

from scopegate.backends.embedded import EmbeddedBackend
from scopegate.search.model import SearchQuery
from scopegate.search.tools import SearchTool
from scopegate_lab.workload import read_corpus, read_queries, workload_spec

REPO = Path(__file__).resolve().parents[1]
DEFAULT_CORPUS = REPO / ".cache" / "workload" / "w2m"


def _chars(value: Any) -> int:
    return len(json.dumps(value, ensure_ascii=False, separators=(",", ":")))


def _sources(backend: EmbeddedBackend, query: SearchQuery, size: int) -> tuple[int, list[dict[str, Any]]]:
    raw = backend.search_sync(dataclasses.replace(query, limit=size))
    return raw.total, [dict(h.fields) for h in raw.hits]


async def measure(backend: EmbeddedBackend, corpus: Path, queries: int) -> dict[str, Any]:
    tool = SearchTool(backend.spec, backend)
    plan = prepared(tool, read_queries(corpus)[:queries])
    rows: dict[str, list[int]] = {"scopegate": [], "raw_source_5": [], "raw_source_10": [], "adk_full_5": []}
    largest = 0
    for args, ctx, query in plan:
        result = (await tool.run(args, ctx)).result
        largest = max(largest, _chars(result["results"]))
        total, five = _sources(backend, query, 5)
        _, ten = _sources(backend, query, 10)
        rows["scopegate"].append(_chars(result))
        rows["raw_source_5"].append(len(f"Total results: {total}, showing {len(five)}.") + _chars(five))
        rows["raw_source_10"].append(len(f"Total results: {total}, showing {len(ten)}.") + _chars(ten))
        rows["adk_full_5"].append(_chars({"status": "success", "documents": five}))
    out: dict[str, Any] = {}
    for name, values in rows.items():
        s = sorted(values)
        out[name] = {
            "mean": round(statistics.fmean(s)),
            "p50": s[len(s) // 2],
            "p95": s[min(len(s) - 1, int(0.95 * len(s)))],
            "max": s[-1],
            "tokens_mean": round(statistics.fmean(s) / 4),
        }
    base = out["scopegate"]["mean"]
    for name in ("raw_source_5", "raw_source_10", "adk_full_5"):
        out[name]["ratio_to_scopegate"] = round(out[name]["mean"] / base, 1)
    out["queries"] = len(plan)
    out["scopegate_max_results_chars"] = largest
    return out


def markdown(data: dict[str, Any]) -> str:
    r = data["result"]
    lines = [
        "# Context cost per search: scopegate vs raw _source vs full documents",
        "",
        f"{data['when']}; index of {data['documents']:,} workload tickets (bodies 200 characters to 50 KB); "
        f"{r['queries']} held-out queries with a tenant filter, pages 1-4. Characters of compact JSON per call "
        "(tokens ~ characters / 4).",
        "",
        "| returned to the model | mean | p50 | p95 | max | ~tokens (mean) | × scopegate |",
        "|---|---|---|---|---|---|---|",
    ]
    names = {
        "scopegate": "scopegate search result (5 hits, snippets, total, hint)",
        "raw_source_5": "raw `_source`, same 5 hits (Elasticsearch MCP `search` format)",
        "raw_source_10": "raw `_source`, Elasticsearch default size 10",
        "adk_full_5": "ADK-style full documents, 5 hits",
    }
    for key, label in names.items():
        v = r[key]
        ratio = "1" if key == "scopegate" else f"{v['ratio_to_scopegate']}"
        lines.append(
            f"| {label} | {v['mean']:,} | {v['p50']:,} | {v['p95']:,} | {v['max']:,} | {v['tokens_mean']:,} | {ratio} |"
        )
    largest = r["scopegate_max_results_chars"]
    lines += ["", f"Largest scopegate `results` list seen: {largest:,} characters (budget 2,500)."]
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--corpus", type=Path, default=DEFAULT_CORPUS)
    parser.add_argument("--index", type=Path, help="an existing workload index (default: build one)")
    parser.add_argument("--docs", type=int, default=100_000)
    parser.add_argument("--queries", type=int, default=2400)
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    if args.quick:
        args.docs, args.queries = 20_000, 400
    built = None
    if args.index is None:
        built = REPO / ".cache" / "bench-context" / f"idx-{args.docs}"
        shutil.rmtree(built, ignore_errors=True)
        backend = EmbeddedBackend(workload_spec(), built)
        backend.ingest_sync(read_corpus(args.corpus, args.docs), batch_size=10_000)
    else:
        backend = EmbeddedBackend.open(args.index)
    try:
        documents = backend.count_sync()
        result = asyncio.run(measure(backend, args.corpus, args.queries))
    finally:
        if built is not None:
            shutil.rmtree(built.parent, ignore_errors=True)
    data = {"when": now(), "machine": machine(), "load_average": load_average(), "documents": documents}
    data["result"] = result
    write_results("context_cost", data, markdown(data))
    print(markdown(data))
    return 0


if __name__ == "__main__":
    sys.exit(main())
