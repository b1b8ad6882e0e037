"""Request serialisation as OpenAPI defines it: every in/style/explode, form bodies with encoding, brackets.

The expected strings are OpenAPI's own style examples (``color`` = "blue",
["blue", "black", "brown"], {"R": 100, "G": 200, "B": 150}), so a failure
here is a difference from the specification, not from our taste.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import parse_qsl, unquote

import pytest
from rt_unit_helpers import binding, builder, param, spec_with

from scopegate.openapi.loader import load_document
from scopegate.openapi.runtime.request import ArgumentsInvalid, RequestBuilder
from scopegate.openapi.serialize import WireNames
from scopegate.openapi.translate import translate

BLUE = "blue"
COLORS = ["blue", "black", "brown"]
RGB = {"R": 100, "G": 200, "B": 150}
ARRAY = {"type": "array", "items": {"type": "string"}}
OBJECT = {
    "type": "object",
    "properties": {"R": {"type": "integer"}, "G": {"type": "integer"}, "B": {"type": "integer"}},
}


def _path_builder(style: str, explode: bool, schema: dict[str, Any]) -> RequestBuilder:
    spec = spec_with(
        "/c/{color}",
        "get",
        {"operationId": "op", "parameters": [param("color", "path", schema, style=style, explode=explode)]},
    )
    return builder(spec, "op")


@pytest.mark.parametrize(
    ("style", "explode", "value", "schema", "expected"),
    [
        ("simple", False, BLUE, {"type": "string"}, "blue"),
        ("simple", False, COLORS, ARRAY, "blue,black,brown"),
        ("simple", True, COLORS, ARRAY, "blue,black,brown"),
        ("simple", False, RGB, OBJECT, "R,100,G,200,B,150"),
        ("simple", True, RGB, OBJECT, "R=100,G=200,B=150"),
        ("label", False, BLUE, {"type": "string"}, ".blue"),
        ("label", False, COLORS, ARRAY, ".blue,black,brown"),
        ("label", True, COLORS, ARRAY, ".blue.black.brown"),
        ("label", False, RGB, OBJECT, ".R,100,G,200,B,150"),
        ("label", True, RGB, OBJECT, ".R=100.G=200.B=150"),
        ("matrix", False, BLUE, {"type": "string"}, ";color=blue"),
        ("matrix", False, COLORS, ARRAY, ";color=blue,black,brown"),
        ("matrix", True, COLORS, ARRAY, ";color=blue;color=black;color=brown"),
        ("matrix", False, RGB, OBJECT, ";color=R,100,G,200,B,150"),
        ("matrix", True, RGB, OBJECT, ";R=100;G=200;B=150"),
    ],
)
def test_path_styles(style: str, explode: bool, value: Any, schema: dict[str, Any], expected: str) -> None:
    assert _path_builder(style, explode, schema).build({"color": value}).path == f"/c/{expected}"


def _query_url(style: str | None, explode: bool | None, value: Any, schema: dict[str, Any], **extra: Any) -> str:
    kwargs: dict[str, Any] = dict(extra)
    if style is not None:
        kwargs["style"] = style
    if explode is not None:
        kwargs["explode"] = explode
    spec = spec_with("/c", "get", {"operationId": "op", "parameters": [param("color", "query", schema, **kwargs)]})
    return builder(spec, "op").build({"color": value}).url.partition("?")[2]


@pytest.mark.parametrize(
    ("style", "explode", "value", "schema", "expected"),
    [
        (None, None, BLUE, {"type": "string"}, "color=blue"),
        (None, None, COLORS, ARRAY, "color=blue&color=black&color=brown"),  # form, explode by default
        ("form", False, COLORS, ARRAY, "color=blue,black,brown"),  # the joining comma is not encoded
        ("form", True, COLORS, ARRAY, "color=blue&color=black&color=brown"),
        ("form", False, RGB, OBJECT, "color=R,100,G,200,B,150"),
        ("form", True, RGB, OBJECT, "R=100&G=200&B=150"),
        ("spaceDelimited", False, COLORS, ARRAY, "color=blue%20black%20brown"),
        ("spaceDelimited", False, RGB, OBJECT, "color=R%20100%20G%20200%20B%20150"),
        ("pipeDelimited", False, COLORS, ARRAY, "color=blue%7Cblack%7Cbrown"),
        ("pipeDelimited", False, RGB, OBJECT, "color=R%7C100%7CG%7C200%7CB%7C150"),
        ("deepObject", True, RGB, OBJECT, "color[R]=100&color[G]=200&color[B]=150"),
    ],
)
def test_query_styles(style: str | None, explode: bool | None, value: Any, schema: Any, expected: str) -> None:
    assert _query_url(style, explode, value, schema) == expected


def test_commas_inside_values_are_encoded_but_the_delimiter_is_not() -> None:
    assert _query_url("form", False, ["a,b", "c d"], ARRAY) == "color=a%2Cb,c%20d"


def test_deep_object_nesting_and_bracket_conventions() -> None:
    schema = {"type": "object", "additionalProperties": True}
    value = {"order_id": 6735, "tags": ["a", "b"], "items": [{"price": "p_1", "qty": 2}], "x y": "é&"}
    pairs = _query_url("deepObject", True, value, schema).split("&")
    assert pairs == [
        "color[order_id]=6735",
        "color[tags][]=a",
        "color[tags][]=b",
        "color[items][0][price]=p_1",
        "color[items][0][qty]=2",
        "color[x%20y]=%C3%A9%26",
    ]
    # An array sent deepObject (as APIs that document `expand[]` want it):
    assert _query_url("deepObject", True, ["customer", "invoice"], ARRAY) == "color[]=customer&color[]=invoice"


def test_allow_reserved_keeps_reserved_characters_that_cannot_break_the_query() -> None:
    value = "a/b:c?d@e!f$g'h(i)j*k,l;m[n]o&p=q#r+s t"
    url = _query_url(None, None, value, {"type": "string"}, allowReserved=True)
    assert url == "color=a/b:c?d@e!f$g'h(i)j*k,l;m[n]o%26p%3Dq%23r%2Bs%20t"
    plain = _query_url(None, None, value, {"type": "string"})
    assert unquote(plain.partition("=")[2]) == value and "/" not in plain


def test_nested_values_are_refused_where_the_style_cannot_express_them() -> None:
    spec = spec_with(
        "/c",
        "get",
        {"operationId": "op", "parameters": [param("f", "query", {"type": "object", "additionalProperties": True})]},
    )
    with pytest.raises(ArgumentsInvalid) as info:
        builder(spec, "op").build({"f": {"a": {"b": 1}}})
    assert info.value.problems == [{"field": "f", "problem": "nested values cannot be sent with style form"}]


def test_header_and_cookie_parameters() -> None:
    spec = spec_with(
        "/c",
        "get",
        {
            "operationId": "op",
            "parameters": [
                param("X-Colors", "header", ARRAY),
                param("X-Rgb", "header", OBJECT, explode=True),
                param("pref", "cookie", ARRAY, explode=False),
                param("theme", "cookie", {"type": "string"}),
            ],
        },
    )
    req = builder(spec, "op").build({"X_Colors": COLORS, "X_Rgb": RGB, "pref": ["a b", "c"], "theme": "dark;x"})
    assert req.headers == (("X-Colors", "blue,black,brown"), ("X-Rgb", "R=100,G=200,B=150"))
    assert ("Cookie", "pref=a%20b,c; theme=dark%3Bx") in req.header_list()


def test_content_parameters_are_json() -> None:
    spec = spec_with(
        "/c",
        "get",
        {
            "operationId": "op",
            "parameters": [
                {"name": "filter", "in": "query", "content": {"application/json": {"schema": OBJECT}}},
            ],
        },
    )
    url = builder(spec, "op").build({"filter": {"R": 1}}).url
    assert url.endswith("?filter=%7B%22R%22%3A1%7D")


FORM = "application/x-www-form-urlencoded"


def _form_spec(encoding: dict[str, Any]) -> dict[str, Any]:
    return spec_with(
        "/charges",
        "post",
        {
            "operationId": "charge",
            "requestBody": {
                "content": {
                    FORM: {
                        "schema": {
                            "type": "object",
                            "properties": {
                                "amount": {"type": "integer"},
                                "metadata": {"type": "object", "additionalProperties": {"type": "string"}},
                                "items": {
                                    "type": "array",
                                    "items": {"type": "object", "properties": {"price": {"type": "string"}}},
                                },
                                "expand": {"type": "array", "items": {"type": "string"}},
                                "ids": {"type": "array", "items": {"type": "integer"}},
                                "shipping": {"type": "object", "properties": {"city": {"type": "string"}}},
                            },
                        },
                        "encoding": encoding,
                    }
                }
            },
        },
    )


def _form(encoding: dict[str, Any], args: dict[str, Any]) -> str:
    req = builder(_form_spec(encoding), "charge").build(args)
    assert req.content_type == FORM and req.body is not None
    return req.body.decode("ascii")


def test_form_body_honours_the_encoding_map() -> None:
    encoding = {
        "metadata": {"style": "deepObject", "explode": True},
        "items": {"style": "deepObject", "explode": True},
        "expand": {"style": "deepObject", "explode": True},
        "ids": {"style": "form", "explode": False},
        "shipping": {"explode": True},  # style defaults to form
    }
    body = _form(
        encoding,
        {
            "amount": 2000,
            "metadata": {"order_id": "6735"},
            "items": [{"price": "price_1"}, {"price": "price_2"}],
            "expand": ["customer"],
            "ids": [1, 2],
            "shipping": {"city": "Zürich"},
        },
    )
    assert body.split("&") == [
        "amount=2000",
        "metadata[order_id]=6735",
        "items[0][price]=price_1",
        "items[1][price]=price_2",
        "expand[]=customer",
        "ids=1,2",
        "city=Z%C3%BCrich",
    ]


def test_form_body_without_encoding_uses_content_types() -> None:
    # OpenAPI 3.1.2/3.2: objects as application/json, arrays as repeated names, scalars as text.
    body = _form({}, {"amount": 1, "metadata": {"k": "v"}, "ids": [1, 2], "items": [{"price": "p"}]})
    assert parse_qsl(body) == [
        ("amount", "1"),
        ("metadata", '{"k":"v"}'),
        ("items", '{"price":"p"}'),
        ("ids", "1"),
        ("ids", "2"),
    ]


def test_swagger2_collection_formats() -> None:
    def p(name: str, fmt: str, where: str = "query") -> dict[str, Any]:
        return {"name": name, "in": where, "type": "array", "items": {"type": "string"}, "collectionFormat": fmt}

    spec = {
        "swagger": "2.0",
        "info": {"title": "t", "version": "1"},
        "host": "api.example.test",
        "paths": {
            "/x/{path}": {
                "post": {
                    "operationId": "x",
                    "consumes": [FORM],
                    "parameters": [
                        p("path", "csv", "path"),
                        p("csv", "csv"),
                        p("ssv", "ssv"),
                        p("tsv", "tsv"),
                        p("pipes", "pipes"),
                        p("multi", "multi"),
                        p("H", "csv", "header"),
                        p("fmulti", "multi", "formData"),
                        p("fcsv", "csv", "formData"),
                    ],
                    "responses": {"200": {"description": "ok"}},
                }
            }
        },
    }
    doc = load_document(spec)
    tool = translate(doc).tools[0]
    v = ["a", "b"]
    req = RequestBuilder(tool.binding, "https://api.example.test").build(
        {"path": v, "csv": v, "ssv": v, "tsv": v, "pipes": v, "multi": v, "H": v, "fmulti": v, "fcsv": v}
    )
    assert req.path == "/x/a,b"
    assert req.url.partition("?")[2] == "csv=a,b&ssv=a%20b&tsv=a%09b&pipes=a%7Cb&multi=a&multi=b"
    assert req.headers == (("H", "a,b"),)
    assert req.body == b"fmulti=a&fmulti=b&fcsv=a,b"


def test_wire_names_are_known_when_the_builder_is_built() -> None:
    spec = spec_with(
        "/c",
        "get",
        {
            "operationId": "op",
            "parameters": [
                param("q", "query", {"type": "string"}),
                param("filter", "query", OBJECT, style="deepObject"),
                param("rgb", "query", {**OBJECT, "additionalProperties": False}),
                param("free", "query", {"type": "object", "additionalProperties": {"type": "string"}}),
                param("X-Id", "header", {"type": "string"}),
            ],
        },
    )
    names = builder(spec, "op").wire_names()
    assert names["q"] == WireNames(exact=frozenset({"q"}))
    assert names["filter"].prefixes == frozenset({"filter["}) and names["filter"].admits("filter[R]")
    assert names["rgb"] == WireNames(exact=frozenset({"rgb", "R", "G", "B"}))
    assert names["free"].open  # an exploded free-form object: its keys are names (issue 15 bounds these)
    assert names["X_Id"] == WireNames()
    form = builder(_form_spec({"metadata": {"style": "deepObject", "explode": True}}), "charge").wire_names()
    assert form["metadata"].prefixes == frozenset({"metadata["}) and form["amount"].exact == frozenset({"amount"})


def test_unserialisable_parameters_are_listed_not_dropped() -> None:
    spec = spec_with(
        "/c",
        "get",
        {
            "operationId": "op",
            "parameters": [
                param("a", "query", {"type": "string"}, style="matrix"),
                param("b", "query", {"type": "array", "items": {"type": "array", "items": {"type": "string"}}}),
                {"name": "c", "in": "querystring", "schema": {"type": "string"}},
            ],
        },
    )
    bound = binding(spec, "op")
    assert bound.arguments == ()
    assert [(o.name, o.reason, o.detail) for o in bound.omitted] == [
        ("c", "unsupported_parameter", "location 'querystring'"),
        ("a", "unsupported_parameter", "style 'matrix' is not defined for query parameters"),
        ("b", "unsupported_parameter", "nested values cannot be serialised with style 'form'"),
    ]


def test_exploded_keys_that_are_other_parameters_names_are_listed() -> None:
    """Cloudflare: an exploded pagination object with keys page/per_page next to a per_page parameter."""
    pagination = {"type": "object", "properties": {"page": {"type": "number"}, "per_page": {"type": "number"}}}
    spec = spec_with(
        "/rules",
        "get",
        {
            "operationId": "op",
            "parameters": [param("pagination", "query", pagination), param("per_page", "query", {"type": "number"})],
        },
    )
    bound = binding(spec, "op")
    assert [a.argument for a in bound.arguments] == ["per_page"]
    assert [(o.name, o.reason) for o in bound.omitted] == [("pagination", "unsupported_parameter")]
    assert "['per_page']" in bound.omitted[0].detail


def test_a_fixed_query_in_the_path_key_is_sent_as_query() -> None:
    """OpenAI writes ``/responses/{response_id}?beta=true``: every call failed with "dot segments"."""
    spec = spec_with(
        "/responses/{response_id}?beta=true",
        "get",
        {
            "operationId": "op",
            "parameters": [param("response_id", "path", {"type": "string"}), param("include", "query", ARRAY)],
        },
    )
    req = builder(spec, "op").build({"response_id": "r 1?", "include": ["a", "b"]})
    assert req.path == "/responses/r%201%3F"
    assert req.query == (("beta", "true"), ("include", "a"), ("include", "b"))
    assert req.url.endswith("/responses/r%201%3F?beta=true&include=a&include=b")
