"""What FastMCP's tool search hands the model on the large specs, next to scopegate's catalog (issue 39).

    .venv/bin/python bench/bench_fastmcp_search_size.py [--queries 100]

Per spec (the ones bench_catalog.py measures), every operation that can be a tool is selected on both
sides (bench_catalog.whole_api, operations with an operationId). FastMCP (its own venv, see
bench_catalog_fastmcp.py) serves them through ``BM25SearchTransform`` over stdio; the same sample
of queries as bench_catalog.py (an operation's own summary, seed 7) goes to its ``search_tools`` and
to scopegate's ``find_operations`` cut to the same 5 results. Measured: the listing the model gets
every turn, what one search returns (characters, and tokens of the offline eval model's tokenizer),
and whether the operation is among the results (self-retrieval, an optimistic bound, not a model's
accuracy). No model runs; nothing is asserted. Writes bench/results/catalog_fastmcp_search.{json,md}.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import statistics
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import machine, write_results
from _gguf_tokenizer import qwen_tokenizer
from _measure import now
from bench_catalog import LOOPBACK, MODEL, SHARED, SPECS, compact, whole_api
from bench_catalog_fastmcp import DEFAULT_PYTHON, SERVER, fastmcp_version

from scopegate.context import CallContext
from scopegate.openapi.runtime import OperationToolset
from scopegate.openapi.runtime.catalog import OperationCatalog

RESULTS_SHOWN = 5  # FastMCP's default max_results; scopegate's find is cut to the same


def _dist(values: Sequence[int]) -> dict[str, float]:
    ordered = sorted(values)
    return {
        "median": statistics.median(ordered),
        "p95": ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))],
        "max": ordered[-1],
    }


async def one_spec(label: str, spec: Path, tokenizer: Any, python: str, queries: int) -> dict[str, Any]:
    from mcp import Client
    from mcp.client.stdio import StdioServerParameters

    settings, skipped = whole_api(spec)
    toolset = OperationToolset(settings)
    try:
        tools = [t for t in toolset.tools if t.operation.operation_id]
        catalog = OperationCatalog.of(tools, max_results=RESULTS_SHOWN)
        names = {str(t.operation.operation_id): t.name for t in tools}
        sample = random.Random(7).sample(list(catalog.entries), min(queries, len(catalog.entries)))
        ctx = CallContext(state={"user_id": "u1"})
        with tempfile.TemporaryDirectory(prefix="fastmcp-size-") as tmp:
            names_file = Path(tmp) / "names.json"
            names_file.write_text(json.dumps(names), "utf-8")
            args = [str(SERVER), str(spec), LOOPBACK, "--names", str(names_file)]
            params = StdioServerParameters(command=python, args=args, env={**os.environ, "FASTMCP_LOG_LEVEL": "ERROR"})
            async with Client(params) as client:
                listed = await client.list_tools()
                listing = compact(
                    [{"name": t.name, "description": t.description, "parameters": t.input_schema} for t in listed.tools]
                )
                ours = compact([catalog_decl(t) for t in catalog.tools])
                fm: list[tuple[int, int, bool]] = []  # (chars, tokens, the operation among the hits) per query
                sg: list[tuple[int, int, bool]] = []
                for entry in sample:
                    query = entry.summary or entry.tool.name
                    result = await client.call_tool("search_tools", {"query": query})
                    found = (result.structured_content or {}).get("result") or []
                    fm.append(_sized(found, [f.get("name") for f in found], entry.tool.name, tokenizer))
                    mine = (await catalog.find.run({"query": query}, ctx)).result
                    sg.append(_sized(mine, [o["name"] for o in mine["operations"]], entry.tool.name, tokenizer))
                fm_chars, fm_tokens, fm_found = zip(*fm, strict=True)
                sg_chars, sg_tokens, sg_found = zip(*sg, strict=True)
                fm_hits, sg_hits = sum(fm_found), sum(sg_found)
        return {
            "spec": label,
            "file": spec.name,
            "operations": len(tools),
            "untranslatable": skipped,
            "without_operation_id": len(toolset.tools) - len(tools),
            "queries": len(sample),
            "fastmcp_listing": {"chars": len(listing), "tokens": len(tokenizer.encode(listing).ids)},
            "scopegate_listing": {"chars": len(ours), "tokens": len(tokenizer.encode(ours).ids)},
            "fastmcp_search_chars": _dist(fm_chars),
            "fastmcp_search_tokens": _dist(fm_tokens),
            "scopegate_find_chars": _dist(sg_chars),
            "scopegate_find_tokens": _dist(sg_tokens),
            "fastmcp_self_retrieval_top5": round(fm_hits / len(sample), 3),
            "scopegate_self_retrieval_top5": round(sg_hits / len(sample), 3),
        }
    finally:
        await toolset.aclose()


def _sized(result: Any, names: list[Any], wanted: str, tokenizer: Any) -> tuple[int, int, bool]:
    text = compact(result)
    return len(text), len(tokenizer.encode(text).ids), wanted in names


def catalog_decl(tool: Any) -> dict[str, Any]:
    return {"name": tool.name, "description": tool.description, "parameters": tool.parameters_schema()}


def markdown(data: dict[str, Any]) -> str:
    lines = [
        "# FastMCP tool search vs scopegate's catalog: what one search hands the model",
        "",
        f"Measured {data['when']} on {data['machine']['cpu']} ({data['machine']['cpus']} CPUs, shared). "
        "Produced by `bench/bench_fastmcp_search_size.py`. "
        f"{data['fastmcp']}, `BM25SearchTransform(max_results={RESULTS_SHOWN})` with its default JSON result "
        "serializer; scopegate's `find_operations` cut to the same 5 results. Tokens: the offline eval model's "
        "tokenizer (Qwen2.5, bench/_gguf_tokenizer.py). Queries: a sample of operations' own summaries (seed 7).",
        "",
        "FastMCP's `search_tools` returns the full MCP definitions of its hits (input and output schemas), so "
        "the search is also the describe step; scopegate's `find_operations` returns name, summary and "
        "whether it changes state, and `describe_operation` then gives one declaration (catalog.md).",
        "",
        "| spec | operations | listing per turn: FastMCP / scopegate (tokens) | one search, tokens median (p95, max): "
        "FastMCP | scopegate find | self-retrieval top 5: FastMCP / scopegate |",
        "|---|---|---|---|---|---|",
    ]
    for s in data["specs"]:
        fm, sg = s["fastmcp_search_tokens"], s["scopegate_find_tokens"]
        lines.append(
            f"| {s['spec']} | {s['operations']} | {s['fastmcp_listing']['tokens']} / {s['scopegate_listing']['tokens']}"
            f" | {fm['median']:,.0f} ({fm['p95']:,.0f}, {fm['max']:,.0f}) | {sg['median']:,.0f} ({sg['p95']:,.0f}, "
            f"{sg['max']:,.0f}) | {s['fastmcp_self_retrieval_top5']:.1%} / {s['scopegate_self_retrieval_top5']:.1%} "
            f"of {s['queries']} |"
        )
    return "\n".join(lines)


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--queries", type=int, default=100)
    parser.add_argument("--fastmcp-python", default=DEFAULT_PYTHON)
    args = parser.parse_args()
    tokenizer = qwen_tokenizer(MODEL)
    specs = []
    for label, name in SPECS.items():
        specs.append(await one_spec(label, SHARED / name, tokenizer, args.fastmcp_python, args.queries))
        print(json.dumps(specs[-1]), flush=True)
    data = {"when": now(), "machine": machine(), "fastmcp": fastmcp_version(args.fastmcp_python), "specs": specs}
    write_results("catalog_fastmcp_search", data, markdown(data))


if __name__ == "__main__":
    asyncio.run(main())
