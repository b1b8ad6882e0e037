"""Edges of real specs (issue 37) over real HTTP: what arrives at a loopback catch-all service.

A fragment-variant path, Swagger 2.0 delimited path/header arrays, a DELETE with a form body, an
overlapping ``oneOf`` and a self-contradicting body: each tool is callable, and the bytes that
arrive are the ones the decisions in docs/openapi.md promise.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any
from urllib.parse import parse_qsl

import pytest

from scopegate.context import CallContext
from scopegate.examples.orders.server import RunningService
from scopegate.openapi.runtime import OperationToolset, ToolsetSettings

OK = {"200": {"description": "ok"}}
CTX = CallContext(state={"user_id": "u1"}, confirmed=True)
PET = {"type": "object", "properties": {"id": {"type": "string"}}, "required": ["id"]}
NAMED_PET = {"type": "object", "properties": {"id": {"type": "string"}, "name": {"type": "string"}}}
RULE = {"type": "object", "required": ["id", "mode"], "additionalProperties": False, "properties": {"mode": {}}}


def _json_body(schema: dict[str, Any]) -> dict[str, Any]:
    return {"required": True, "content": {"application/json": {"schema": schema}}}


def _array(name: str, where: str, items: str, fmt: str) -> dict[str, Any]:
    kind = {"type": "array", "items": {"type": items}, "collectionFormat": fmt}
    return {"name": name, "in": where, "required": where == "path", **kind}


OAS3 = {
    "openapi": "3.0.3",
    "info": {"title": "edges", "version": "1"},
    "servers": [{"url": "https://api.example.test"}],
    "paths": {
        "x-note": "an extension, not a path",
        "/cookies#formNonExploded": {
            "get": {
                "operationId": "cookiesPlain",
                "parameters": [{"name": "id", "in": "cookie", "explode": False, "schema": {"type": "array"}}],
                "responses": OK,
            }
        },
        "/subs": {
            "delete": {
                "operationId": "cancelSub",
                "requestBody": {
                    "content": {
                        "application/x-www-form-urlencoded": {
                            "schema": {"type": "object", "properties": {"invoice_now": {"type": "boolean"}}}
                        }
                    }
                },
                "responses": OK,
            }
        },
        "/pets": {
            "post": {"operationId": "addPet", "requestBody": _json_body({"oneOf": [PET, NAMED_PET]}), "responses": OK}
        },
        "/rules": {"post": {"operationId": "addRule", "requestBody": _json_body(RULE), "responses": OK}},
    },
}
SWAGGER = {
    "swagger": "2.0",
    "info": {"title": "edges", "version": "1"},
    "host": "api.example.test",
    "paths": {
        "/ssv/{ids}": {
            "get": {
                "operationId": "ssv",
                "parameters": [
                    _array("ids", "path", "integer", "ssv"),
                    _array("X-Tags", "header", "string", "pipes"),
                    _array("X-Tabs", "header", "string", "tsv"),
                ],
                "responses": OK,
            }
        }
    },
}


@pytest.fixture
async def edges(attacker: RunningService) -> AsyncIterator[tuple[OperationToolset, OperationToolset]]:
    allow = ("cookiesPlain", "cancelSub", "addPet", "addRule")
    oas3 = OperationToolset(ToolsetSettings(spec=OAS3, allow=allow, base_url=attacker.base_url))
    swagger = OperationToolset(ToolsetSettings(spec=SWAGGER, allow=("ssv",), base_url=attacker.base_url))
    yield oas3, swagger
    await oas3.aclose()
    await swagger.aclose()


async def test_what_arrives(edges: tuple[OperationToolset, OperationToolset], attacker: RunningService) -> None:
    oas3, swagger = edges
    calls = [
        (oas3, "cookiesPlain", {"id": [3, 4]}),
        (swagger, "ssv", {"ids": [1, 2], "X_Tags": ["a", "b"], "X_Tabs": ["c", "d"]}),
        (oas3, "cancelSub", {"invoice_now": True}),
        (oas3, "addPet", {"id": "p1"}),
        (oas3, "addRule", {"mode": "block"}),
    ]
    for toolset, name, args in calls:
        result = (await toolset.tool(name).run(args, CTX)).result
        assert result["status"] == "ok", (name, result)
    cookies, ssv, cancel, pet, rule = attacker.state.recorded()
    assert (cookies.method, cookies.raw_path, cookies.headers["cookie"]) == ("GET", "/cookies", "id=3,4")
    assert (ssv.raw_path, ssv.headers["x-tags"], ssv.headers["x-tabs"]) == ("/ssv/1%202", "a|b", "c\td")
    assert (cancel.method, cancel.raw_path) == ("DELETE", "/subs")
    assert cancel.headers["content-type"] == "application/x-www-form-urlencoded"
    assert parse_qsl(cancel.body.decode()) == [("invoice_now", "true")]
    assert json.loads(pet.body) == {"id": "p1"}
    assert json.loads(rule.body) == {"mode": "block"}
    refused = (await oas3.tool("addPet").run({"id": 7}, CTX)).result
    assert refused["error_code"] == "BAD_ARGUMENTS"
    assert len(attacker.state.recorded()) == 5
