"""The result shaper: snippets, honest totals, hints, next page, the size budget."""

from __future__ import annotations

import json

from scopegate.search.analysis import analyze, unique_terms
from scopegate.search.model import RawHit, RawResult, SearchRequest
from scopegate.search.shaper import (
    HINT_MANY,
    HINT_ZERO,
    cap_text,
    honest_total,
    make_snippet,
    next_page,
    shape_document,
    shape_search,
)
from scopegate.search.spec import SearchSpec

BODY = (
    "Hello team. "
    + "Unrelated words about the weather and lunch plans. " * 20
    + "The refund to Apple Pay failed with processor code E4012 card_declined. "
    + "More filler text after the match follows here. " * 20
)


def test_snippet_is_bounded_and_around_first_match() -> None:
    snippet = make_snippet(BODY, unique_terms("E4012"), analyze, 400)
    assert len(snippet) <= 400
    assert "E4012" in snippet
    assert snippet.startswith("…") and snippet.endswith("…")


def test_snippet_cuts_on_word_boundaries() -> None:
    snippet = make_snippet(BODY, unique_terms("refund"), analyze, 120)
    inner = snippet.strip("…")
    words = set(BODY.split())
    assert all(w in words for w in inner.split()), snippet


def test_snippet_matches_stemmed_terms() -> None:
    snippet = make_snippet(BODY, unique_terms("refunds failing"), analyze, 200)
    assert "refund" in snippet


def test_snippet_falls_back_to_start() -> None:
    snippet = make_snippet(BODY, unique_terms("zebra"), analyze, 100)
    assert snippet.startswith("Hello team.") and snippet.endswith("…") and len(snippet) <= 100


def test_short_body_is_returned_whole_and_whitespace_folded() -> None:
    assert make_snippet("a\n\nb\t c\x00d", ("a",), analyze, 400) == "a b cd"


def test_cap_text() -> None:
    assert cap_text("short", 10) == ("short", False)
    text, cut = cap_text("word " * 50, 30)
    assert cut and len(text) <= 30 and text.endswith("…")


def test_honest_total() -> None:
    assert honest_total(214, "eq") == "214"
    assert honest_total(10000, "gte") == "at least 10000"


def test_next_page_rules(spec: SearchSpec) -> None:
    assert next_page(spec, 1, 0) is None
    assert next_page(spec, 1, 5) is None
    assert next_page(spec, 1, 6) == 2
    assert next_page(spec, 3, 214) == 4
    assert next_page(spec, 4, 214) is None  # horizon: min(total, 20)
    assert next_page(spec, 2, 11) == 3
    assert next_page(spec, 3, 11) is None


def _hit(i: int, body: str, subject: str = "Refund failed") -> RawHit:
    return RawHit(f"T-{i}", 1.0, {"ticket_id": f"T-{i}", "subject": subject, "status": "open", "body": body})


def test_shape_search_zero_hint(spec: SearchSpec) -> None:
    out = shape_search(spec, SearchRequest("x"), RawResult((), 0), ("x",), analyze)
    assert out["hint"] == HINT_ZERO and out["results"] == [] and out["next_page"] is None
    assert out["total_text"] == "0"


def test_shape_search_many_hint_and_gte(spec: SearchSpec) -> None:
    raw = RawResult(tuple(_hit(i, BODY) for i in range(5)), 10000, "gte")
    out = shape_search(spec, SearchRequest("refund"), raw, unique_terms("refund"), analyze)
    assert out["hint"] == HINT_MANY
    assert out["total_text"] == "at least 10000" and out["total_relation"] == "gte"
    assert out["next_page"] == 2
    assert [r["ticket_id"] for r in out["results"]] == [f"T-{i}" for i in range(5)]


def test_five_hits_fit_the_budget_whatever_the_documents(spec: SearchSpec) -> None:
    huge = "ü" * 50_000 + " refund " + "🙂" * 50_000
    raw = RawResult(tuple(_hit(i, huge, subject="S" * 10_000) for i in range(5)), 5)
    out = shape_search(spec, SearchRequest("refund"), raw, unique_terms("refund"), analyze)
    assert len(json.dumps(out["results"], ensure_ascii=False)) <= spec.hits_char_budget
    assert out["truncated"] is True
    assert len(out["results"]) == 5


def test_normal_hits_are_not_truncated(spec: SearchSpec) -> None:
    raw = RawResult(tuple(_hit(i, "short body about a refund") for i in range(5)), 5)
    out = shape_search(spec, SearchRequest("refund"), raw, unique_terms("refund"), analyze)
    assert out["truncated"] is False


def test_partial_flag(spec: SearchSpec) -> None:
    raw = RawResult((_hit(1, "refund"),), 1, partial=True, partial_reason="timed out")
    out = shape_search(spec, SearchRequest("refund"), raw, ("refund",), analyze)
    assert out["partial"] is True and out["partial_reason"] == "timed out"


def test_shape_document_bounds_body_and_hides_scope(spec: SearchSpec) -> None:
    doc = {"ticket_id": "T-1", "tenant_id": "acme", "subject": "s", "status": "open", "body": "word " * 5000}
    out = shape_document(spec, doc)
    assert out["status"] == "ok" and out["document"]["status"] == "open"
    assert "tenant_id" not in out["document"]
    assert len(out["document"]["body"]) <= spec.fetch_body_chars and out["truncated"] is True


def test_analysis_keeps_codes_and_neutralises_syntax() -> None:
    assert "e4012" in analyze("E4012")
    assert analyze("card_declined") == ["card_declin"]
    assert analyze('tenant_id:t2 * OR "x"') == ["tenant_id", "t2", "x"]
    assert analyze("*") == [] and analyze("OR AND NOT") == []
