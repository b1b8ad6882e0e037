"""Relevance on an index scopegate did not build: SciFact by plain REST, every text query an existing index can get.

Run (a few minutes per engine against running nodes; each index is created and deleted here):

    .venv/bin/python bench/bench_existing_relevance.py --opensearch-url URL --elasticsearch-url URL

The BEIR SciFact corpus goes into a fresh index with a team's standard mapping (``title`` and ``text`` as
``text``, ``doc_id`` and ``tenant_id`` keyword, one shard), by ``_bulk`` over httpx, not scopegate. Two
analyzers: the engine's default ``standard`` (both engines) and ``english`` (OpenSearch only: Elasticsearch's
minimal test distribution has no analysis-common module). The judged queries then run through the search
tool on an ``index_mode: existing`` spec (``subject`` -> ``title``, ``body`` -> ``text`` by ``field_paths``),
with the harness of bench_relevance (:func:`scopegate.relevance.harness.evaluate`, ingest off), for each text
query: multi_match best_fields (tie_breaker 0 and 0.3), most_fields, cross_fields with the raw weight or its
cube root (``cbrt``, how dsl reads a BM25F weight for cross_fields), tie_breaker 0 or 0.1, and Elasticsearch's
combined_fields query; title weights 1 to 5. The existing-index default of ``field_combination:
combined_fields`` per engine (``dsl.EXISTING_COMBINED``, ``dsl.CROSS_FIELDS_POWER`` and
``dsl.CROSS_FIELDS_TIE_BREAKER``) is chosen from these figures and bench_cross_fields_fit's.

Writes bench/results/existing_relevance.json and .md. Metrics are deterministic; nothing is asserted.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import uuid
from pathlib import Path
from typing import Any

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import machine, write_results
from bench_relevance import default_collection

from scopegate.backends import dsl
from scopegate.backends.engine_common import EngineBackend
from scopegate.relevance.collection import Collection, load_collection
from scopegate.relevance.harness import EVAL_TENANT, evaluate, relevance_spec
from scopegate.search.spec import TextField

# name -> (field_combination, tie_breaker, what dsl's existing-index default of combined_fields stands for:
# (the engine's query, cross_fields weight power, cross_fields tie_breaker), or None)
Standin = tuple[str, float, float]
QUERIES: dict[str, tuple[str, float, Standin | None]] = {
    "best_fields": ("best_fields", 0.0, None),
    "best_fields_tb0.3": ("best_fields", 0.3, None),
    "most_fields": ("most_fields", 0.0, None),
    "cross_fields": ("combined_fields", 0.0, ("cross_fields", 1.0, 0.0)),
    "cross_fields_tb0.1": ("combined_fields", 0.0, ("cross_fields", 1.0, 0.1)),
    "cross_fields_cbrt": ("combined_fields", 0.0, ("cross_fields", 1 / 3, 0.0)),
    "cross_fields_cbrt_tb0.1": ("combined_fields", 0.0, ("cross_fields", 1 / 3, 0.1)),
    "combined_fields": ("combined_fields", 0.0, ("combined_fields", 1.0, 0.0)),
}
ENGINE_QUERIES = {
    "opensearch": [q for q in QUERIES if q != "combined_fields"],  # OpenSearch has no combined_fields query
    "elasticsearch": ["best_fields", "best_fields_tb0.3", "most_fields", "cross_fields", "cross_fields_cbrt_tb0.1",
                      "combined_fields"],
}  # fmt: skip
TITLE_WEIGHTS = (1.0, 2.0, 3.0, 4.0, 5.0)


async def create_index(url: str, collection: Collection, analyzer: str) -> tuple[str, str]:
    name = f"scifact-{analyzer}-{uuid.uuid4().hex[:6]}"
    text = {"type": "text", "analyzer": analyzer}
    body = {
        "settings": {"index": {"number_of_shards": 1, "number_of_replicas": 0}},
        "mappings": {
            "properties": {"doc_id": {"type": "keyword"}, "tenant_id": {"type": "keyword"}, "title": text, "text": text}
        },
    }
    async with httpx.AsyncClient(base_url=url, timeout=300) as http:
        (await http.put(f"/{name}", json=body)).raise_for_status()
        lines: list[str] = []

        async def flush() -> None:
            response = await http.post(
                "/_bulk", content="\n".join(lines) + "\n", headers={"Content-Type": "application/x-ndjson"}
            )
            response.raise_for_status()
            assert not response.json()["errors"], response.text[:500]
            lines.clear()

        for doc in collection.documents():
            lines.append(json.dumps({"index": {"_index": name, "_id": doc["id"]}}))
            lines.append(json.dumps({"doc_id": doc["id"], "tenant_id": EVAL_TENANT, "title": doc.get("title", ""),
                                     "text": doc.get("text", "")}))  # fmt: skip
            if len(lines) >= 2000:
                await flush()
        if lines:
            await flush()
        (await http.post(f"/{name}/_refresh")).raise_for_status()
        alias = f"{name}-read"
        (await http.post("/_aliases", json={"actions": [{"add": {"index": name, "alias": alias}}]})).raise_for_status()
    return name, alias


def make_backend(engine: str, url: str, **spec: Any) -> EngineBackend[Any]:
    if engine == "opensearch":
        from scopegate.backends.opensearch import OpenSearchBackend

        return OpenSearchBackend(relevance_spec(**spec), url)
    from scopegate.backends.elasticsearch import ElasticsearchBackend

    return ElasticsearchBackend(relevance_spec(**spec), url, server_major=8)


async def measure_engine(
    engine: str,
    url: str,
    collection: Collection,
    analyzers: list[str],
    only: set[str] | None = None,
    weights: tuple[float, ...] = TITLE_WEIGHTS,
) -> list[dict[str, Any]]:
    rows = []
    default = (dsl.EXISTING_COMBINED[engine], dsl.CROSS_FIELDS_POWER, dsl.CROSS_FIELDS_TIE_BREAKER)
    for analyzer in analyzers:
        index, alias = await create_index(url, collection, analyzer)
        try:
            for name, (combination, tie, stands_for) in QUERIES.items():
                if name not in ENGINE_QUERIES[engine] or (only is not None and name not in only):
                    continue
                for weight in weights:
                    if stands_for is not None:  # the bench picks what the default stands for
                        dsl.EXISTING_COMBINED[engine], dsl.CROSS_FIELDS_POWER, dsl.CROSS_FIELDS_TIE_BREAKER = stands_for
                    backend = make_backend(
                        engine, url, index=alias, index_mode="existing", date_field=None, field_combination=combination,
                        tie_breaker=tie, text_fields=(TextField("subject", weight), TextField("body")),
                        field_paths={"subject": "title", "body": "text", "doc_id": "doc_id"},
                    )  # fmt: skip
                    try:
                        report = await evaluate(backend, collection, backend_name=engine, ingest=False, progress=False)
                    finally:
                        await backend.close()
                    row = {"engine": engine, "analyzer": analyzer, "query": name, "title_weight": weight,
                           **report.metrics, "top10_mismatches": report.top10_mismatches}  # fmt: skip
                    rows.append(row)
                    print(f"  {engine} {analyzer} {name} title^{weight:g}: nDCG@10 {row['nDCG@10']}", file=sys.stderr)
        finally:
            dsl.EXISTING_COMBINED[engine], dsl.CROSS_FIELDS_POWER, dsl.CROSS_FIELDS_TIE_BREAKER = default
            async with httpx.AsyncClient(base_url=url, timeout=60) as http:
                await http.delete(f"/{index}")
    return rows


def markdown(data: dict[str, Any]) -> str:
    lines = [
        "# Relevance on an existing index (issue 35)",
        "",
        f"{data['when']}: BEIR {data['collection']} ({data['queries']} judged queries), indexed by plain REST with "
        "a standard mapping (title and text as text fields, one shard), searched through the search tool on "
        "`index_mode: existing`. Each cell: nDCG@10 (R@100).",
        "",
    ]
    rows = data["rows"]
    for engine in sorted({r["engine"] for r in rows}):
        for analyzer in sorted({r["analyzer"] for r in rows if r["engine"] == engine}):
            cells = [r for r in rows if r["engine"] == engine and r["analyzer"] == analyzer]
            lines += [f"## {engine}, {analyzer} analyzer", "", "| query | " + " | ".join(
                f"title^{w:g}" for w in TITLE_WEIGHTS) + " |", "|---|" + "---|" * len(TITLE_WEIGHTS)]  # fmt: skip
            for name in ENGINE_QUERIES[engine]:
                found = {r["title_weight"]: r for r in cells if r["query"] == name}
                if found:
                    lines.append(f"| {name} | " + " | ".join(
                        f"{found[w]['nDCG@10']:.3f} ({found[w]['R@100']:.3f})" if w in found else "-"
                        for w in TITLE_WEIGHTS) + " |")  # fmt: skip
            lines.append("")
    lines.append(data.get("choice", ""))
    return "\n".join(lines)


async def main_async(args: argparse.Namespace) -> dict[str, Any]:
    collection = load_collection(args.collection or default_collection())
    data: dict[str, Any] = {"when": machine()["when"], "machine": machine(), "collection": collection.name,
                            "queries": len(collection.qrels), "rows": []}  # fmt: skip
    only = set(args.only.split(",")) if args.only else None
    weights = tuple(float(w) for w in args.weights.split(",")) if args.weights else TITLE_WEIGHTS
    if args.opensearch_url:
        analyzers = args.analyzers.split(",") if args.analyzers else ["standard", "english"]
        data["rows"] += await measure_engine("opensearch", args.opensearch_url, collection, analyzers, only, weights)
    if args.elasticsearch_url:
        data["rows"] += await measure_engine(
            "elasticsearch", args.elasticsearch_url, collection, ["standard"], only, weights
        )
    return data


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--opensearch-url", default=os.environ.get("SCOPEGATE_OPENSEARCH_URL"))
    parser.add_argument("--elasticsearch-url", default=os.environ.get("SCOPEGATE_ELASTICSEARCH_URL"))
    parser.add_argument("--collection", type=Path)
    parser.add_argument("--out", default="existing_relevance")
    parser.add_argument("--only", help="Comma-separated query names to measure (default: all)")
    parser.add_argument("--weights", help="Comma-separated title weights (default: 1,2,3,4,5)")
    parser.add_argument("--analyzers", help="OpenSearch analyzers (default: standard,english)")
    data = asyncio.run(main_async(parser.parse_args()))
    write_results(parser.parse_args().out, data, markdown(data))
    print(markdown(data))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
