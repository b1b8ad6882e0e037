"""Fusion, totals and field text for keyword/vector/hybrid retrieval: pure parts (issue 14)."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from scopegate.demo.corpus import ticket_spec
from scopegate.errors import ConfigError
from scopegate.scope import Scope
from scopegate.search.fields import combined_text, embedding_text, query_terms
from scopegate.search.model import RawHit, RawResult, SearchQuery
from scopegate.search.retrieval import KnnResult, convex, fuse, hybrid_total, min_max, retrieve, rrf, vector_total
from scopegate.search.spec import SearchSpec, TextField, spec_from_dict, spec_to_dict


def hits(*pairs: tuple[str, float]) -> tuple[RawHit, ...]:
    return tuple(RawHit(doc_id=d, score=s, fields={"subject": d}) for d, s in pairs)


def query(limit: int = 5, offset: int = 0) -> SearchQuery:
    return SearchQuery("q", Scope("acme"), (), offset, limit, 10_000, 1.0, 2.5)


def test_rrf_sums_reciprocal_ranks() -> None:
    scores = rrf([["a", "b"], ["b", "c"]], k=60)
    assert scores["b"] == pytest.approx(1 / 62 + 1 / 61)
    assert scores["a"] == pytest.approx(1 / 61)
    assert max(scores, key=scores.__getitem__) == "b"


def test_min_max_and_convex() -> None:
    assert min_max({"a": 2.0, "b": 4.0}) == {"a": 0.0, "b": 1.0}
    assert min_max({"a": 3.0}) == {"a": 1.0}
    fused = convex({"a": 10.0, "b": 5.0}, {"b": 0.9, "c": 0.1}, weight=0.5)
    assert fused == {"a": 0.5, "b": 0.5, "c": 0.0}
    assert convex({"a": 1.0}, {}, 0.7) == {"a": pytest.approx(0.3)}


def test_fuse_breaks_ties_by_id() -> None:
    spec = dataclasses.replace(ticket_spec(), retrieval="hybrid", fusion="rrf")
    ranked = fuse(spec, hits(("b", 1.0)), hits(("a", 1.0)))
    assert [d for d, _ in ranked] == ["a", "b"]


def test_vector_total_is_what_was_ranked() -> None:
    spec = ticket_spec()
    assert vector_total(spec, KnnResult(hits(("a", 1.0), ("b", 0.5)), in_scope=2)) == (2, "eq")
    assert vector_total(spec, KnnResult(hits(("a", 1.0), ("b", 0.5)), in_scope=5000)) == (2, "gte")
    many = KnnResult(hits(*[(str(i), 1.0) for i in range(spec.retrieval_depth)]))
    assert vector_total(spec, many) == (spec.retrieval_depth, "gte")


def test_hybrid_total_is_the_union() -> None:
    keyword = RawResult(hits=hits(("a", 3.0), ("b", 2.0)), total=2)
    knn = KnnResult(hits(("b", 0.9), ("c", 0.8)), in_scope=3)
    assert hybrid_total(keyword, knn) == (3, "eq")
    # Keyword list cut at the depth: whether c matches a term is unknown, so a lower bound.
    partial = RawResult(hits=hits(("a", 3.0), ("b", 2.0)), total=500)
    assert hybrid_total(partial, knn) == (500, "gte")
    assert hybrid_total(RawResult(hits=(), total=0), knn) == (2, "eq")


async def test_retrieve_hybrid_pages_and_fetches_only_missing_fields() -> None:
    spec = dataclasses.replace(ticket_spec(), retrieval="hybrid", fusion="rrf", page_size=2)
    fetched: list[list[str]] = []

    async def keyword(q: SearchQuery) -> RawResult:
        assert q.offset == 0 and q.limit == spec.retrieval_depth  # deep list, paged after fusion
        return RawResult(hits=hits(("a", 3.0), ("b", 2.0)), total=2, terms=("q",))

    async def knn(q: SearchQuery, k: int) -> KnnResult:
        return KnnResult(tuple(RawHit(d, s, {}) for d, s in (("c", 0.9), ("a", 0.8))), in_scope=3)

    async def fetch(ids: Any, scope: Scope) -> dict[str, dict[str, Any]]:
        fetched.append(list(ids))
        return {d: {"subject": d} for d in ids}

    first = await retrieve(spec, query(limit=2), keyword=keyword, knn=knn, fetch=fetch)
    assert [h.doc_id for h in first.hits] == ["a", "c"]
    assert (first.total, first.total_relation) == (3, "eq")
    assert fetched == [["c"]]
    second = await retrieve(spec, query(limit=2, offset=2), keyword=keyword, knn=knn, fetch=fetch)
    assert [h.doc_id for h in second.hits] == ["b"]


async def test_retrieve_drops_a_hit_the_fetch_no_longer_sees() -> None:
    spec = dataclasses.replace(ticket_spec(), retrieval="vector")

    async def keyword(q: SearchQuery) -> RawResult:  # pragma: no cover - not called for vector
        raise AssertionError

    async def knn(q: SearchQuery, k: int) -> KnnResult:
        return KnnResult((RawHit("gone", 0.9, {}), RawHit("here", 0.5, {})), in_scope=2)

    async def fetch(ids: Any, scope: Scope) -> dict[str, dict[str, Any]]:
        return {"here": {"subject": "here"}}

    result = await retrieve(spec, query(), keyword=keyword, knn=knn, fetch=fetch)
    assert [h.doc_id for h in result.hits] == ["here"]


def test_combined_and_embedding_text() -> None:
    spec = dataclasses.replace(ticket_spec(), text_fields=(TextField("subject", 2.4), TextField("body", 0.3)))
    record = {"subject": "Refund", "body": "failed twice"}
    assert combined_text(spec, record) == "Refund\nRefund\nfailed twice"  # weights round, at least 1
    assert embedding_text(spec, record) == "Refund\nfailed twice"
    assert embedding_text(dataclasses.replace(spec, embed_fields=("body",)), record) == "failed twice"


def test_query_terms_keep_repeats() -> None:
    assert query_terms("refund Refund refunds the E4012") == ["refund", "refund", "refund", "e4012"]
    assert len(query_terms("word " * 500)) == 128


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        ({"field_combination": "cross_fields"}, "field_combination"),
        ({"retrieval": "semantic"}, "retrieval"),
        ({"fusion": "max"}, "fusion"),
        ({"tie_breaker": 1.5}, "tie_breaker"),
        ({"fusion_weight": -0.1}, "fusion_weight"),
        ({"rrf_k": 0}, "rrf_k"),
        ({"retrieval_depth": 0}, "retrieval_depth"),
        ({"embed_fields": ("nope",)}, "embed_fields"),
        ({"text_fields": (TextField("subject", 0.0), TextField("body"))}, "boost"),
        ({"keyword_fields": ("scopegate_all",)}, "reserved"),
    ],
)
def test_bad_relevance_settings_fail_loudly(overrides: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        dataclasses.replace(ticket_spec(), **overrides)


def test_relevance_settings_round_trip() -> None:
    spec: SearchSpec = dataclasses.replace(
        ticket_spec(), retrieval="hybrid", fusion="rrf", tie_breaker=0.2, embed_fields=("subject",)
    )
    assert spec_from_dict(spec_to_dict(spec)) == spec
