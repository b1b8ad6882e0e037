"""Relevance on a judged collection (BEIR or TREC layout) through scopegate's own ingest and tool path.

Run:
  .venv/bin/python bench/bench_relevance.py                       # SciFact, embedded, every configuration
  .venv/bin/python bench/bench_relevance.py --backend opensearch --backend elasticsearch --configs all-keyword
  .venv/bin/python bench/bench_relevance.py --collection PATH --configs combined_fields,hybrid_convex

--collection defaults to $SCOPEGATE_SHARED_DATA/ir/beir-scifact (or ../shared/data/ir/beir-scifact).
--backend embedded | opensearch | elasticsearch (repeatable). OpenSearch and Elasticsearch nodes are
started with the project's launchers (state under .cache/*-relevance) unless --opensearch-url /
--elasticsearch-url is given. Vector configurations on OpenSearch need the k-NN node
(src/scopegate/engines/launchers/opensearch-knn); they are skipped with the reason otherwise.
Embeddings are cached under .cache/embeddings/<model id>/ so a collection is encoded once
(SciFact: ~10 minutes on 2 busy cores the first time, seconds after). Encoding uses 2 threads.
Runtime with a warm cache: ~1 minute per backend for all configurations.
Writes bench/results/<--out>.json and .md (default: relevance). Metrics are deterministic;
timings in the result are informative only.
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import machine, write_results

from scopegate.backends.base import SearchBackend
from scopegate.relevance.collection import load_collection
from scopegate.relevance.harness import RelevanceReport, evaluate, relevance_spec
from scopegate.search.spec import SearchSpec, TextField
from scopegate.vector.cache import CachedEncoder
from scopegate.vector.encoder import Encoder, encoder_from_name

REPO = Path(__file__).resolve().parents[1]
FLAT = (TextField("subject"), TextField("body"))

# name -> spec overrides on top of relevance_spec() (subject^3, body).
CONFIGS: dict[str, dict[str, Any]] = {
    "flat_best_fields": {"text_fields": FLAT, "field_combination": "best_fields"},
    "flat_combined_fields": {"text_fields": FLAT, "field_combination": "combined_fields"},
    "best_fields": {"field_combination": "best_fields"},
    "best_fields_tb0.3": {"field_combination": "best_fields", "tie_breaker": 0.3},
    "most_fields": {"field_combination": "most_fields"},
    "combined_fields": {"field_combination": "combined_fields"},
    "vector": {"retrieval": "vector"},
    "hybrid_rrf": {"retrieval": "hybrid", "fusion": "rrf"},
    "hybrid_convex_0.3": {"retrieval": "hybrid", "fusion": "convex", "fusion_weight": 0.3},
    "hybrid_convex_0.4": {"retrieval": "hybrid", "fusion": "convex", "fusion_weight": 0.4},
    "hybrid_convex_0.5": {"retrieval": "hybrid", "fusion": "convex", "fusion_weight": 0.5},
    "hybrid_convex_0.6": {"retrieval": "hybrid", "fusion": "convex", "fusion_weight": 0.6},
    "hybrid_convex_0.7": {"retrieval": "hybrid", "fusion": "convex", "fusion_weight": 0.7},
}
GROUPS = {
    "all-keyword": [k for k, v in CONFIGS.items() if "retrieval" not in v],
    "all-vector": [k for k, v in CONFIGS.items() if "retrieval" in v],
}


def default_collection() -> Path:
    base = os.environ.get("SCOPEGATE_SHARED_DATA")
    root = Path(base) if base else REPO.parent / "shared" / "data"
    if not root.exists():
        root = Path("/work/shared/data")
    return root / "ir" / "beir-scifact"


def make_backend(
    kind: str, spec: SearchSpec, urls: dict[str, str], encoder: Encoder | None, tmp: Path
) -> SearchBackend:
    if kind == "embedded":
        from scopegate.backends.embedded import EmbeddedBackend

        return EmbeddedBackend(spec, tmp / f"idx-{time.monotonic_ns()}", encoder=encoder)
    if kind == "opensearch":
        from scopegate.backends.opensearch import OpenSearchBackend

        return OpenSearchBackend(spec, urls[kind], encoder=encoder, refresh_after_write=True)
    from scopegate.backends.elasticsearch import ElasticsearchBackend

    return ElasticsearchBackend(spec, urls[kind], encoder=encoder, server_major=8, analysis="standard", replicas=0)


def start_nodes(
    kinds: list[str], args: argparse.Namespace, needs_knn: bool
) -> tuple[dict[str, str], list[Any], dict[str, str]]:
    urls: dict[str, str] = {}
    nodes: list[Any] = []
    notes: dict[str, str] = {}
    if "opensearch" in kinds:
        from scopegate.engines.opensearch_node import NodeConfig, OpenSearchNode, knn_node_config

        if args.opensearch_url:
            urls["opensearch"] = args.opensearch_url
        else:
            config = (
                knn_node_config(REPO / ".cache" / "opensearch-knn-relevance")
                if needs_knn
                else NodeConfig(state_dir=REPO / ".cache" / "opensearch-node-relevance")
            )
            node = OpenSearchNode(config)
            urls["opensearch"] = node.start(clean=True, timeout_s=240)
            nodes.append(node)
    if "elasticsearch" in kinds:
        from scopegate.engines.elasticsearch_node import ElasticsearchNode, ESNodeConfig

        if args.elasticsearch_url:
            urls["elasticsearch"] = args.elasticsearch_url
        else:
            es = ElasticsearchNode(ESNodeConfig(state_dir=REPO / ".cache" / "elasticsearch-node-relevance", heap="1g"))
            urls["elasticsearch"] = es.start(clean=True, timeout_s=300)
            nodes.append(es)
    return urls, nodes, notes


async def run_one(kind: str, name: str, args: argparse.Namespace, urls: dict[str, str], tmp: Path) -> RelevanceReport:
    collection = load_collection(args.collection)
    spec = relevance_spec(index=f"relevance-{name.replace('.', '-').replace('_', '-')}", **CONFIGS[name])
    encoder: Encoder | None = None
    if spec.uses_vectors():
        encoder = CachedEncoder(encoder_from_name(spec.embedder, threads=2), REPO / ".cache" / "embeddings")
    backend = make_backend(kind, spec, urls, encoder, tmp)
    try:
        if kind != "embedded":
            await backend.drop()  # type: ignore[attr-defined]
        return await evaluate(backend, collection, backend_name=kind, progress=not args.quiet)
    finally:
        if kind != "embedded":
            await backend.drop()  # type: ignore[attr-defined]
        await backend.close()


def markdown(data: dict[str, Any]) -> str:
    lines = [
        f"# Relevance: {data['collection']} through scopegate's tool path",
        "",
        f"Machine: {data['machine']['cpus']} cores, Python {data['machine']['python']}, {data['machine']['when']}, "
        f"load average at start {data['load_start']}, at end {data['load_end']}.",
        f"{data['queries']} judged queries, {data['documents']:,} documents, one tenant. nDCG@10 from the tool "
        "(SearchTool.run, pages of 10); R@100 and AP@100 (MAP) from the backend at depth 100 with the tool's own "
        "query. Metrics: ir-measures (trec_eval via pytrec_eval). `subject` = title, `body` = text; "
        "`subject^3` unless the configuration says flat. Published BM25 (Anserini, flat): nDCG@10 0.679, "
        "R@100 0.925; multifield 0.665.",
        "",
        "| backend | configuration | nDCG@10 | R@100 | MAP (AP@100) | top-10 tool = backend | refused |",
        "|---|---|---|---|---|---|---|",
    ]
    for row in data["results"]:
        if "error" in row:
            lines.append(f"| {row['backend']} | {row['config']} | – | – | – | – | {row['error']} |")
            continue
        m = row["metrics"]
        agree = row["queries"] - row["top10_mismatches"]
        lines.append(
            f"| {row['backend']} | {row['config']} | {m['nDCG@10']:.4f} | {m['R@100']:.4f} | {m['AP@100']:.4f} "
            f"| {agree}/{row['queries']} | {len(row['refused_queries'])} |"
        )
    return "\n".join(lines) + "\n"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--collection", type=Path, default=default_collection(), help="BEIR or TREC folder")
    parser.add_argument("--backend", action="append", choices=("embedded", "opensearch", "elasticsearch"))
    parser.add_argument(
        "--configs", default="all-keyword,all-vector", help="comma list of names or groups (all-keyword, all-vector)"
    )
    parser.add_argument("--opensearch-url", default=None, help="an existing node instead of starting one")
    parser.add_argument("--elasticsearch-url", default=None, help="an existing node instead of starting one")
    parser.add_argument("--out", default="relevance", help="result file name under bench/results/")
    parser.add_argument("--quiet", action="store_true", help="no progress bars")
    args = parser.parse_args()
    kinds = args.backend or ["embedded"]
    names: list[str] = []
    for item in args.configs.split(","):
        names.extend(GROUPS.get(item.strip(), [item.strip()]))
    names = list(dict.fromkeys(names))  # a name given twice (or by a group too) runs once
    unknown = [n for n in names if n not in CONFIGS]
    if unknown:
        parser.error(f"unknown configurations {unknown}; known: {sorted(CONFIGS)} or {sorted(GROUPS)}")
    load_start = [round(x, 2) for x in os.getloadavg()]
    needs_knn = any("retrieval" in CONFIGS[n] for n in names)
    urls, nodes, _ = start_nodes([k for k in kinds if k != "embedded"], args, needs_knn)
    results: list[dict[str, Any]] = []
    documents = queries = 0
    try:
        with tempfile.TemporaryDirectory(prefix="scopegate-relevance-") as tmp:
            for kind in kinds:
                for name in names:
                    started = time.perf_counter()
                    try:
                        report = asyncio.run(run_one(kind, name, args, urls, Path(tmp)))
                    except Exception as exc:  # one configuration failing must not lose the others
                        results.append({"backend": kind, "config": name, "error": f"{type(exc).__name__}: {exc}"[:300]})
                        print(f"{kind:13s} {name:22s} FAILED {exc}", flush=True)
                        continue
                    row = {
                        "config": name,
                        **dataclasses.asdict(report),
                        "wall_s": round(time.perf_counter() - started, 1),
                    }
                    row.pop("per_query_ndcg10", None)
                    results.append(row)
                    documents, queries = report.documents, report.queries
                    print(
                        f"{kind:13s} {name:22s} {report.metrics}  top10 mismatches {report.top10_mismatches}",
                        flush=True,
                    )
    finally:
        for node in nodes:
            node.stop()
    data = {
        "machine": machine(),
        "load_start": load_start,
        "load_end": [round(x, 2) for x in os.getloadavg()],
        "collection": str(args.collection.name),
        "documents": documents,
        "queries": queries,
        "results": results,
    }
    write_results(args.out, data, markdown(data))
    print(markdown(data))
    return 0


if __name__ == "__main__":
    sys.exit(main())
