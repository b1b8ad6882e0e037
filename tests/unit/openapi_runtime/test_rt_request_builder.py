"""The pure request builder: encoding, validation, bodies, safety rules."""

from __future__ import annotations

from dataclasses import replace
from typing import Any
from urllib.parse import parse_qsl

import pytest
from rt_unit_helpers import binding, builder, param, spec_with

from scopegate.errors import ConfigError
from scopegate.openapi.model import ArgumentMap
from scopegate.openapi.runtime.request import ArgumentsInvalid, RequestBuilder, UnsupportedOperation, pin_base_url

ITEM = spec_with(
    "/items/{id}/parts/{part}",
    "get",
    {
        "operationId": "getPart",
        "parameters": [
            param("id", "path", {"type": "string"}),
            param("part", "path", {"type": "integer"}),
            param("verbose", "query", {"type": "boolean"}),
            param("q", "query", {"type": "string"}, allowEmptyValue=True),
            param("strict", "query", {"type": "string"}),
            param("limit", "query", {"type": "integer", "minimum": 0, "maximum": 50}),
            param("tags", "query", {"type": "array", "items": {"type": "string"}}),
            param("ids", "query", {"type": "array", "items": {"type": "integer"}}, explode=False),
            param("pipe", "query", {"type": "array", "items": {"type": "string"}}, style="pipeDelimited"),
            param(
                "filter", "query", {"type": "object", "additionalProperties": {"type": "string"}}, style="deepObject"
            ),
            param("X-Trace", "header", {"type": "string"}),
            param("session_hint", "cookie", {"type": "string"}),
        ],
    },
)


def build(args: dict[str, Any]) -> Any:
    return builder(ITEM, "getPart").build(args)


@pytest.mark.parametrize(
    ("value", "encoded"),
    [
        ("plain", "plain"),
        ("a/b", "a%2Fb"),
        ("..", "%2E%2E"),
        (".", "%2E"),
        ("...", "%2E%2E%2E"),
        ("../admin", "..%2Fadmin"),
        ("%2F", "%252F"),
        ("%2e%2e", "%252e%252e"),
        ("a?b=c", "a%3Fb%3Dc"),
        ("a#b", "a%23b"),
        ("http://evil.test/x", "http%3A%2F%2Fevil.test%2Fx"),
        ("//evil.test", "%2F%2Fevil.test"),
        ("a b", "a%20b"),
        ("\r\nHost: x", "%0D%0AHost%3A%20x"),
        ("é東", "%C3%A9%E6%9D%B1"),
        ("a;b,c", "a%3Bb%2Cc"),
        ("~_-.", "~_-."),
    ],
)
def test_path_values_cannot_change_the_path(value: str, encoded: str) -> None:
    req = build({"id": value, "part": 1})
    assert req.path == f"/items/{encoded}/parts/1"
    assert req.url == f"https://api.example.test/v1/items/{encoded}/parts/1"


@pytest.mark.parametrize("value", ["", None])
def test_empty_or_missing_path_value_is_refused(value: Any) -> None:
    with pytest.raises(ArgumentsInvalid) as info:
        build({"id": value, "part": 1})
    assert info.value.problems[0]["field"] == "id"


def test_falsy_values_are_sent() -> None:
    req = build({"id": "x", "part": 0, "verbose": False, "q": "", "limit": 0, "tags": []})
    assert req.path == "/items/x/parts/0"
    assert req.query == (("verbose", "false"), ("q", ""), ("limit", "0"))


def test_empty_query_values_only_where_the_spec_allows_them() -> None:
    with pytest.raises(ArgumentsInvalid) as info:
        build({"id": "x", "part": 1, "strict": ""})
    assert info.value.problems[0]["field"] == "strict" and "empty" in info.value.problems[0]["problem"]


def test_query_styles() -> None:
    req = build(
        {
            "id": "x",
            "part": 1,
            "tags": ["a b", "c&d"],
            "ids": [1, 2],
            "pipe": ["x", "y"],
            "filter": {"state": "open", "label": "bug"},
            "verbose": True,
        }
    )
    # Pairs are percent-encoded; the "," joining an explode:false array is not (OpenAPI's form style).
    assert req.query == (
        ("verbose", "true"),
        ("tags", "a%20b"),
        ("tags", "c%26d"),
        ("ids", "1,2"),
        ("pipe", "x%7Cy"),
        ("filter[state]", "open"),
        ("filter[label]", "bug"),
    )
    assert req.url.endswith(
        "?verbose=true&tags=a%20b&tags=c%26d&ids=1,2&pipe=x%7Cy&filter[state]=open&filter[label]=bug"
    )


def test_headers_and_cookies() -> None:
    req = build({"id": "x", "part": 1, "X_Trace": "abc-123", "session_hint": "a b;c"})
    assert req.headers == (("X-Trace", "abc-123"),)
    assert ("Cookie", "session_hint=a%20b%3Bc") in req.header_list()


@pytest.mark.parametrize("value", ["a\r\nX-Evil: 1", "a\nb", "\x00", "é", "x" * 2000])
def test_header_injection_is_refused(value: str) -> None:
    with pytest.raises(ArgumentsInvalid) as info:
        build({"id": "x", "part": 1, "X_Trace": value})
    assert info.value.problems == [{"field": "X_Trace", "problem": "must be short printable ASCII text"}]


def test_values_are_validated_against_the_original_schema() -> None:
    with pytest.raises(ArgumentsInvalid) as info:
        build({"id": "x", "part": "one", "limit": 51, "verbose": "yes", "tags": "notalist"})
    fields = {p["field"]: p["problem"] for p in info.value.problems}
    assert fields == {
        "part": "must be of type integer",
        "limit": "must be <= 50",
        "verbose": "must be of type boolean",
        "tags": "must be of type array",
    }


def test_unknown_and_oversized_arguments() -> None:
    with pytest.raises(ArgumentsInvalid) as info:
        build({"id": "x", "part": 1, "tenant_id": "other", "url": "http://evil"})
    assert [p["field"] for p in info.value.problems] == ["tenant_id", "url"]
    with pytest.raises(ArgumentsInvalid) as info:
        build({"id": "x", "part": 1, "q": "y" * 30_000})
    assert info.value.problems[0]["field"] == "*"


def test_integral_floats_become_ints() -> None:
    assert build({"id": "x", "part": 3.0, "ids": [1.0, 2.0]}).path == "/items/x/parts/3"
    with pytest.raises(ArgumentsInvalid):
        build({"id": "x", "part": 3.5})


ADDRESS = {
    "type": "object",
    "required": ["city", "country", "id"],
    "properties": {
        "id": {"type": "string", "readOnly": True},
        "city": {"type": "string", "minLength": 1},
        "line2": {"type": "string", "nullable": True},
        "country": {"type": "string", "pattern": "^[A-Z]{2}$"},
        "geo": {"type": "object", "properties": {"lat": {"type": "number", "minimum": -90, "maximum": 90}}},
    },
}
JSON_OP = spec_with(
    "/addresses/{aid}",
    "put",
    {
        "operationId": "putAddress",
        "parameters": [param("aid", "path", {"type": "string"})],
        "requestBody": {"required": True, "content": {"application/json": {"schema": ADDRESS}}},
    },
)


def test_json_body_rebuilt_and_validated() -> None:
    b = builder(JSON_OP, "putAddress")
    req = b.build({"aid": "a1", "city": "Zürich", "country": "CH", "line2": None, "geo": {"lat": 0}})
    assert req.content_type == "application/json"
    assert req.body == '{"city":"Zürich","line2":null,"country":"CH","geo":{"lat":0}}'.encode()
    with pytest.raises(ArgumentsInvalid) as info:
        b.build({"aid": "a1", "country": "ch", "geo": {"lat": 91}})
    assert {p["field"]: p["problem"] for p in info.value.problems} == {
        "city": "is required",
        "country": "must match the pattern ^[A-Z]{2}$",
        "geo.lat": "must be <= 90",
    }


FORM_OP = spec_with(
    "/messages",
    "post",
    {
        "operationId": "send",
        "requestBody": {
            "content": {
                "application/x-www-form-urlencoded": {
                    "schema": {
                        "type": "object",
                        "required": ["To", "Body"],
                        "properties": {
                            "To": {"type": "string"},
                            "Body": {"type": "string"},
                            "MediaUrl": {"type": "array", "items": {"type": "string"}},
                            "Flag": {"type": "boolean"},
                            "Meta": {"type": "object"},
                        },
                    }
                }
            }
        },
    },
)


def test_form_body() -> None:
    req = builder(FORM_OP, "send").build(
        {
            "To": "+15551234567",
            "Body": "Hi & bye = 100%",
            "MediaUrl": ["https://a/1", "https://a/2"],
            "Flag": False,
            "Meta": {"k": 1},
        }
    )
    assert req.content_type == "application/x-www-form-urlencoded"
    assert parse_qsl(req.body.decode()) == [
        ("To", "+15551234567"),
        ("Body", "Hi & bye = 100%"),
        ("MediaUrl", "https://a/1"),
        ("MediaUrl", "https://a/2"),
        ("Flag", "false"),
        ("Meta", '{"k":1}'),
    ]


def test_reserved_header_parameters_never_come_from_the_model() -> None:
    spec = spec_with(
        "/x", "get", {"operationId": "x", "parameters": [param("X-Forwarded-For", "header", {"type": "string"})]}
    )
    # Translation leaves it out, listed; a binding that declares it anyway is refused by the builder.
    bound = binding(spec, "x")
    assert bound.arguments == ()
    assert [(o.name, o.reason) for o in bound.omitted] == [("X-Forwarded-For", "forbidden_header")]
    forged = replace(bound, arguments=(ArgumentMap("X_Forwarded_For", "header", "X-Forwarded-For"),))
    with pytest.raises(UnsupportedOperation):
        RequestBuilder(forged, "https://api.example.test/v1")


def test_unsupported_body_media_types_fail_at_construction() -> None:
    spec = spec_with(
        "/upload",
        "post",
        {
            "operationId": "up",
            "requestBody": {
                "content": {"application/octet-stream": {"schema": {"type": "string", "format": "binary"}}}
            },
        },
    )
    bound = binding(spec, "up")
    assert bound.body_media_type is None
    assert [(o.location, o.reason) for o in bound.omitted] == [("body", "unsupported_media_type")]
    forged = replace(bound, body_media_type="application/octet-stream", body_schema={"type": "string"})
    with pytest.raises(UnsupportedOperation):
        RequestBuilder(forged, "https://api.example.test/v1")


def test_idempotency_key_is_hidden_and_filled_by_the_tool() -> None:
    spec = spec_with(
        "/pay",
        "post",
        {"operationId": "pay", "parameters": [param("Idempotency-Key", "header", {"type": "string"})]},
    )
    b = builder(spec, "pay")
    assert b.idempotency_header == "Idempotency-Key"
    assert b.model_arguments == frozenset()
    assert b.build({}, idempotency_key="k1").headers == (("Idempotency-Key", "k1"),)
    with pytest.raises(ArgumentsInvalid):
        b.build({"Idempotency_Key": "chosen-by-model"})


@pytest.mark.parametrize(
    "url",
    ["ftp://x", "/relative", "https://user:pw@h", "https://h/?q=1", "https://h/#f", "https://{region}.h", "h.com"],
)
def test_base_url_must_be_clean(url: str) -> None:
    with pytest.raises(ConfigError):
        pin_base_url(url)


def test_base_url_is_normalised() -> None:
    assert pin_base_url("HTTPS://API.Example.test:8443/v1/") == "https://api.example.test:8443/v1"


def test_describe_masks_credentials() -> None:
    req = build({"id": "x", "part": 1}).with_parts(
        headers=(("Authorization", "Bearer s3cret"),), query=(("api_key", "k3y"),), secret=True
    )
    shown = str(req.describe())
    assert "s3cret" not in shown and "k3y" not in shown
    assert req.url.endswith("?api_key=k3y")
