"""Edges of real specs (issue 37): defects D1-D4 and the documented decisions, each on a minimal spec.

The decisions are described in docs/openapi.md, "Decisions on real-spec edges".
"""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl

import pytest

from scopegate.cli import main
from scopegate.cli.core import ExitCode
from scopegate.openapi.contradict import MAX_NODES, contradictions
from scopegate.openapi.errors import TranslationError
from scopegate.openapi.inventory import inventory
from scopegate.openapi.loader import load_document
from scopegate.openapi.model import OmittedInput
from scopegate.openapi.runtime import OperationToolset, ToolsetSettings
from scopegate.openapi.runtime.request import ArgumentsInvalid, BuiltRequest, RequestBuilder
from scopegate.openapi.translate import ToolDeclaration, TranslateOptions, translate

BASE = "https://api.example.test/v1"
OK = {"200": {"description": "ok"}}


def oas3(paths: dict[str, Any], version: str = "3.0.3") -> dict[str, Any]:
    return {"openapi": version, "info": {"title": "t", "version": "1"}, "servers": [{"url": BASE}], "paths": paths}


def swagger(paths: dict[str, Any]) -> dict[str, Any]:
    return {"swagger": "2.0", "info": {"title": "t", "version": "1"}, "host": "api.example.test", "paths": paths}


def tools(spec: dict[str, Any], **opts: Any) -> dict[str, ToolDeclaration]:
    doc = load_document(spec)
    return {t.operation.key: t for t in translate(doc, None, TranslateOptions(**opts)).tools}


def built(tool: ToolDeclaration, args: dict[str, Any], base_url: str = BASE) -> BuiltRequest:
    return RequestBuilder(tool.binding, base_url).build(args)


def omissions(tool: ToolDeclaration, reason: str) -> list[OmittedInput]:
    return [o for o in tool.binding.omitted if o.reason == reason]


def write(tmp_path: Path, spec: dict[str, Any]) -> Path:
    path = tmp_path / "spec.json"
    path.write_text(json.dumps(spec))
    return path


def run(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    code = main(argv)
    out, err = capsys.readouterr()
    return code, out, err


# ------------------------------------------------------------ D1: fragments
COOKIE_VARIANTS = oas3(
    {
        "/cookies#formNonExploded": {
            "get": {
                "parameters": [
                    {"name": "id", "in": "cookie", "explode": False, "schema": {"type": "array", "items": {}}}
                ],
                "responses": OK,
            }
        },
        "/cookies#formExploded": {
            "get": {"parameters": [{"name": "id", "in": "cookie", "schema": {"type": "string"}}], "responses": OK}
        },
        "/items/{id}#v2": {
            "get": {
                "parameters": [{"name": "id", "in": "path", "required": True, "schema": {"type": "string"}}],
                "responses": OK,
            }
        },
    }
)


def test_d1_a_path_fragment_names_a_variant_and_is_not_sent() -> None:
    found = tools(COOKIE_VARIANTS)
    plain = found["GET /cookies#formNonExploded"]
    request = built(plain, {"id": [3, 4]})
    assert (request.method, request.path, request.query) == ("GET", "/cookies", ())
    assert ("Cookie", "id=3,4") in request.header_list()
    assert built(found["GET /cookies#formExploded"], {"id": "x"}).path == "/cookies"
    assert built(found["GET /items/{id}#v2"], {"id": "a#b"}).url == BASE + "/items/a%23b"


def test_d1_variant_tool_names_are_unique_and_stable() -> None:
    names = [t.name for t in tools(COOKIE_VARIANTS).values()]
    assert names == ["get_cookies_formNonExploded", "get_cookies_formExploded", "get_items_id_v2"]
    doc = load_document(COOKIE_VARIANTS)
    one = translate(doc, [doc.infos()[1]]).tools[0]
    assert one.name == "get_cookies_formExploded"  # independent of the selection
    toolset = OperationToolset(ToolsetSettings(spec=COOKIE_VARIANTS, allow=("GET /cookies#formExploded",)))
    assert [t.name for t in toolset.tools] == ["get_cookies_formExploded"]  # allowlisted by its whole key


# -------------------------------------------------------- D2: x- in Paths
EXTENDED = oas3(
    {
        "x-note": "value",
        "x-group": {"get": {"operationId": "notAnOperation", "responses": OK}},
        "/real": {"x-internal": True, "get": {"operationId": "real", "responses": {"200": OK["200"], "x-rate": 1}}},
    }
)


def test_d2_extension_keys_of_paths_are_not_paths() -> None:
    doc = load_document(EXTENDED)
    assert [i.key for i in doc.infos()] == ["GET /real"]
    assert doc.problems == []
    assert list(tools(EXTENDED)) == ["GET /real"]


def test_d2_declarations_strict_pass_on_a_valid_document(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = str(write(tmp_path, EXTENDED))
    code, out, err = run(["openapi", "declarations", path, "--allow", "real", "--strict"], capsys)
    assert code == ExitCode.OK, err
    assert [t["operation"] for t in json.loads(out)["tools"]] == ["real"]
    code, out, _ = run(["openapi", "inventory", path, "--strict"], capsys)
    assert code == ExitCode.OK and "problem" not in out and "x-group" not in out


# ------------------------------------------- D3: Swagger 2.0 collectionFormat
def _array(name: str, where: str, fmt: str) -> dict[str, Any]:
    return {
        "name": name,
        "in": where,
        "required": where == "path",
        "type": "array",
        "items": {"type": "integer"},
        "collectionFormat": fmt,
    }


COLLECTIONS = swagger(
    {
        f"/{fmt}/{{ids}}": {
            "get": {
                "operationId": fmt,
                "parameters": [_array("ids", "path", fmt), _array("X-Ids", "header", fmt)],
                "responses": OK,
            }
        }
        for fmt in ("ssv", "tsv", "pipes", "csv")
    }
)


@pytest.mark.parametrize(
    ("fmt", "path", "header"),
    [
        ("ssv", "/ssv/1%202", "1 2"),
        ("tsv", "/tsv/1%092", "1\t2"),
        ("pipes", "/pipes/1%7C2", "1|2"),
        ("csv", "/csv/1,2", "1,2"),
    ],
)
def test_d3_collection_formats_on_path_and_header(fmt: str, path: str, header: str) -> None:
    tool = tools(COLLECTIONS)[f"GET /{fmt}/{{ids}}"]
    assert not [o for o in tool.binding.omitted if o.lost]
    request = built(tool, {"ids": [1, 2], "X_Ids": [1, 2]}, "https://api.example.test")
    assert request.path == path
    assert ("X-Ids", header) in request.headers


def test_d3_a_delimited_string_may_not_hold_its_delimiter() -> None:
    tags = {"name": "tags", "in": "path", "required": True, "type": "array", "items": {"type": "string"}}
    spec = swagger({"/p/{tags}": {"get": {"parameters": [{**tags, "collectionFormat": "pipes"}], "responses": OK}}})
    tool = tools(spec)["GET /p/{tags}"]
    assert built(tool, {"tags": ["a b", "c"]}, "https://api.example.test").path == "/p/a%20b%7Cc"
    with pytest.raises(ArgumentsInvalid) as caught:
        built(tool, {"tags": ["a|b"]}, "https://api.example.test")
    assert caught.value.problems[0]["field"] == "tags"


# ----------------------------------------- D4: inventory JSON and problems
def test_d4_inventory_json_carries_document_problems(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    spec = oas3({"/gone": {"$ref": "missing.yaml"}, "/ok": {"get": {"operationId": "ok", "responses": OK}}})
    path = str(write(tmp_path, spec))
    code, table, _ = run(["openapi", "inventory", path, "--allow-external-refs"], capsys)
    assert code == ExitCode.OK
    (problem,) = [line.removeprefix("problem: ") for line in table.splitlines() if line.startswith("problem: ")]
    assert "missing.yaml" in problem
    code, out, _ = run(["openapi", "inventory", path, "--allow-external-refs", "--format", "json"], capsys)
    printed = json.loads(out)
    assert code == ExitCode.OK and printed["problems"] == [problem]
    assert [r["operation_id"] for r in printed["operations"]] == ["ok"]
    code, _, _ = run(["openapi", "inventory", path, "--allow-external-refs", "--format", "json", "--strict"], capsys)
    assert code == ExitCode.USAGE


# -------------------------------------------- decision: overlapping oneOf
PET = {"type": "object", "properties": {"id": {"type": "string"}}, "required": ["id"]}
NAMED_PET = {"type": "object", "properties": {"id": {"type": "string"}, "name": {"type": "string"}}}


def _body_tool(schema: dict[str, Any], method: str = "post", version: str = "3.0.3") -> ToolDeclaration:
    op = {"operationId": "op", "requestBody": {"required": True, "content": {"application/json": {"schema": schema}}}}
    return tools(oas3({"/x": {method: {**op, "responses": OK}}}, version))[f"{method.upper()} /x"]


def test_overlapping_one_of_accepts_a_value_any_branch_matches() -> None:
    tool = _body_tool({"oneOf": [PET, NAMED_PET]})
    request = built(tool, {"id": "p1"})  # fits both branches: strict oneOf refused it
    assert json.loads(request.body or b"") == {"id": "p1"}
    assert json.loads(built(tool, {"id": "p1", "name": "Rex"}).body or b"") == {"id": "p1", "name": "Rex"}
    with pytest.raises(ArgumentsInvalid):
        built(tool, {"id": 5})  # fits no branch: refused


def test_one_of_bare_required_lists_still_means_exactly_one() -> None:
    props = {"email": {"type": "string"}, "phone": {"type": "string"}}
    exactly_one = [{"required": ["email"]}, {"required": ["phone"]}]
    tool = _body_tool({"type": "object", "properties": props, "oneOf": exactly_one})
    assert built(tool, {"email": "a@b.test"}).body
    with pytest.raises(ArgumentsInvalid):
        built(tool, {"email": "a@b.test", "phone": "1"})


# ------------------------------------------- decision: bodies on GET/DELETE
def test_delete_and_get_request_bodies_are_declared_and_sent() -> None:
    form = {"type": "object", "properties": {"invoice_now": {"type": "boolean"}, "reason": {"type": "string"}}}
    delete = {
        "operationId": "cancel",
        "requestBody": {"content": {"application/x-www-form-urlencoded": {"schema": form}}},
        "responses": OK,
    }
    get = {
        "operationId": "search",
        "requestBody": {"content": {"application/json": {"schema": {"type": "object", "properties": {"q": {}}}}}},
        "responses": OK,
    }
    found = tools(oas3({"/subs": {"delete": delete}, "/search": {"get": get}}, "3.0.3"))
    cancel = found["DELETE /subs"]
    assert set(cancel.parameters["properties"]) == {"invoice_now", "reason"}
    request = built(cancel, {"invoice_now": True, "reason": "moved"})
    assert request.method == "DELETE" and request.content_type == "application/x-www-form-urlencoded"
    assert parse_qsl((request.body or b"").decode()) == [("invoice_now", "true"), ("reason", "moved")]
    assert built(cancel, {}).body is None  # nothing given, nothing required: no body
    assert json.loads(built(found["GET /search"], {"q": "x"}).body or b"") == {"q": "x"}


# ----------------------------------------------- decision: duplicates
def test_duplicate_parameters_are_reported_last_wins() -> None:
    params = [
        {"name": "limit", "in": "query", "schema": {"type": "string"}},
        {"name": "limit", "in": "query", "schema": {"type": "integer"}},
        {"name": "limit", "in": "header", "schema": {"type": "integer"}},
    ]
    spec = oas3({"/x": {"get": {"operationId": "list", "parameters": params, "responses": OK}}})
    tool = tools(spec)["GET /x"]
    (dup,) = omissions(tool, "duplicate_parameter")
    assert (dup.location, dup.name, dup.lost) == ("query", "limit", True)
    assert "operation's parameters define query 'limit' more than once" in dup.detail
    assert tool.parameters["properties"]["limit"]["type"] == "integer"
    assert set(tool.parameters["properties"]) == {"limit", "header_limit"}
    with pytest.raises(TranslationError, match=r"list.*duplicate_parameter"):
        tools(spec, strict=True)
    row = inventory(load_document(spec)).rows[0]
    assert row.translatable and [o.reason for o in row.lost] == ["duplicate_parameter"]


def test_path_item_parameters_overridden_by_the_operation_are_not_duplicates() -> None:
    limit = {"name": "limit", "in": "query", "schema": {"type": "string"}}
    spec = oas3({"/x": {"parameters": [limit], "get": {"parameters": [limit], "responses": OK}}})
    assert not omissions(tools(spec, strict=True)["GET /x"], "duplicate_parameter")


def test_swagger2_duplicate_parameters_are_reported() -> None:
    page = {"name": "page", "in": "query", "type": "integer"}
    tool = tools(swagger({"/x": {"get": {"parameters": [page, page], "responses": OK}}}))["GET /x"]
    assert [(o.location, o.name) for o in omissions(tool, "duplicate_parameter")] == [("query", "page")]


# ------------------------------------------- decision: contradictory body
FIREWALL = {
    "type": "object",
    "required": ["id", "mode"],
    "additionalProperties": False,
    "properties": {
        "mode": {"type": "string"},
        "target": {"type": "object", "required": ["kind"], "additionalProperties": False, "properties": {}},
    },
}


def test_a_required_property_forbidden_by_additional_properties_is_reported_and_not_enforced() -> None:
    tool = _body_tool(FIREWALL)
    found = omissions(tool, "contradictory_schema")
    assert [(o.location, o.name, o.required, o.lost) for o in found] == [
        ("body_property", "id", True, True),
        ("body_property", "target.kind", True, True),
    ]
    assert "additionalProperties: false forbids it" in found[0].detail
    assert json.loads(built(tool, {"mode": "block"}).body or b"") == {"mode": "block"}  # no call could pass before
    with pytest.raises(ArgumentsInvalid):
        built(tool, {"mode": "block", "id": "r1"})  # still forbidden: the API's own schema says so
    post = {"requestBody": {"content": {"application/json": {"schema": FIREWALL}}}, "responses": OK}
    with pytest.raises(TranslationError, match="contradictory_schema"):
        tools(oas3({"/x": {"post": post}}), strict=True)


def test_a_property_declared_in_an_all_of_part_is_not_a_contradiction() -> None:
    schema = {
        "allOf": [{"type": "object", "properties": {"id": {"type": "string"}}}],
        "required": ["id"],
        "additionalProperties": False,
        "patternProperties": {},
    }
    assert not omissions(_body_tool(schema), "contradictory_schema")


# ---------------------------------------------------- decision: base_url
def test_base_url_is_the_whole_base_url_and_a_dropped_server_path_is_warned(
    caplog: pytest.LogCaptureFixture,
) -> None:
    spec = oas3({"/orders": {"get": {"operationId": "list", "responses": OK}}})
    with caplog.at_level(logging.WARNING, logger="scopegate.openapi"):
        with_path = OperationToolset(ToolsetSettings(spec=spec, allow=("list",), base_url="http://127.0.0.1:9/v2"))
    assert with_path.tool("list").builder.build({}).url == "http://127.0.0.1:9/v2/orders"
    assert not caplog.records
    with caplog.at_level(logging.WARNING, logger="scopegate.openapi"):
        origin_only = OperationToolset(ToolsetSettings(spec=spec, allow=("list",), base_url="http://127.0.0.1:9"))
    assert origin_only.tool("list").builder.build({}).url == "http://127.0.0.1:9/orders"
    (record,) = caplog.records
    assert "replaces the spec's server URL https://api.example.test/v1, path included" in record.getMessage()
    assert "not under /v1" in record.getMessage()


def test_the_contradiction_walk_is_bounded_on_a_wide_deep_body() -> None:
    level: dict[str, Any] = {"type": "object", "required": ["x"], "additionalProperties": False, "properties": {}}
    for _ in range(4):  # 60^4 objects if walked in full
        level = {"type": "object", "properties": {f"p{i}": level for i in range(60)}}
    found = contradictions(level, None)
    assert 0 < len(found) <= MAX_NODES and found[0] == "p0.p0.p0.p0.x"
