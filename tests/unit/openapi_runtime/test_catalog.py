"""Catalog mode, pure parts: ranking, what a caller may find, describe and call, and the config path.

No request reaches a service here: the base URL is a closed port and every call below stops
before sending (confirmation, validation, an unknown or forbidden name).
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import pytest
import yaml

from scopegate.config import build_app, load_config
from scopegate.config.loader import ConfigValidationError
from scopegate.context import CallContext
from scopegate.demo.orders_demo import orders_settings
from scopegate.errors import ConfigError
from scopegate.examples.orders import SPEC_PATH
from scopegate.examples.orders.data import ALICE
from scopegate.identity.scopes import ToolScopes
from scopegate.openapi.errors import MissingOperationsError
from scopegate.openapi.runtime import OperationToolset, ToolsetSettings
from scopegate.openapi.runtime.catalog import OperationCatalog
from scopegate.openapi.runtime.catalog_index import CatalogIndex, IndexedOperation, words

BASE_URL = "http://127.0.0.1:9"
STATE = {"user_id": ALICE}


@pytest.fixture
async def catalog() -> Any:
    settings = dataclasses.replace(orders_settings(BASE_URL), include=("tag:customers", "tag:reports"))
    toolset = OperationToolset(settings)
    try:
        yield OperationCatalog.of(list(toolset.tools))
    finally:
        await toolset.aclose()


def ctx(**extra: Any) -> CallContext:
    return CallContext(state=STATE, **extra)


def only(*allowed: str) -> Any:
    return lambda name, _family, _read_only: name in allowed


async def run(tool: Any, args: dict[str, Any], **extra: Any) -> dict[str, Any]:
    return dict((await tool.run(args, ctx(**extra))).result)


# -- ranking -------------------------------------------------------------------------------------
def test_words_split_camel_and_snake_case() -> None:
    assert words("listOrders by customer_id, HTTPStatus") == [
        "list",
        "orders",
        "by",
        "customer",
        "id",
        "http",
        "status",
    ]


def test_bm25_ranks_by_field_weight_and_stems() -> None:
    index = CatalogIndex(
        [
            IndexedOperation("listOrders", "List orders", "Every order of the customer.", ("orders",), ("status",)),
            IndexedOperation("createRefund", "Refund a charge", "Creates a refund.", ("refunds",), ("charge_id",)),
            IndexedOperation("getCharge", "Get a charge", "Mentions refunds once.", ("charges",), ("charge_id",)),
        ]
    )
    ranked = [position for position, _ in index.search("refunding charges")]
    assert ranked[0] == 1  # name and summary beat a mention in a description
    assert set(ranked) == {1, 2}
    assert index.search("nothing matches zzz") == []
    assert [p for p, _ in index.search("refund", among=[2])] == [2]


def test_query_language_never_reaches_the_engine() -> None:
    index = CatalogIndex([IndexedOperation("getOrder", "Get one order")])
    for hostile in ('name:getOrder AND "x', "-order +(*", "tag:orders OR NOT", "\\u0000 ) ] }", "a" * 5000):
        index.search(hostile)  # never a syntax error
    assert CatalogIndex.query_words("GET ORDER AND tag:x") == ["get", "order", "and", "tag", "x"]


# -- find ------------------------------------------------------------------------------------------
async def test_find_returns_name_summary_and_whether_it_changes_state(catalog: OperationCatalog) -> None:
    result = await run(catalog.find, {"query": "cancel my order"})
    assert result["status"] == "ok"
    first = result["operations"][0]
    assert first == {"name": "cancelOrder", "summary": "Cancel an order", "changes_state": True}
    assert len(result["operations"]) <= catalog.max_results
    names = {o["name"] for o in (await run(catalog.find, {"query": "sales summary report"}))["operations"]}
    assert "getSalesSummary" in names  # selected by the tag:reports rule


async def test_find_by_tag_and_bad_arguments(catalog: OperationCatalog) -> None:
    tagged = await run(catalog.find, {"query": "order profile summary", "tag": "customers"})
    assert [o["name"] for o in tagged["operations"]] == ["getMe"]
    upper = await run(catalog.find, {"query": "order profile summary", "tag": "CUSTOMERS"})
    assert [o["name"] for o in upper["operations"]] == ["getMe"]  # a tag matches case-insensitively
    bad = await run(catalog.find, {"query": "x", "tag": "nope"})
    assert bad["error_code"] == "BAD_ARGUMENTS" and "customers" in bad["allowed"]
    for args in ({}, {"query": " "}, {"query": 3}, {"query": "x" * 301}, {"query": "x", "page": 2}):
        assert (await run(catalog.find, args))["error_code"] == "BAD_ARGUMENTS"
    assert catalog.find.parameters_schema()["properties"]["tag"]["enum"] == ["customers", "orders", "reports"]


async def test_an_untagged_catalog_declares_no_tag_parameter() -> None:
    # Chargebee's spec has no tags: a 0.5B model put a subscription id in `tag` and got "unknown tag".
    spec = {
        "openapi": "3.0.3",
        "info": {"title": "t", "version": "1"},
        "paths": {"/things/{id}": {"get": {"operationId": "getThing", "summary": "Get a thing",
                                           "parameters": [{"name": "id", "in": "path", "required": True,
                                                           "schema": {"type": "string"}}],
                                           "responses": {"200": {"description": "ok"}}}}},
    }  # fmt: skip
    toolset = OperationToolset(ToolsetSettings(spec=spec, allow=("getThing",), base_url=BASE_URL))
    try:
        catalog = OperationCatalog.of(list(toolset.tools))
        schema = catalog.find.parameters_schema()
        assert list(schema["properties"]) == ["query"]
        assert [o["name"] for o in (await run(catalog.find, {"query": "thing"}))["operations"]] == ["getThing"]
    finally:
        await toolset.aclose()


async def test_operations_outside_the_allowlist_are_not_in_the_catalog(catalog: OperationCatalog) -> None:
    found = await run(catalog.find, {"query": "delivery note attach redirect slow flaky huge"})
    assert not {"addOrderNote", "getSlow", "getHuge", "openRedirect"} & {o["name"] for o in found["operations"]}
    for name in ("addOrderNote", "getSlow", "nonexistent"):
        missing = await run(catalog.describe, {"name": name})
        called = await run(catalog.call, {"name": name, "arguments": {}})
        assert missing["error_code"] == called["error_code"] == "NOT_FOUND"


async def test_a_forbidden_operation_answers_like_a_name_that_does_not_exist(catalog: OperationCatalog) -> None:
    may_use = only("getOrder", "listOrders")
    found = await run(catalog.find, {"query": "cancel order"}, may_use=may_use)
    assert {o["name"] for o in found["operations"]} <= {"getOrder", "listOrders"}
    forbidden = await run(catalog.describe, {"name": "cancelOrder"}, may_use=may_use)
    absent = await run(catalog.describe, {"name": "cancelOrdr"}, may_use=may_use)
    assert forbidden["error_code"] == absent["error_code"] == "NOT_FOUND"
    assert forbidden["message"].replace("cancelOrder", "X") == absent["message"].replace("cancelOrdr", "X")
    called = await run(catalog.call, {"name": "cancelOrder", "arguments": {"orderId": "ord_1001"}}, may_use=may_use)
    assert called == forbidden  # nothing ran: not even the operation's own envelope (it carries a request_id)


# -- describe and call -----------------------------------------------------------------------------
async def test_describe_is_the_flat_declaration(catalog: OperationCatalog) -> None:
    for entry in catalog.entries:
        described = await run(catalog.describe, {"name": entry.tool.name})
        tool = entry.tool
        assert described["declaration"] == {
            "name": tool.name,
            "description": tool.description,
            "parameters": tool.parameters_schema(),
        }
        assert described["changes_state"] is (not tool.read_only)
    listed = (await run(catalog.describe, {"name": "listOrders"}))["declaration"]
    assert "customer_id" not in listed["parameters"]["properties"]  # bound from the session, as in flat mode


async def test_call_runs_the_operation_tool_with_its_own_checks(catalog: OperationCatalog) -> None:
    asked = await run(
        catalog.call, {"name": "cancelOrder", "arguments": {"orderId": "ord_1001", "reason": "changed_mind"}}
    )
    assert asked["error_code"] == "CONFIRMATION_REQUIRED"  # the operation's own confirmation, nothing sent
    assert asked["confirmation"]["payload"]["tool"] == "cancelOrder"
    invalid = await run(catalog.call, {"name": "getOrder", "arguments": {"orderId": 12}})
    assert invalid["error_code"] == "BAD_ARGUMENTS"  # the operation's schema
    smuggled = await run(catalog.call, {"name": "listOrders", "arguments": {"customer_id": "bob"}})
    assert smuggled["error_code"] == "BAD_ARGUMENTS"
    assert (await run(catalog.call, {"name": "getOrder", "arguments": "x"}))["error_code"] == "BAD_ARGUMENTS"
    no_scope = dict((await catalog.call.run({"name": "listOrders"}, CallContext(state={}))).result)
    assert no_scope["error_code"] == "NO_SCOPE"
    outcome = await catalog.call.run({"name": "getOrder", "arguments": {"orderId": 12}}, ctx())
    assert outcome.log["operation"] == "getOrder"


def test_call_operation_asks_for_confirmation_when_any_operation_does(catalog: OperationCatalog) -> None:
    assert catalog.call.requires_confirmation is True and catalog.call.read_only is False
    assert catalog.find.read_only and catalog.describe.read_only
    assert {t.family for t in catalog.tools} == {"catalog"}


def test_catalog_tools_need_only_the_required_scopes() -> None:
    rules = ToolScopes.of(required=["orders"], read=["orders:read"], write=["orders:write"])
    assert rules.needed("call_operation", "catalog", False) == {"orders"}
    may_use = rules.checker(["orders", "orders:read"])
    assert may_use("getOrder", "openapi", True) and not may_use("cancelOrder", "openapi", False)


# -- config ----------------------------------------------------------------------------------------
def write(tmp_path: Path, entry: dict[str, Any], **top: Any) -> Path:
    path = tmp_path / "scopegate.yaml"
    path.write_text(yaml.safe_dump({"version": 1, "openapi": [entry], **top}), "utf-8")
    return path


def catalog_entry(**extra: Any) -> dict[str, Any]:
    entry: dict[str, Any] = {
        "name": "orders",
        "spec": str(SPEC_PATH),
        "base_url": BASE_URL,
        "mode": "catalog",
        "allow": ["cancelOrder"],
        "include": ["tag:orders"],
        "exclude": ["/orders/*/legacy"],
        "policies": {"cancelOrder": {"ownership": "getOrder(orderId=orderId).customer_id == state.user_id"}},
        "catalog": {"max_results": 3},
    }
    entry.update(extra)
    return entry


async def test_config_catalog_mode_serves_three_tools(tmp_path: Path) -> None:
    app = await build_app(load_config(write(tmp_path, catalog_entry()), environ={}))
    try:
        assert app.names() == ["find_operations", "describe_operation", "call_operation"]
        call = app.tool("call_operation")
        catalog = call.inner.catalog  # type: ignore[attr-defined]
        assert sorted(catalog.by_name) == ["cancelOrder", "getOrder", "listOrders"]  # reads by rule, the write named
        assert all(type(e.tool).__name__ == "GuardedTool" for e in catalog.entries)  # each under the guard
        found = await app.tool("find_operations").run({"query": "order"}, ctx())
        assert len(found.result["operations"]) == 3
    finally:
        await app.aclose()


def test_config_fails_loudly_on_a_missing_named_operation(tmp_path: Path) -> None:
    with pytest.raises(MissingOperationsError, match="cancelOrdr"):
        OperationToolset(dataclasses.replace(orders_settings(BASE_URL), allow=("cancelOrdr",), policies={}))


async def test_config_missing_operation_and_empty_selection(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="cancelOrdr"):
        await build_app(load_config(write(tmp_path, catalog_entry(allow=["cancelOrdr"], policies={})), environ={}))
    with pytest.raises(ConfigValidationError, match="allow"):
        load_config(write(tmp_path, catalog_entry(allow=[], include=[])), environ={})
    with pytest.raises(ConfigValidationError):
        load_config(write(tmp_path, catalog_entry(mode="menu")), environ={})
