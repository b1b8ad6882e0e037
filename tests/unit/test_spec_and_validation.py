"""The tool surface: the declaration snapshot and one test per class of bad input."""

from __future__ import annotations

import asyncio
import dataclasses
import json
from pathlib import Path
from typing import Any

import pytest
import tantivy

from scopegate.errors import ConfigError
from scopegate.search.model import SearchRequest
from scopegate.search.spec import (
    ID_RESERVE_CHARS,
    KeywordFilter,
    SearchSpec,
    TextField,
    from_stored,
    min_hit_chars,
    spec_from_dict,
    spec_to_dict,
    to_stored,
)
from scopegate.search.validate import validate_fetch_args, validate_search_args
from scopegate.validation import ConfigValidationError


def test_declaration_snapshot(spec: SearchSpec, snapshot: Any) -> None:
    assert json.dumps(spec.json_schema(), indent=2, sort_keys=True) == snapshot
    assert json.dumps(spec.fetch_json_schema(), indent=2, sort_keys=True) == snapshot


def test_schema_exposes_only_query_filters_and_page(spec: SearchSpec) -> None:
    props = spec.json_schema()["properties"]
    assert list(props) == ["query", "product", "status", "page"]
    assert "tenant_id" not in json.dumps(spec.json_schema())
    assert spec.json_schema()["additionalProperties"] is False


def test_valid_arguments(spec: SearchSpec) -> None:
    req = validate_search_args(spec, {"query": "  Apple   Pay\trefund ", "product": "payments", "page": 2})
    assert req == SearchRequest(query="Apple Pay refund", filters=(("product", "payments"),), page=2)
    # JSON numbers often arrive as floats from function-calling models.
    assert isinstance(validate_search_args(spec, {"query": "x", "page": 3.0}), SearchRequest)
    assert validate_search_args(spec, {"query": "x", "product": None}) == SearchRequest("x", (), 1)


@pytest.mark.parametrize(
    ("args", "code"),
    [
        ({"query": ""}, "BAD_QUERY"),
        ({"query": "   \t\n "}, "BAD_QUERY"),
        ({"query": "a" * 201}, "BAD_QUERY"),
        ({"query": "refund\x00failed"}, "BAD_QUERY"),
        ({"query": "refund\u202efailed"}, "BAD_QUERY"),
        ({"query": "refund\x1b[31m"}, "BAD_QUERY"),
        ({}, "BAD_QUERY"),
        ({"query": 42}, "BAD_QUERY"),
        ({"query": ["refund"]}, "BAD_QUERY"),
        ({"query": "x", "product": "crypto"}, "BAD_FILTER"),
        ({"query": "x", "product": "PAYMENTS"}, "BAD_FILTER"),
        ({"query": "x", "product": ""}, "BAD_FILTER"),
        ({"query": "x", "product": ["payments"]}, "BAD_FILTER"),
        ({"query": "x", "page": 0}, "BAD_PAGE"),
        ({"query": "x", "page": -1}, "BAD_PAGE"),
        ({"query": "x", "page": 10**9}, "BAD_PAGE"),
        ({"query": "x", "page": 5}, "BAD_PAGE"),
        ({"query": "x", "page": 1.5}, "BAD_PAGE"),
        ({"query": "x", "page": "2"}, "BAD_PAGE"),
        ({"query": "x", "page": True}, "BAD_PAGE"),
        ({"query": "x", "page": float("nan")}, "BAD_PAGE"),
        ({"query": "x", "tenant_id": "other"}, "BAD_ARGUMENTS"),
        ({"query": "x", "groups": ["admin"]}, "BAD_ARGUMENTS"),
        ({"query": "x", "size": 1000}, "BAD_ARGUMENTS"),
    ],
)
def test_bad_input_is_a_structured_error(spec: SearchSpec, args: dict[str, Any], code: str) -> None:
    result = validate_search_args(spec, args)
    assert isinstance(result, dict), f"accepted {args!r}"
    assert result["status"] == "error"
    assert result["error_code"] == code
    assert isinstance(result["message"], str) and result["message"]
    assert result["retryable"] is False


def test_bad_filter_lists_allowed_values(spec: SearchSpec) -> None:
    result = validate_search_args(spec, {"query": "x", "status": "deleted"})
    assert isinstance(result, dict)
    assert result["allowed"] == ["open", "pending", "solved", "closed"]
    assert result["field"] == "status"


def test_unknown_argument_lists_allowed(spec: SearchSpec) -> None:
    result = validate_search_args(spec, {"query": "x", "tenant_id": "t2"})
    assert isinstance(result, dict)
    assert result["allowed"] == ["query", "product", "status", "page"]


def test_huge_unknown_argument_name_is_bounded(spec: SearchSpec) -> None:
    result = validate_search_args(spec, {"query": "x", "k" * 100_000: 1})
    assert isinstance(result, dict) and len(result["message"]) < 300


@pytest.mark.parametrize("doc_id", ["", "   ", None, True, 1.5, 2.0**60, ["A-1"], {"id": "A-1"}, "x" * 257, "a\x00b"])
def test_bad_fetch_ids(spec: SearchSpec, doc_id: Any) -> None:
    result = validate_fetch_args(spec, {"id": doc_id})
    assert isinstance(result, dict) and result["error_code"] == "BAD_ARGUMENTS"


@pytest.mark.parametrize(("doc_id", "expected"), [(13404344, "13404344"), (7.0, "7"), (-3, "-3"), (" A-1 ", "A-1")])
def test_a_whole_number_id_is_accepted_as_its_text(spec: SearchSpec, doc_id: Any, expected: str) -> None:
    # Issue 19: a model sending the numeric id 13404344 got "id is required".
    assert validate_fetch_args(spec, {"id": doc_id}) == expected


@pytest.mark.parametrize(
    ("doc_id", "named"), [(True, "the boolean true"), (1.5, "the number 1.5"), (["A-1"], "a list")]
)
def test_an_ambiguous_id_gets_a_precise_message(spec: SearchSpec, doc_id: Any, named: str) -> None:
    result = validate_fetch_args(spec, {"id": doc_id})
    assert isinstance(result, dict)
    assert result["message"] == (
        f"id must be one string: send the ticket_id exactly as a search result showed it, in quotes (got {named})"
    )


def test_fetch_rejects_unknown_arguments(spec: SearchSpec) -> None:
    result = validate_fetch_args(spec, {"id": "ACM-00001", "tenant_id": "acme"})
    assert isinstance(result, dict) and result["error_code"] == "BAD_ARGUMENTS"


def test_spec_round_trips_through_dict(spec: SearchSpec) -> None:
    assert spec_from_dict(json.loads(json.dumps(spec_to_dict(spec)))) == spec


@pytest.mark.parametrize(
    "kwargs",
    [
        {"name": "bad name"},
        {"text_fields": ()},
        {"filters": (KeywordFilter("query", ("a",)),)},
        {"filters": (KeywordFilter("product", ()),)},
        {"snippet_field": "nope"},
        {"page_size": 0},
        {"engine_timeout_s": 5.0, "client_timeout_s": 1.0},
        {"id_field": "body"},
    ],
)
def test_invalid_specs_fail_loudly(kwargs: dict[str, Any]) -> None:
    base: dict[str, Any] = {
        "name": "s",
        "description": "d",
        "text_fields": (TextField("subject", 3), TextField("body")),
    }
    base.update(kwargs)
    with pytest.raises(ConfigError):
        SearchSpec(**base)


def test_text_field_parse() -> None:
    assert TextField.parse("subject^3") == TextField("subject", 3.0)
    assert TextField.parse("body") == TextField("body", 1.0)
    with pytest.raises(ConfigError):
        TextField.parse("subject^x")


# -- issue 10: neutral defaults, bounded numbers, one model, old stored specs ------------------
FIXTURES = Path(__file__).resolve().parent / "fixtures"


def _minimal(**kw: Any) -> SearchSpec:
    return SearchSpec(name="search_docs", description="d", text_fields=(TextField("title"), TextField("body")), **kw)


def test_library_defaults_are_neutral() -> None:
    spec = _minimal()
    assert (spec.id_field, spec.index, spec.fetch_name, spec.result_fields) == ("id", "search_docs", "get_docs", ())
    text = json.dumps(spec.to_dict()).lower()
    assert "ticket" not in text and "error code" not in text
    assert _minimal(fetch_name="get_doc").fetch_name == "get_doc"
    assert SearchSpec(name="docs", description="d", text_fields=(TextField("body"),)).fetch_name == "get_docs"


def test_page_size_above_what_the_budget_holds_is_refused() -> None:
    # Changed on purpose (issue 10): page_size had no upper bound, and past what hits_char_budget can
    # hold the shaper cut document ids, so the model got ids it could not cite.
    with pytest.raises(ConfigError) as info:
        _minimal(page_size=50)
    assert "page_size" in str(info.value) and "at most" in str(info.value)
    spec = ticket_spec_like()
    most = spec.hits_char_budget // min_hit_chars(spec.id_field, spec.result_fields)
    assert dataclasses.replace(spec, page_size=most).page_size == most
    with pytest.raises(ConfigError, match=f"at most {most} with hits_char_budget=2500"):
        dataclasses.replace(spec, page_size=most + 1)
    # A bigger budget allows a bigger page, up to the hard limit.
    assert dataclasses.replace(spec, page_size=30, hits_char_budget=30 * 200).page_size == 30
    with pytest.raises(ConfigError, match="maximum of 50"):
        dataclasses.replace(spec, page_size=51, hits_char_budget=200_000)


def ticket_spec_like() -> SearchSpec:
    from scopegate.demo.corpus import ticket_spec

    return ticket_spec()


def test_a_full_page_at_the_bound_keeps_every_id_intact() -> None:
    from scopegate.search.analysis import make_analyzer, unique_terms
    from scopegate.search.model import RawHit
    from scopegate.search.shaper import shape_hits

    base = ticket_spec_like()
    spec = dataclasses.replace(
        base, page_size=base.hits_char_budget // min_hit_chars(base.id_field, base.result_fields)
    )
    analyzer = make_analyzer()
    huge = "refund " + "ü" * 20_000
    hits = [
        RawHit(f"ID-{i:0{ID_RESERVE_CHARS - 3}d}", 1.0, {"subject": "S" * 5000, "status": "open", "body": huge})
        for i in range(spec.page_size)
    ]
    items, truncated = shape_hits(spec, hits, unique_terms("refund"), lambda t: list(analyzer.analyze(t)))
    assert truncated and len(items) == spec.page_size
    assert [item[spec.id_field] for item in items] == [h.doc_id for h in hits]
    assert len(json.dumps(items, ensure_ascii=False)) <= spec.hits_char_budget


def _numeric_fields() -> list[str]:
    return [
        name
        for name, info in SearchSpec.__pydantic_fields__.items()  # type: ignore[attr-defined]
        if info.annotation in (int, float)
    ]


# Weights where 0 is a meaningful value (no tie-breaker, keyword-only fusion).
ZERO_ALLOWED = frozenset({"tie_breaker", "fusion_weight"})


@pytest.mark.parametrize(
    ("field", "value"),
    [(f, v) for f in _numeric_fields() for v in (-1, 0, 10**12) if not (v == 0 and f in ZERO_ALLOWED)],
)
def test_every_numeric_field_is_bounded(field: str, value: int) -> None:
    assert len(_numeric_fields()) == 17
    with pytest.raises(ConfigValidationError) as info:
        dataclasses.replace(ticket_spec_like(), **{field: value})
    problem = info.value.problems[0]
    assert problem.path == field, str(info.value)
    assert "allowed: " in problem.message or "out of range" in problem.message, problem.message
    for boost in (0.0, -1.0, 1e9):
        with pytest.raises(ConfigValidationError, match=r"text_fields\[0\]\.boost"):
            dataclasses.replace(_minimal(), text_fields=(TextField("title", boost), TextField("body")))


def test_text_fields_accept_the_short_form_and_keep_it_when_stored() -> None:
    spec = SearchSpec.from_dict({"name": "s", "description": "d", "text_fields": ["subject^3", "body"]})
    assert spec.text_fields == (TextField("subject", 3.0), TextField("body"))
    assert spec.to_dict()["text_fields"] == ["subject^3", "body"]
    with pytest.raises(ConfigError, match=r"text_fields\[0\]: bad boost"):
        SearchSpec.from_dict({"name": "s", "description": "d", "text_fields": ["subject^x"]})


def test_unknown_spec_keys_are_refused_with_a_hint() -> None:
    with pytest.raises(ConfigError, match="unexpected key 'page_sise' \\(did you mean 'page_size'\\?\\)"):
        SearchSpec.from_dict({"name": "s", "description": "d", "text_fields": ["body"], "page_sise": 5})


def test_stored_spec_round_trips(spec: SearchSpec, tmp_path: Path) -> None:
    stored = json.loads(json.dumps(to_stored(spec)))
    assert stored["format"] == 2 and from_stored(stored) == spec


def test_a_spec_stored_by_the_old_format_still_opens(spec: SearchSpec) -> None:
    old = json.loads((FIXTURES / "scopegate-spec-v1.json").read_text("utf-8"))
    assert "format" not in old
    # Written before date fields and field_combination existed: no date field, best_fields (their indices
    # have no combined field).
    assert from_stored(old) == dataclasses.replace(spec, date_field=None, field_combination="best_fields")
    # Written by hand or by an older version: keys left out meant the old (ticket) defaults.
    minimal = {"name": "search_tickets", "description": "d", "text_fields": ["subject^3", "body"]}
    minimal["filters"] = [{"name": "status", "allowed": ["open"]}]
    legacy = from_stored(minimal)
    assert (legacy.id_field, legacy.index, legacy.fetch_name) == ("ticket_id", "tickets", "get_ticket")
    assert legacy.result_fields == ("subject", "status")


def test_an_index_written_with_the_old_spec_file_opens_and_searches(
    spec: SearchSpec, tickets: list[dict[str, Any]], tmp_path: Path
) -> None:
    from scopegate.backends.embedded import SPEC_FILE, EmbeddedBackend, IndexLayout, build_schema
    from scopegate.context import CallContext
    from scopegate.search.tools import SearchTool

    folder = tmp_path / "index"
    spec = dataclasses.replace(spec, field_combination="best_fields")  # what older versions indexed
    old_spec = dataclasses.replace(spec, date_field=None)
    # The layout of an index written before aggregations: no fast keyword fields, no date field.
    folder.mkdir()
    tantivy.Index(build_schema(old_spec, IndexLayout(frozenset(), None)), path=str(folder), reuse=True)
    EmbeddedBackend(old_spec, folder).ingest_sync(tickets[:50], batch_size=50)
    minimal = {"name": "search_tickets", "description": "d", "text_fields": ["subject^3", "body"]}
    minimal["filters"] = [{"name": f.name, "allowed": list(f.allowed)} for f in spec.filters]
    (folder / SPEC_FILE).write_text(json.dumps(minimal), "utf-8")
    opened = EmbeddedBackend.open(folder)
    assert opened.spec.id_field == "ticket_id"
    result = asyncio.run(
        SearchTool(opened.spec, opened).run({"query": "refund"}, CallContext(state={"tenant_id": "acme"}))
    )
    assert result.result["status"] == "ok" and result.result["results"]
    EmbeddedBackend(spec, folder)  # opening writes nothing, even with the current spec
    assert "format" not in json.loads((folder / SPEC_FILE).read_text("utf-8"))
    EmbeddedBackend(spec, folder).ingest_sync([])  # an ingest stores its spec (upgrading the file)
    assert json.loads((folder / SPEC_FILE).read_text("utf-8"))["format"] == 2
