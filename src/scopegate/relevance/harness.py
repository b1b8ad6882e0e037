"""Relevance harness: a judged collection through scopegate's own ingest and query paths.

1. Documents go in through :func:`scopegate.ingest.run.ingest_records` with a
   :class:`FieldMapping`, under one tenant, exactly as an application ingests.
2. Every judged query runs through :class:`SearchTool` (validation, scope,
   backend, shaper) page by page for the top ``cutoff`` (nDCG@10), and through
   the backend directly with the tool's own :class:`SearchQuery` at ``depth``
   for recall@100 and MAP, which a model never pages that deep to see.
3. Metrics come from ir-measures (trec_eval via pytrec_eval), never hand-written.

A judged query without results still counts (as zero): trec_eval would
otherwise skip it and inflate the mean.
"""

from __future__ import annotations

import dataclasses
import math
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from scopegate.backends.base import SearchBackend
from scopegate.context import CallContext
from scopegate.errors import ConfigError
from scopegate.ingest.mapping import FieldMapping
from scopegate.ingest.run import ingest_records
from scopegate.relevance.collection import Collection, Qrels
from scopegate.scope import Scope
from scopegate.search.model import SearchRequest
from scopegate.search.spec import SearchSpec, TextField
from scopegate.search.tools import SearchTool

EVAL_TENANT = "eval"
TENANT_COLUMN = "__tenant"
DEFAULT_FIELD_MAP: Mapping[str, str] = {"subject": "title", "body": "text"}
NO_HIT = "__no_hit__"
MEASURES = ("nDCG@10", "R@100", "AP@100")


def relevance_spec(**overrides: Any) -> SearchSpec:
    """A title-and-text spec (``subject^3``, ``body``, as the demo's tickets) sized for evaluation.

    Ten hits a page, deep pages allowed, long queries accepted, and a hit
    budget large enough that the shaper never drops a hit for size.
    """
    base = SearchSpec(
        name="search_docs",
        description="Search the collection's documents by keywords.",
        text_fields=(TextField("subject", 3.0), TextField("body")),
        index="relevance",
        id_field="doc_id",
        tenant_field="tenant_id",
        date_field="created_at",
        result_fields=("subject",),
        snippet_field="body",
        fetch_name="get_doc",
    )
    settings: dict[str, Any] = {
        "page_size": 10,
        "max_page": 10,
        "next_page_horizon": 100,
        "max_query_chars": 2000,
        "snippet_chars": 80,
        "hits_char_budget": 200_000,
    }
    settings.update(overrides)
    return dataclasses.replace(base, **settings)


@dataclass
class RelevanceReport:
    collection: str
    backend: str
    spec: dict[str, Any]
    queries: int
    documents: int
    metrics: dict[str, float]
    # The same measures over the backend's deep run (its top 10 must equal the tool's).
    depth_metrics: dict[str, float]
    top10_mismatches: int
    refused_queries: list[tuple[str, str]] = field(default_factory=list)
    ingest_seconds: float = 0.0
    ingest_docs_per_s: float = 0.0
    query_seconds: float = 0.0
    per_query_ndcg10: dict[str, float] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


def evaluation_records(collection: Collection, mapping: Mapping[str, str], tenant: str) -> Iterator[dict[str, Any]]:
    for doc in collection.documents():
        yield {**doc, TENANT_COLUMN: tenant}


async def ingest_collection(
    backend: SearchBackend,
    collection: Collection,
    *,
    tenant: str = EVAL_TENANT,
    field_map: Mapping[str, str] = DEFAULT_FIELD_MAP,
    batch_size: int = 2_000,
    progress: bool = True,
) -> tuple[int, float]:
    """Ingest through the project's own path; returns (documents indexed, seconds)."""
    mapping = FieldMapping(id="id", tenant=TENANT_COLUMN, fields=dict(field_map))
    records = mapping.apply(backend.spec, evaluation_records(collection, field_map, tenant))
    report = await ingest_records(backend, records, batch_size=batch_size, progress=progress, label=collection.name)
    if report.failed:
        raise ConfigError(f"{report.failed} documents failed to ingest: {report.errors[:5]}")
    return report.indexed, report.seconds


def _ranked(ids: list[str]) -> dict[str, float]:
    """A run entry whose scores keep the given order (trec_eval sorts by score, breaking ties by id)."""
    return {doc: float(len(ids) - rank) for rank, doc in enumerate(dict.fromkeys(ids))} or {NO_HIT: 0.0}


def score_run(qrels: Qrels, run: Mapping[str, Mapping[str, float]]) -> tuple[dict[str, float], dict[str, float]]:
    """(aggregate measures, per-query nDCG@10) with ir-measures."""
    import ir_measures

    measures = [ir_measures.parse_measure(m) for m in MEASURES]
    aggregate = ir_measures.calc_aggregate(measures, qrels, run)
    ndcg = ir_measures.parse_measure("nDCG@10")
    per_query = {m.query_id: float(m.value) for m in ir_measures.iter_calc([ndcg], qrels, run)}
    return {str(k): round(float(v), 4) for k, v in aggregate.items()}, per_query


async def evaluate(
    backend: SearchBackend,
    collection: Collection,
    *,
    backend_name: str = "",
    tenant: str = EVAL_TENANT,
    depth: int = 100,
    cutoff: int = 10,
    ingest: bool = True,
    field_map: Mapping[str, str] = DEFAULT_FIELD_MAP,
    progress: bool = True,
) -> RelevanceReport:
    """Ingest ``collection`` (unless ``ingest`` is False) and score every judged query."""
    from scopegate.search.spec import spec_to_dict

    spec = backend.spec
    if spec.page_size * spec.max_page < cutoff:
        raise ConfigError(f"the spec pages only {spec.page_size * spec.max_page} hits; {cutoff} are needed")
    documents, ingest_s = (0, 0.0)
    if ingest:
        documents, ingest_s = await ingest_collection(
            backend, collection, tenant=tenant, field_map=field_map, progress=progress
        )
    tool = SearchTool(spec, backend)
    ctx = CallContext(state={spec.scope_keys.tenant: tenant})
    scope = Scope(tenant_id=tenant)
    tool_run: dict[str, dict[str, float]] = {}
    deep_run: dict[str, dict[str, float]] = {}
    refused: list[tuple[str, str]] = []
    mismatches = 0
    started = time.perf_counter()
    pages = math.ceil(cutoff / spec.page_size)
    for qid, text in collection.judged_queries():
        ids: list[str] = []
        for page in range(1, pages + 1):
            result = (await tool.run({"query": text, "page": page}, ctx)).result
            if result.get("status") != "ok":
                refused.append((qid, str(result.get("error_code"))))
                break
            ids += [str(r[spec.id_field]) for r in result["results"]]
            if result.get("next_page") is None:
                break
        tool_run[qid] = _ranked(ids[:cutoff])
        if refused and refused[-1][0] == qid:
            deep_run[qid] = _ranked([])
            continue
        query = dataclasses.replace(tool.build_query(SearchRequest(query=text), scope), offset=0, limit=depth)
        raw = await backend.search(query)
        deep_ids = [h.doc_id for h in raw.hits]
        deep_run[qid] = _ranked(deep_ids)
        if deep_ids[:cutoff] != ids[:cutoff]:
            mismatches += 1
    query_s = time.perf_counter() - started
    metrics, per_query = score_run(collection.qrels, tool_run)
    depth_metrics, _ = score_run(collection.qrels, deep_run)
    # Recall and MAP need the depth a model never pages to: they come from the deep run.
    metrics["R@100"] = depth_metrics["R@100"]
    metrics["AP@100"] = depth_metrics["AP@100"]
    return RelevanceReport(
        collection=collection.name,
        backend=backend_name or type(backend).__name__,
        spec={k: v for k, v in spec_to_dict(spec).items() if k in _REPORTED_SPEC_KEYS},
        queries=len(tool_run),
        documents=documents,
        metrics=metrics,
        depth_metrics=depth_metrics,
        top10_mismatches=mismatches,
        refused_queries=refused,
        ingest_seconds=round(ingest_s, 3),
        ingest_docs_per_s=round(documents / ingest_s, 1) if ingest_s > 0 else 0.0,
        query_seconds=round(query_s, 3),
        per_query_ndcg10=per_query,
    )


_REPORTED_SPEC_KEYS = (
    "text_fields",
    "field_combination",
    "tie_breaker",
    "retrieval",
    "fusion",
    "fusion_weight",
    "rrf_k",
    "retrieval_depth",
    "embedder",
    "embed_fields",
)
