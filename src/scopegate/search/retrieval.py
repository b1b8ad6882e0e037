"""Keyword, vector and hybrid retrieval behind one ``search`` call. Engine-neutral, no I/O of its own.

A backend supplies three engine calls: a keyword search (its ordinary query at
a given depth), a k-NN search whose scope and filters run inside the engine,
and a fetch of stored fields by id inside the scope. This module picks them by
``spec.retrieval``, fuses the two lists (RRF or a normalised convex
combination), cuts the page and returns an ordinary :class:`RawResult`, so
the tool, the shaper, the cache, the call log and replay are unchanged.

What "total" means:

* keyword: the engine's count of in-scope documents matching a term (exact,
  or a lower bound past ``track_total_up_to``);
* vector: every in-scope document is a candidate, ranked by similarity; the
  total is how many were ranked, at most ``retrieval_depth``. It is exact
  ("eq") when the scope holds no more documents than that, else a lower bound ("gte");
* hybrid: the size of the union of keyword matches and vector candidates:
  exact when the keyword list was complete, else a lower bound.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from scopegate.scope import Scope
from scopegate.search.model import RawHit, RawResult, SearchQuery, TotalRelation
from scopegate.search.spec import SearchSpec


@dataclass(frozen=True)
class KnnResult:
    """Nearest in-scope neighbours, best first. ``in_scope`` is the scope's size when the engine knows it."""

    hits: tuple[RawHit, ...]
    in_scope: int | None = None
    took_ms: float | None = None


KeywordSearch = Callable[[SearchQuery], Awaitable[RawResult]]
KnnSearch = Callable[[SearchQuery, int], Awaitable[KnnResult]]
FetchFields = Callable[[Sequence[str], Scope], Awaitable[Mapping[str, dict[str, Any]]]]


# -- fusion (pure) ------------------------------------------------------------------------------
def rrf(lists: Sequence[Sequence[str]], k: int = 60) -> dict[str, float]:
    """Reciprocal rank fusion: sum of 1 / (k + rank), ranks from 1."""
    out: dict[str, float] = {}
    for ranked in lists:
        for rank, doc in enumerate(ranked, start=1):
            out[doc] = out.get(doc, 0.0) + 1.0 / (k + rank)
    return out


def min_max(scores: Mapping[str, float]) -> dict[str, float]:
    """Scores scaled to [0, 1] within one list (all equal -> 1)."""
    if not scores:
        return {}
    low, high = min(scores.values()), max(scores.values())
    if high - low <= 1e-12:
        return dict.fromkeys(scores, 1.0)
    return {d: (s - low) / (high - low) for d, s in scores.items()}


def convex(keyword: Mapping[str, float], vector: Mapping[str, float], weight: float) -> dict[str, float]:
    """``weight`` x normalised vector score + (1 - weight) x normalised keyword score; absent counts 0."""
    kw, vec = min_max(keyword), min_max(vector)
    return {d: weight * vec.get(d, 0.0) + (1.0 - weight) * kw.get(d, 0.0) for d in {*kw, *vec}}


def fuse(spec: SearchSpec, keyword: Sequence[RawHit], vector: Sequence[RawHit]) -> list[tuple[str, float]]:
    """Fused ranking (doc id, score), best first; ties broken by id so pages are stable."""
    if spec.fusion == "rrf":
        scores = rrf([[h.doc_id for h in keyword], [h.doc_id for h in vector]], spec.rrf_k)
    else:
        scores = convex({h.doc_id: h.score for h in keyword}, {h.doc_id: h.score for h in vector}, spec.fusion_weight)
    return sorted(scores.items(), key=lambda item: (-item[1], item[0]))


# -- totals (pure) ------------------------------------------------------------------------------
def vector_total(spec: SearchSpec, knn: KnnResult) -> tuple[int, TotalRelation]:
    count = len(knn.hits)
    if knn.in_scope is not None:
        return count, "eq" if knn.in_scope <= count else "gte"
    return count, "gte" if count >= spec.retrieval_depth else "eq"


def hybrid_total(keyword: RawResult, knn: KnnResult) -> tuple[int, TotalRelation]:
    matched = {h.doc_id for h in keyword.hits}
    vector_only = sum(1 for h in knn.hits if h.doc_id not in matched)
    complete = keyword.total_relation == "eq" and len(keyword.hits) >= keyword.total
    if complete:
        return keyword.total + vector_only, "eq"
    return max(keyword.total, len(matched) + vector_only), "gte"


# -- the call ------------------------------------------------------------------------------
async def retrieve(
    spec: SearchSpec,
    query: SearchQuery,
    *,
    keyword: KeywordSearch,
    knn: KnnSearch,
    fetch: FetchFields,
) -> RawResult:
    """One search in the spec's retrieval mode; returns the requested page with an honest total."""
    if spec.retrieval == "keyword" or query.listing:  # a listing has no text to embed
        return await keyword(query)
    depth = max(spec.retrieval_depth, query.offset + query.limit)
    deep = dataclasses.replace(query, offset=0, limit=depth)
    if spec.retrieval == "vector":
        neighbours = await knn(deep, depth)
        ranked = [(h.doc_id, h.score) for h in neighbours.hits]
        total, relation = vector_total(spec, neighbours)
        known = {h.doc_id: h for h in neighbours.hits if h.fields}
        keyword_result: RawResult | None = None
    else:
        keyword_result = await keyword(deep)
        neighbours = await knn(deep, depth)
        ranked = fuse(spec, keyword_result.hits, neighbours.hits)
        total, relation = hybrid_total(keyword_result, neighbours)
        known = {h.doc_id: h for h in (*neighbours.hits, *keyword_result.hits) if h.fields}
    page = ranked[query.offset : query.offset + query.limit]
    missing = [doc for doc, _ in page if doc not in known]
    fetched = await fetch(missing, query.scope) if missing else {}
    hits = []
    for doc, score in page:
        fields = known[doc].fields if doc in known else fetched.get(doc)
        if fields is None:  # deleted between the two calls: not in scope any more
            continue
        hits.append(RawHit(doc_id=doc, score=score, fields=fields))
    partial = bool(keyword_result and keyword_result.partial)
    return RawResult(
        hits=tuple(hits),
        total=total,
        total_relation=relation,
        partial=partial,
        partial_reason=keyword_result.partial_reason if keyword_result and partial else None,
        took_ms=None,
        terms=keyword_result.terms if keyword_result else (),
    )
