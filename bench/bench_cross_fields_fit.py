"""How an OpenSearch existing index's cross_fields stand-in should read a BM25F weight, chosen without the test split.

Run (about 20 minutes on a quiet machine; each index is created and deleted here):

    .venv/bin/python bench/bench_cross_fields_fit.py --opensearch-url URL --elasticsearch-url URL

Elasticsearch's combined_fields query is BM25F: a field weight multiplies that field's term frequency before
saturation, so raising it acts sub-linearly. OpenSearch has no such query; its stand-in, multi_match
cross_fields, multiplies the field's score. Each rule below turns the configured weight ``w`` into the
cross_fields weight (``w`` itself, ``w ** p``, ``1 + ln w``, ...) with a tie_breaker of 0 or 0.1. Two figures
choose between them, neither from the 300 judged test queries:

- agreement: mean top-10 overlap with Elasticsearch's combined_fields at the same ``w`` (1-5), on all 1109
  SciFact queries, no relevance judgments (the rule that makes one config rank alike on both engines);
- train nDCG@10: the 505 SciFact train claims with evidence, their evidence abstracts as the judgments
  (BEIR's train qrels are not in the shared data; ``queries.jsonl`` carries each claim's evidence).

Test nDCG@10 (the 300 BEIR test queries) is reported beside them, not used to choose. Requests go straight
to ``_msearch`` (100 hits per query), not through the tool; bench_existing_relevance measures the chosen rule
through the tool. Writes bench/results/cross_fields_fit.json and .md.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import machine, write_results
from bench_existing_relevance import create_index
from bench_relevance import default_collection

from scopegate.relevance.collection import Collection, load_collection

RULES: dict[str, Callable[[float], float]] = {
    "w": lambda w: w,
    "sqrt w": lambda w: w**0.5,
    "cbrt w": lambda w: w ** (1 / 3),
    "w^0.25": lambda w: w**0.25,
    "1+ln w": lambda w: 1 + math.log(w),
    "1+0.5 ln w": lambda w: 1 + 0.5 * math.log(w),
}
TIE_BREAKERS = (0.0, 0.1)
WEIGHTS = (1.0, 2.0, 3.0, 4.0, 5.0)


def train_collection(test: Collection, root: Path) -> Collection:
    """SciFact train claims with evidence; the evidence abstracts are the judgments."""
    claims = [json.loads(line) for line in (root / "queries.jsonl").open(encoding="utf-8") if line.strip()]
    train = [c for c in claims if c["_id"] not in test.qrels and c.get("metadata")]
    return Collection(
        name=f"{test.name}-train-evidence",
        corpus_files=test.corpus_files,
        queries={c["_id"]: c["text"] for c in train},
        qrels={c["_id"]: dict.fromkeys(c["metadata"], 1) for c in train},
    )


def cross(text: str, weight: float, tie: float) -> dict[str, Any]:
    fields = ["title" if weight == 1 else f"title^{weight:g}", "text"]
    return {"multi_match": {"query": text, "type": "cross_fields", "fields": fields, "operator": "or",
                            "tie_breaker": tie}}  # fmt: skip


def combined(text: str, weight: float) -> dict[str, Any]:
    fields = ["title" if weight == 1 else f"title^{weight:g}", "text"]
    return {"combined_fields": {"query": text, "fields": fields, "operator": "or"}}


async def ranked(
    http: httpx.AsyncClient, index: str, queries: list[tuple[str, str]], make: Callable[[str], dict[str, Any]],
    size: int = 100,
) -> dict[str, list[str]]:  # fmt: skip
    out: dict[str, list[str]] = {}
    for start in range(0, len(queries), 100):
        chunk = queries[start : start + 100]
        lines = []
        for _, text in chunk:
            lines += [json.dumps({"index": index}), json.dumps({"query": make(text), "size": size, "_source": False})]
        response = await http.post(
            "/_msearch", content="\n".join(lines) + "\n", headers={"Content-Type": "application/x-ndjson"}
        )
        response.raise_for_status()
        for (qid, _), answer in zip(chunk, response.json()["responses"], strict=True):
            if "error" in answer:
                raise RuntimeError(json.dumps(answer["error"])[:500])
            out[qid] = [h["_id"] for h in answer["hits"]["hits"]]
    return out


def judged(collection: Collection, run: dict[str, list[str]]) -> dict[str, float]:
    import ir_measures

    scored = {q: {d: float(len(ids) - i) for i, d in enumerate(ids)} or {"-": 0.0} for q, ids in run.items()}
    measures = [ir_measures.parse_measure("nDCG@10"), ir_measures.parse_measure("R@100")]
    found = ir_measures.calc_aggregate(measures, collection.qrels, scored)
    return {str(m): round(float(v), 4) for m, v in found.items()}


def overlap(a: dict[str, list[str]], b: dict[str, list[str]]) -> float:
    return round(sum(len(set(a[q][:10]) & set(b[q][:10])) / 10 for q in a) / len(a), 4)


async def agreement(url: str, test: Collection, every: list[tuple[str, str]]) -> list[dict[str, Any]]:
    rows = []
    index, _ = await create_index(url, test, "standard")
    try:
        async with httpx.AsyncClient(base_url=url, timeout=300) as http:
            reference = {w: await ranked(http, index, every, lambda t, w=w: combined(t, w), 10) for w in WEIGHTS}
            for rule, turn in RULES.items():
                for tie in TIE_BREAKERS:
                    per = {}
                    for w in WEIGHTS:
                        run = await ranked(http, index, every, lambda t, w=w, f=turn, b=tie: cross(t, f(w), b), 10)
                        per[w] = overlap(reference[w], run)
                    rows.append({"rule": rule, "tie_breaker": tie, "overlap": per,
                                 "mean": round(sum(per.values()) / len(per), 4)})  # fmt: skip
                    print(f"  agreement {rule} tb{tie:g}: {rows[-1]['mean']}", file=sys.stderr)
    finally:
        async with httpx.AsyncClient(base_url=url, timeout=60) as http:
            await http.delete(f"/{index}")
    return rows


async def relevance(
    url: str, test: Collection, train: Collection, analyzers: list[str], rules: list[str]
) -> list[dict[str, Any]]:  # fmt: skip
    rows = []
    for analyzer in analyzers:
        index, _ = await create_index(url, test, analyzer)
        try:
            async with httpx.AsyncClient(base_url=url, timeout=300) as http:
                for rule in rules:
                    turn = RULES[rule]
                    for tie in TIE_BREAKERS:
                        for w in WEIGHTS:
                            row: dict[str, Any] = {"analyzer": analyzer, "rule": rule, "tie_breaker": tie, "w": w}
                            for split, coll in (("train", train), ("test", test)):
                                run = await ranked(
                                    http, index, coll.judged_queries(), lambda t, w=w, f=turn, b=tie: cross(t, f(w), b)
                                )
                                row[split] = judged(coll, run)
                            rows.append(row)
                        print(f"  {analyzer} {rule} tb{tie:g} done", file=sys.stderr)
        finally:
            async with httpx.AsyncClient(base_url=url, timeout=60) as http:
                await http.delete(f"/{index}")
    return rows


def markdown(data: dict[str, Any]) -> str:
    heads = " | ".join(f"w={w:g}" for w in WEIGHTS)
    lines = [
        "# cross_fields weights that read like BM25F (issue 35)",
        "",
        f"{data['when']}: BEIR {data['collection']}, a standard mapping (title and text as text fields) indexed by "
        "plain REST. Each rule turns the configured title weight w into the cross_fields title weight "
        "(bench/bench_cross_fields_fit.py).",
        "",
    ]
    if data["agreement"]:
        lines += ["## Agreement with Elasticsearch combined_fields (top-10 overlap, all 1109 queries, no judgments)",
                  "", f"| rule | tie_breaker | mean | {heads} |", "|---|---|---|" + "---|" * len(WEIGHTS)]  # fmt: skip
        for r in sorted(data["agreement"], key=lambda r: -r["mean"]):
            cells = " | ".join(f"{r['overlap'][w]:.3f}" for w in r["overlap"])
            lines.append(f"| {r['rule']} | {r['tie_breaker']:g} | {r['mean']:.3f} | {cells} |")
        lines.append("")
    for analyzer in sorted({r["analyzer"] for r in data["relevance"]}):
        lines += [f"## OpenSearch, {analyzer} analyzer: nDCG@10 train ({data['train_queries']} claims) / test "
                  f"({data['queries']} queries)", "", f"| rule | tie_breaker | train mean | {heads} |",
                  "|---|---|---|" + "---|" * len(WEIGHTS)]  # fmt: skip
        rows = [r for r in data["relevance"] if r["analyzer"] == analyzer]
        for rule in RULES:
            for tie in TIE_BREAKERS:
                found = {r["w"]: r for r in rows if r["rule"] == rule and r["tie_breaker"] == tie}
                if not found:
                    continue
                mean = sum(r["train"]["nDCG@10"] for r in found.values()) / len(found)
                cells = " | ".join(f"{found[w]['train']['nDCG@10']:.3f} / {found[w]['test']['nDCG@10']:.3f}"
                                   for w in WEIGHTS if w in found)  # fmt: skip
                lines.append(f"| {rule} | {tie:g} | {mean:.3f} | {cells} |")
        lines.append("")
    lines.append(data.get("choice", ""))
    return "\n".join(lines)


async def main_async(args: argparse.Namespace) -> dict[str, Any]:
    root = args.collection or default_collection()
    test = load_collection(root)
    train = train_collection(test, root)
    every = [(c["_id"], c["text"]) for c in map(json.loads, (root / "queries.jsonl").open(encoding="utf-8"))]
    data: dict[str, Any] = {"when": machine()["when"], "machine": machine(), "collection": test.name,
                            "queries": len(test.qrels), "train_queries": len(train.qrels),
                            "agreement": [], "relevance": []}  # fmt: skip
    if args.elasticsearch_url:
        data["agreement"] = await agreement(args.elasticsearch_url, test, every)
    if args.opensearch_url:
        rules = args.rules.split(",") if args.rules else list(RULES)
        data["relevance"] = await relevance(args.opensearch_url, test, train, args.analyzers.split(","), rules)
    return data


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--opensearch-url", default=os.environ.get("SCOPEGATE_OPENSEARCH_URL"))
    parser.add_argument("--elasticsearch-url", default=os.environ.get("SCOPEGATE_ELASTICSEARCH_URL"))
    parser.add_argument("--collection", type=Path)
    parser.add_argument("--analyzers", default="standard,english")
    parser.add_argument("--rules", help="Comma-separated rules for the nDCG part (default: all)")
    parser.add_argument("--out", default="cross_fields_fit")
    args = parser.parse_args()
    data = asyncio.run(main_async(args))
    write_results(args.out, data, markdown(data))
    print(markdown(data))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
