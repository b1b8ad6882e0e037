"""Credentials for a spec without security schemes (issue 37): which operations get the declared
schemes, where the secret goes, and what is refused at start-up."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from scopegate.context import CallContext
from scopegate.errors import ConfigError
from scopegate.openapi.loader import load_document
from scopegate.openapi.runtime import DeclaredScheme, FromProvider, OperationToolset, ToolsetSettings
from scopegate.openapi.runtime.credentials import resolve_auth
from scopegate.openapi.runtime.declared_auth import add_declared_schemes


def spec(**extra: Any) -> dict[str, Any]:
    ok = {"200": {"description": "ok"}}
    return {
        "openapi": "3.0.3",
        "info": {"title": "t", "version": "1"},
        "paths": {
            "/a": {"get": {"operationId": "a", "responses": ok}},
            "/public": {"get": {"operationId": "public", "security": [], "responses": ok}},
            "/b": {"get": {"operationId": "b", "security": [{"vendorKey": []}], "responses": ok}},
        },
        **extra,
    }


def test_undeclared_operations_get_every_declared_scheme_and_public_ones_stay_public() -> None:
    doc = load_document(spec())
    add_declared_schemes(doc, {"k": DeclaredScheme.api_key(header="X-Key"), "t": DeclaredScheme.bearer()})
    ops = {i.operation_id: doc.operation(i) for i in doc.infos()}
    assert ops["a"].security == ({"k": (), "t": ()},)
    assert ops["public"].security == ()
    assert ops["b"].security == ({"vendorKey": ()},)  # names a scheme: not "declares none"
    parts = asyncio.run(
        resolve_auth(
            ops["a"].security,
            doc.security_schemes,
            {"k": FromProvider(lambda _c, _s: "key-123456"), "t": FromProvider(lambda _c, _s: "tok-123456")},
            CallContext(state={}),
        )
    )
    assert parts.headers == (("X-Key", "key-123456"), ("Authorization", "Bearer tok-123456"))


def test_a_declared_key_fills_a_scheme_the_spec_names_but_never_defines() -> None:
    doc = load_document(spec())
    add_declared_schemes(doc, {"vendorKey": DeclaredScheme.api_key(query="api_key")})
    op = next(doc.operation(i) for i in doc.infos() if i.operation_id == "b")
    assert op.security == ({"vendorKey": ()},)
    scheme = doc.security_schemes["vendorKey"]
    assert (scheme.type, scheme.location, scheme.name) == ("apiKey", "query", "api_key")


def test_what_is_refused_at_start_up() -> None:
    with pytest.raises(ConfigError, match="exactly one"):
        DeclaredScheme("api_key")
    with pytest.raises(ConfigError, match="Authorization"):
        DeclaredScheme("bearer", header="X-Key")
    with pytest.raises(ConfigError, match="cannot carry"):
        DeclaredScheme.api_key(header="Host")
    with pytest.raises(ConfigError, match="not a valid"):
        DeclaredScheme.api_key(header="X Key")
    defined = spec(components={"securitySchemes": {"vendorKey": {"type": "http", "scheme": "bearer"}}})
    with pytest.raises(ConfigError, match="already defined by the spec"):
        OperationToolset(
            ToolsetSettings(
                spec=defined,
                allow=("a",),
                base_url="http://127.0.0.1:9",
                security_schemes={"vendorKey": DeclaredScheme.bearer()},
            )
        )


def test_the_documented_key_parameter_is_not_an_argument() -> None:
    doc = spec()
    doc["paths"]["/a"]["get"]["parameters"] = [{"name": "X-Key", "in": "header", "schema": {"type": "string"}}]
    settings = ToolsetSettings(
        spec=doc,
        allow=("a",),
        base_url="http://127.0.0.1:9",
        security_schemes={"k": DeclaredScheme.api_key(header="X-Key")},
        credentials={"k": FromProvider(lambda _c, _s: "key-123456")},
    )
    toolset = OperationToolset(settings)
    assert toolset.tools[0].parameters_schema()["properties"] == {}
    asyncio.run(toolset.aclose())
