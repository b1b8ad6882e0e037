"""Hand-written tools and the aggregation tool from a config file: the same tools the Python API builds."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from scopegate.backends.embedded import EmbeddedBackend
from scopegate.config import ConfigValidationError, build_app, declarations, load_config
from scopegate.context import CallContext
from scopegate.demo.corpus import generate_tickets, ticket_spec
from scopegate.demo.orders_demo import orders_settings
from scopegate.errors import ConfigError
from scopegate.examples.orders import SPEC_PATH
from scopegate.examples.orders.tools import cancel_order
from scopegate.openapi.runtime import OperationToolset
from scopegate.search.agg_tool import AggregateTool
from scopegate.search.aggregation import AggregationSpec
from scopegate.search.spec import spec_to_dict

ORDERS = {
    "name": "orders",
    "spec": str(SPEC_PATH),
    "base_url": "http://127.0.0.1:9",
    "allow": ["listOrders", "getOrder", "updateShippingAddress", "cancelOrder"],
    "credentials": {"staffKey": {"env": "ORDERS_KEY"}},
    "policies": {
        "listOrders": {"bind": {"customer_id": "user_id"}, "projection": ["orders.id", "orders.status", "total"]},
        "getOrder": {"ownership": "response.customer_id == state.user_id"},
        "updateShippingAddress": {"ownership": "getOrder(orderId=orderId).customer_id == state.user_id"},
        "cancelOrder": {"ownership": "getOrder(orderId=orderId).customer_id == state.user_id"},
    },
}
CANCEL = {
    "function": "scopegate.examples.orders.tools:cancel_order",
    "uses": ["getOrder", "cancelOrder"],
    "hide": ["cancelOrder"],
}
SCOPE = {"state_keys": {"tenant": "user_id", "user": "user_id"}}


def search_entry(**extra: Any) -> dict[str, Any]:
    data = spec_to_dict(ticket_spec())
    data.pop("scope_keys")
    return {"backend": "local", **{k: v for k, v in data.items() if v is not None}, **extra}


@pytest.fixture(autouse=True)
def _orders_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ORDERS_KEY", "service-key-123")


@pytest.fixture
def write(tmp_path: Path) -> Callable[..., Path]:
    def make(**sections: Any) -> Path:
        path = tmp_path / "scopegate.yaml"
        path.write_text(yaml.safe_dump({"version": 1, **sections}, sort_keys=False), "utf-8")
        return path

    return make


async def test_a_workflow_tool_from_the_config_is_the_python_one(write: Callable[..., Path]) -> None:
    config = load_config(write(openapi=[ORDERS], app_tools=[CANCEL], scope=SCOPE), environ={})
    app = await build_app(config, offline=True, guard=None)
    toolset = OperationToolset(orders_settings("http://127.0.0.1:9"))
    try:
        assert app.names() == ["listOrders", "getOrder", "updateShippingAddress", "cancel_order"]
        python = cancel_order.bind(tools=toolset.tools, scope_keys=toolset.settings.scope_keys)
        assert declarations([app.tool("cancel_order")]) == declarations([python])
        served = app.tool("cancel_order")
        assert sorted(served.siblings) == ["cancelOrder", "getOrder"]  # type: ignore[attr-defined]
    finally:
        await app.aclose()
        await toolset.aclose()


async def test_an_app_tool_gets_the_config_scope_and_credential(
    write: Callable[..., Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.syspath_prepend(str(Path(__file__).parent))
    entry = {"function": "config_apptools_module:whoami", "name": "me", "credential": {"state_key": "user_token"}}
    scope = {"state_keys": {"tenant": "org", "user": "uid"}}
    app = await build_app(load_config(write(app_tools=[entry], scope=scope), environ={}), guard=None)
    try:
        tool = app.tool("me")
        out = await tool.run({}, CallContext(state={"org": "acme", "uid": "alice", "user_token": "tok-123456"}))
        assert out.result["untrusted"]["data"] == {"tenant": "acme", "user": "alice", "credential": True}
        assert (await tool.run({}, CallContext(state={"org": "acme"}))).result["error_code"] == "NOT_AUTHORIZED"
    finally:
        await app.aclose()


@pytest.mark.parametrize(
    ("entry", "message"),
    [
        ({"function": "scopegate.nowhere:tool"}, "cannot import 'scopegate.nowhere'"),
        ({"function": "scopegate.examples.orders.tools:missing"}, "has no attribute 'missing'"),
        ({"function": "scopegate.examples.orders.tools:app_tool"}, "is not an app tool"),
        ({"function": "scopegate.examples.orders.tools:cancel_order", "uses": ["getOrders"]}, "no tool named"),
        ({"function": "scopegate.examples.orders.tools:cancel_order", "name": "getOrder"}, "two tools are named"),
        (
            {"function": "scopegate.examples.orders.tools:cancel_order", "credential": {"env": "NOPE_UNSET"}},
            "NOPE_UNSET is not set",
        ),
    ],
)
async def test_app_tools_that_cannot_be_built_are_named(
    write: Callable[..., Path], entry: dict[str, Any], message: str
) -> None:
    config = load_config(write(openapi=[ORDERS], app_tools=[entry], scope=SCOPE), environ={})
    with pytest.raises(ConfigError, match=message):
        await build_app(config, offline=True, guard=None)


def test_hide_lists_only_used_tools_and_app_tools_alone_are_a_config(write: Callable[..., Path]) -> None:
    bad = {**CANCEL, "hide": ["listOrders"]}
    with pytest.raises(ConfigValidationError, match=r"app_tools\[0\]\.hide"):
        load_config(write(openapi=[ORDERS], app_tools=[bad]), environ={})
    assert load_config(write(app_tools=[{"function": "m:f"}]), environ={}).app_tools[0].function == "m:f"
    with pytest.raises(ConfigValidationError, match="function"):
        load_config(write(app_tools=[{"function": "not a target"}]), environ={})


async def test_the_aggregation_tool_from_the_config_is_the_python_one(
    write: Callable[..., Path], tmp_path: Path
) -> None:
    data = tmp_path / "data"
    backend = EmbeddedBackend(ticket_spec(), data / "tickets")
    backend.ingest_sync(generate_tickets(per_tenant=40), batch_size=500)
    path = write(
        backends={"local": {"type": "embedded", "path": str(data)}},
        search_tools=[search_entry(aggregate={"max_buckets": 10, "intervals": ["week", "month"]})],
    )
    app = await build_app(load_config(path, environ={}), guard=None)
    python = AggregateTool(backend.spec, backend, AggregationSpec(max_buckets=10, intervals=("week", "month")))
    try:
        assert app.names() == ["search_tickets", "get_ticket", "count_tickets"]
        assert declarations([app.tool("count_tickets")]) == declarations([python])
        ctx = CallContext(state={"tenant_id": "acme"})
        for args in (
            {"group_by": "status"},
            {"group_by": "product", "status": "open"},
            {"group_by": "created_at", "interval": "month", "since": "2025-01-01", "until": "2025-06-30"},
            {"group_by": "created_at", "interval": "day", "last_days": 3},
        ):
            assert (await app.tool("count_tickets").run(args, ctx)).result == (await python.run(args, ctx)).result
    finally:
        await app.aclose()
        await backend.close()


def test_a_clashing_aggregation_name_is_a_config_problem(write: Callable[..., Path]) -> None:
    path = write(
        backends={"local": {"type": "embedded", "path": "./data"}},
        search_tools=[search_entry(aggregate={"name": "get_ticket"})],
    )
    with pytest.raises(ConfigValidationError, match="already used"):
        load_config(path, environ={})
