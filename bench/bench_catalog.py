"""Catalog mode vs flat mode on real large specs: what the model receives per turn, and how fast a chain runs.

Run (about a minute; the specs are read from ../shared/data/openapi):

    .venv/bin/python bench/bench_catalog.py
    .venv/bin/python bench/bench_catalog.py --check-tokenizer   # also compare token counts with llama.cpp's

Per spec, every operation that can be a tool is selected (named in the allowlist), as a team
that needs the whole API would; the few that cannot be translated (a required multipart body)
are counted and left out of both modes. Measured:

- **declarations per turn**: flat = every operation's declaration (name, description,
  parameters), compact JSON, as ADK and MCP send them on every model turn; catalog = the three
  catalog tools. In characters and in tokens of the offline eval model's own tokenizer
  (Qwen2.5, read from its GGUF file: bench/_gguf_tokenizer.py);
- **what a catalog task adds to the conversation**: one find_operations result and one
  describe_operation result (median and p95 over the spec's operations);
- **self-retrieval**: an operation's own summary as the query: is it in find_operations' answer
  (top 8)? An optimistic bound on the ranking, not a model's accuracy (that is ``scopegate eval``);
- **latency**: find (on the large catalog, in process), and a find -> describe -> call chain over
  the catalog of the orders example service (real HTTP on 127.0.0.1, under the guard), p50/p95
  per run and the spread over runs.

Writes bench/results/catalog.json and .md. Nothing is asserted.
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import json
import random
import statistics
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import machine, write_results
from _gguf_tokenizer import qwen_tokenizer
from _measure import now, percentiles

from scopegate.context import CallContext
from scopegate.guard import Guard
from scopegate.openapi.errors import TranslationError
from scopegate.openapi.loader import load_document
from scopegate.openapi.runtime import OperationToolset, ToolsetSettings
from scopegate.openapi.runtime.catalog import OperationCatalog
from scopegate.openapi.translate import TranslateOptions, translate

REPO = Path(__file__).resolve().parents[1]
SHARED = REPO.parent / "shared" / "data" / "openapi"
if not SHARED.is_dir():
    SHARED = Path("/work/shared/data/openapi")
MODEL = Path.home() / ".cache" / "scopegate" / "models" / "qwen2.5-coder-0.5b-instruct-q4_k_m.gguf"
SPECS = {
    "payments (Chargebee)": "chargebee_api_v1_spec.json",
    "code hosting (GitHub)": "github-api.github.com-v0.0.5.json",
    "cloud (Cloudflare)": "cloudflare-openapi-2024-06-27.json",
}
LOOPBACK = "http://127.0.0.1:9"


def compact(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def whole_api(spec: Path) -> tuple[ToolsetSettings, int]:
    """Every operation that can be a tool, named in the allowlist; and how many cannot (skipped)."""
    doc = load_document(spec)
    usable, skipped = [], 0
    for info in doc.infos():
        try:
            if info.problem:
                raise TranslationError(info.key, info.problem)
            translate(doc, [info], TranslateOptions())
            usable.append(info.key)
        except TranslationError:
            skipped += 1
    return ToolsetSettings(spec=spec, allow=tuple(usable), base_url=LOOPBACK), skipped


def declaration(tool: Any) -> dict[str, Any]:
    return {"name": tool.name, "description": tool.description, "parameters": tool.parameters_schema()}


async def size_of(label: str, spec: Path, tokenizer: Any) -> dict[str, Any]:
    started = time.perf_counter()
    settings, skipped = whole_api(spec)
    started = time.perf_counter()
    toolset = OperationToolset(settings)
    build_s = time.perf_counter() - started
    try:
        started = time.perf_counter()
        catalog = OperationCatalog.of(list(toolset.tools))
        index_s = time.perf_counter() - started
        flat = compact([declaration(t) for t in toolset.tools])
        cat = compact([declaration(t) for t in catalog.tools])
        ctx = CallContext(state={"user_id": "u1"})
        describe_chars, find_chars, describe_tokens, find_tokens = [], [], [], []
        hits = 0
        find_ms: list[float] = []
        for entry in catalog.entries:
            described = (await catalog.describe.run({"name": entry.tool.name}, ctx)).result
            text = compact(described)
            describe_chars.append(len(text))
            describe_tokens.append(len(tokenizer.encode(text).ids))
        sample = random.Random(7).sample(list(catalog.entries), min(300, len(catalog.entries)))
        for entry in sample:
            query = entry.summary or entry.tool.name
            t0 = time.perf_counter()
            found = (await catalog.find.run({"query": query}, ctx)).result
            find_ms.append((time.perf_counter() - t0) * 1000)
            text = compact(found)
            find_chars.append(len(text))
            find_tokens.append(len(tokenizer.encode(text).ids))
            hits += entry.tool.name in [o["name"] for o in found["operations"]]
        return {
            "spec": label,
            "file": spec.name,
            "operations": len(toolset.tools),
            "writes": sum(not t.read_only for t in toolset.tools),
            "untranslatable": skipped,
            "build_s": round(build_s, 2),
            "index_build_s": round(index_s, 3),
            "flat": {"chars": len(flat), "tokens": len(tokenizer.encode(flat).ids)},
            "catalog": {"chars": len(cat), "tokens": len(tokenizer.encode(cat).ids)},
            "describe_result": _dist(describe_chars, describe_tokens),
            "find_result": _dist(find_chars, find_tokens),
            "self_retrieval_top8": round(hits / len(sample), 3),
            "self_retrieval_queries": len(sample),
            "find_ms": percentiles(find_ms),
        }
    finally:
        await toolset.aclose()


def _dist(chars: list[int], tokens: list[int]) -> dict[str, Any]:
    def p95(v: list[int]) -> int:
        return sorted(v)[min(len(v) - 1, int(0.95 * len(v)))]

    return {
        "chars_median": int(statistics.median(chars)),
        "chars_p95": p95(chars),
        "tokens_median": int(statistics.median(tokens)),
        "tokens_p95": p95(tokens),
    }


async def chain_latency(runs: int, chains: int) -> dict[str, Any]:
    """find -> describe -> call (getOrder) over the orders service, guarded, real HTTP on loopback."""
    from scopegate.demo.orders_demo import orders_settings
    from scopegate.examples.orders.data import ALICE
    from scopegate.examples.orders.server import running_orders_service

    per_run: list[dict[str, float]] = []
    with running_orders_service() as svc:
        settings = dataclasses.replace(
            orders_settings(svc.base_url), include=("tag:orders",), exclude=("/orders/*/legacy",)
        )
        toolset = OperationToolset(settings)
        guard = Guard()
        try:
            catalog = OperationCatalog.of(list(toolset.tools), [guard.wrap(t) for t in toolset.tools])
            ctx = CallContext(state={"user_id": ALICE}, invocation_id="bench", session_id="bench")
            for _run in range(runs):
                samples: list[float] = []
                for i in range(chains):
                    t0 = time.perf_counter()
                    found = (await catalog.find.run({"query": "get one order"}, ctx)).result
                    name = found["operations"][0]["name"]
                    await catalog.describe.run({"name": name}, ctx)
                    got = await catalog.call.run({"name": name, "arguments": {"orderId": f"ord_{1001 + i % 25}"}}, ctx)
                    samples.append((time.perf_counter() - t0) * 1000)
                    if got.result.get("status") != "ok":
                        raise RuntimeError(got.result)
                per_run.append(percentiles(samples))
                guard.invocation_ended("bench", "bench")
        finally:
            await toolset.aclose()
            await guard.aclose()
    p50s = [r["p50"] for r in per_run]
    p95s = [r["p95"] for r in per_run]
    return {
        "runs": runs,
        "chains_per_run": chains,
        "per_run": per_run,
        "p50_ms": {"median": round(statistics.median(p50s), 3), "min": min(p50s), "max": max(p50s)},
        "p95_ms": {"median": round(statistics.median(p95s), 3), "min": min(p95s), "max": max(p95s)},
    }


def check_tokenizer(tokenizer: Any, texts: list[str]) -> list[dict[str, int]]:
    """Token counts of ours vs llama.cpp's (prompt_tokens of a 1-token completion of the raw text)."""
    from scopegate.evals.llama import EngineSettings, LlamaEngine

    engine = LlamaEngine(EngineSettings.for_model(MODEL, n_ctx=4096))
    out = []
    for text in texts:
        raw = engine._server.handle_completions({"prompt": text, "max_tokens": 1, "temperature": 0})
        usage = raw.get("usage") or {}
        theirs = usage.get("prompt_tokens") or raw.get("tokens_evaluated")
        out.append({"chars": len(text), "ours": len(tokenizer.encode(text).ids), "llama_cpp": int(theirs or -1)})
    return out


def markdown(data: dict[str, Any]) -> str:
    note = data.get("tokenizer_check_note")
    checked = f"; checked against llama.cpp: {note}" if note else ""
    lines = [
        "# Catalog mode vs flat mode: declarations per turn, context per task, latency",
        "",
        f"Measured {data['when']} on {data['machine']['cpu']} ({data['machine']['cpus']} CPUs, shared). "
        "Produced by `bench/bench_catalog.py`. Tokens: the offline eval model's tokenizer "
        f"(Qwen2.5, from its GGUF file{checked}).",
        "",
        "Every operation of each spec that can be a tool is selected (the untranslatable column: left out of "
        "both). **Flat** sends every "
        "operation's declaration on every model turn; **catalog** sends three tools, and a task adds one "
        "find_operations result and one describe_operation result to the conversation.",
        "",
        "The payments API of 468 operations the issue names is not among the shared specs; Chargebee "
        "(subscription billing and payments, 104 operations with very long parameter lists) stands in for it, "
        "GitHub (623) is a middle size, Cloudflare (1,449, 1,430 of them tools) is the cloud API.",
        "",
        "| spec | operations (writes) | flat per turn: chars / tokens | catalog per turn: chars / tokens | "
        "find result: tokens median (p95) | describe result: tokens median (p95) | "
        "self-retrieval top 8 | untranslatable |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for s in data["specs"]:
        lines.append(
            f"| {s['spec']} | {s['operations']} ({s['writes']}) | {s['flat']['chars']:,} / {s['flat']['tokens']:,} | "
            f"{s['catalog']['chars']:,} / {s['catalog']['tokens']:,} | {s['find_result']['tokens_median']} "
            f"({s['find_result']['tokens_p95']}) | {s['describe_result']['tokens_median']} "
            f"({s['describe_result']['tokens_p95']}) | {s['self_retrieval_top8']:.1%} of "
            f"{s['self_retrieval_queries']} | {s['untranslatable']} |"
        )
    lines += [
        "",
        "Self-retrieval asks for an operation by its own summary: an optimistic bound on the ranking, not a "
        "model's tool-choice accuracy.",
        "",
        "| spec | toolset build (s) | catalog index build (s) | find_operations p50 / p95 (ms) |",
        "|---|---|---|---|",
    ]
    for s in data["specs"]:
        find = s["find_ms"]
        lines.append(f"| {s['spec']} | {s['build_s']} | {s['index_build_s']} | {find['p50']:.1f} / {find['p95']:.1f} |")
    c = data["chain"]
    lines += [
        "",
        f"**find -> describe -> call** (orders example service, real HTTP on 127.0.0.1, guarded; {c['runs']} runs of "
        f"{c['chains_per_run']} chains): p50 {c['p50_ms']['median']:.1f} ms (runs {c['p50_ms']['min']:.1f}-"
        f"{c['p50_ms']['max']:.1f}), p95 {c['p95_ms']['median']:.1f} ms (runs {c['p95_ms']['min']:.1f}-"
        f"{c['p95_ms']['max']:.1f}). In-process tool time only: "
        "each step is also one model turn, which dominates (seconds per turn for the offline model).",
        "",
        f"FastMCP tool-search reference row: {data['fastmcp']}.",
    ]
    return "\n".join(lines)


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--chains", type=int, default=100)
    parser.add_argument("--check-tokenizer", action="store_true")
    args = parser.parse_args()
    tokenizer = qwen_tokenizer(MODEL)
    specs = [await size_of(label, SHARED / name, tokenizer) for label, name in SPECS.items()]
    for s in specs:
        print(json.dumps({k: s[k] for k in ("spec", "operations", "flat", "catalog", "self_retrieval_top8")}))
    chain = await chain_latency(args.runs, args.chains)
    print(json.dumps(chain["p50_ms"]), json.dumps(chain["p95_ms"]))
    # FastMCP is not a scopegate dependency: its row runs from its own venv, in two benchmarks of their own.
    fastmcp_note = (
        "run separately, FastMCP in its own venv: the eval cases through its BM25SearchTransform in "
        "catalog_eval_fastmcp_<set>.md (bench/bench_catalog_fastmcp.py), what one search hands the model in "
        "catalog_fastmcp_search.md (bench/bench_fastmcp_search_size.py)"
    )
    data: dict[str, Any] = {
        "when": now(),
        "machine": machine(),
        "specs": specs,
        "chain": chain,
        "fastmcp": fastmcp_note,
    }
    if args.check_tokenizer:
        texts = [compact(declaration_text) for declaration_text in _sample_texts()]
        checked = check_tokenizer(tokenizer, texts)
        data["tokenizer_check"] = checked
        same = sum(c["ours"] == c["llama_cpp"] for c in checked)
        data["tokenizer_check_note"] = f"{same} of {len(checked)} sample texts give the same count"
    write_results("catalog", data, markdown(data))


def _sample_texts() -> list[Any]:
    spec = SHARED / SPECS["cloud (Cloudflare)"]
    doc = load_document(spec)
    keys = [i.key for i in doc.infos() if not i.state_changing][:5]
    toolset = OperationToolset(ToolsetSettings(spec=spec, allow=tuple(keys), base_url=LOOPBACK))
    return [declaration(t) for t in toolset.tools] + ["Hello world", {"query": "list DNS records of a zone"}]


if __name__ == "__main__":
    asyncio.run(main())
