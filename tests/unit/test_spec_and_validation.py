"""The tool surface: the declaration snapshot and one test per class of bad input."""

from __future__ import annotations

import json
from typing import Any

import pytest

from scopegate.errors import ConfigError
from scopegate.search.model import SearchRequest
from scopegate.search.spec import KeywordFilter, SearchSpec, TextField, spec_from_dict, spec_to_dict
from scopegate.search.validate import validate_fetch_args, validate_search_args


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


@pytest.mark.parametrize("doc_id", ["", "   ", None, 5, "x" * 257, "a\x00b"])
def test_bad_fetch_ids(spec: SearchSpec, doc_id: Any) -> None:
    result = validate_fetch_args(spec, {"id": doc_id})
    assert isinstance(result, dict) and result["error_code"] == "BAD_ARGUMENTS"


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
