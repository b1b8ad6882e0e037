"""OpenAPI tools over MCP against the real orders service: reads, confirmed changes, refusals.

The MCP server (a ``scopegate serve`` subprocess) calls the example orders API
on 127.0.0.1 with a service key from its environment. State-changing calls
are confirmed through MCP elicitation in both protocol eras; a client without
elicitation is refused; nothing is sent before approval; the MCP client's own
bearer token never reaches the API.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import mcp_types as types
import pytest
import yaml
from mcp_harness import (
    MODES,
    ServerProcess,
    World,
    http_client,
    opaque_token,
    orders_openapi,
    start_http_server,
    stdio_client,
    write_config,
    write_token_table,
)

from scopegate.config import build_app, load_config
from scopegate.context import CallContext
from scopegate.demo.orders_demo import NEW_ADDRESS, orders_settings
from scopegate.examples.orders.data import ALICE, BOB, STAFF_KEY
from scopegate.examples.orders.server import RunningService
from scopegate.openapi.runtime import OperationToolset

ALICE_TOKEN = opaque_token("shop", ALICE)
BOB_TOKEN = opaque_token("shop", BOB)
UPDATE = {"orderId": "ord_1001", **NEW_ADDRESS}


@pytest.fixture(autouse=True)
def _fresh(orders: RunningService) -> None:
    orders.state.reset()


@pytest.fixture(scope="module")
def orders_server(world: World, orders: RunningService) -> Iterator[ServerProcess]:
    folder = world.folder / "orders"
    folder.mkdir(exist_ok=True)
    table = write_token_table(
        folder / "tokens.yaml",
        [{"token": ALICE_TOKEN, "tenant": "shop", "user": ALICE}, {"token": BOB_TOKEN, "tenant": "shop", "user": BOB}],
    )
    config = write_config(
        folder / "orders.yaml",
        server={"name": "orders-mcp"},
        openapi=[orders_openapi(orders.base_url, ["listOrders", "getOrder", "updateShippingAddress", "cancelOrder"])],
        scope={"state_keys": {"tenant": "tenant_id", "user": "user_id"}},
        auth={"token_table": str(table)},
        guards={"cap": {"families": {"openapi": 1000}}},
    )
    proc = start_http_server(config, {"ORDERS_STAFF_KEY": STAFF_KEY}, log_dir=folder)
    try:
        yield proc
    finally:
        proc.stop()


class Answer:
    """An elicitation callback that records what the user was asked and answers as told."""

    def __init__(self, action: str, approve: bool = True) -> None:
        self.action = action
        self.approve = approve
        self.asked: list[types.ElicitRequestParams] = []

    async def __call__(self, context: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
        self.asked.append(params)
        content = {"approve": self.approve} if self.action == "accept" else None
        return types.ElicitResult(action=self.action, content=content)  # type: ignore[arg-type]


@pytest.mark.parametrize("mode", MODES)
async def test_approved_change_is_sent_once(orders: RunningService, orders_server: ServerProcess, mode: str) -> None:
    answer = Answer("accept")
    async with http_client(orders_server.url, ALICE_TOKEN, mode=mode, elicitation=answer) as client:
        tools = {t.name: t for t in (await client.list_tools()).tools}
        update = tools["updateShippingAddress"]
        assert update.annotations is not None and update.annotations.destructive_hint is True
        assert update.annotations.read_only_hint is False
        assert tools["getOrder"].annotations.read_only_hint is True  # type: ignore[union-attr]
        assert "customer_id" not in tools["listOrders"].input_schema.get("properties", {})

        result = await client.call_tool("updateShippingAddress", UPDATE)
    assert not result.is_error, result.structured_content
    assert len(answer.asked) == 1
    asked = answer.asked[0]
    assert "5 Quai Voltaire" in asked.message  # type: ignore[union-attr]
    assert asked.requested_schema["properties"]["approve"]["type"] == "boolean"  # type: ignore[union-attr]
    assert orders.state.hits("updateShippingAddress") == 1
    with orders.state.lock:
        assert orders.state.orders["ord_1001"]["shipping_address"]["line1"] == "5 Quai Voltaire"


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize(("action", "approve"), [("decline", False), ("cancel", False), ("accept", False)])
async def test_refused_change_sends_nothing(
    orders: RunningService, orders_server: ServerProcess, mode: str, action: str, approve: bool
) -> None:
    answer = Answer(action, approve)
    async with http_client(orders_server.url, ALICE_TOKEN, mode=mode, elicitation=answer) as client:
        result = await client.call_tool("cancelOrder", {"orderId": "ord_1005", "reason": "changed_mind"})
    assert result.is_error and result.structured_content["error_code"] == "CONFIRMATION_REJECTED"
    assert len(answer.asked) == 1
    assert orders.state.hits("cancelOrder") == 0


@pytest.mark.parametrize("mode", MODES)
async def test_client_without_elicitation_is_refused_with_a_reason(
    orders: RunningService, orders_server: ServerProcess, mode: str
) -> None:
    async with http_client(orders_server.url, ALICE_TOKEN, mode=mode) as client:
        result = await client.call_tool("updateShippingAddress", UPDATE)
    data = result.structured_content
    assert result.is_error and data["error_code"] == "CONFIRMATION_UNAVAILABLE"
    assert "cannot ask the user" in data["message"] and "nothing was sent" in data["message"]
    assert data["confirmation"]["payload"]["arguments"]["line1"] == "5 Quai Voltaire"
    assert orders.state.hits("updateShippingAddress") == 0


async def test_bad_arguments_are_refused_before_asking(orders: RunningService, orders_server: ServerProcess) -> None:
    answer = Answer("accept")
    async with http_client(orders_server.url, ALICE_TOKEN, elicitation=answer) as client:
        result = await client.call_tool("updateShippingAddress", {"orderId": "ord_1001"})
    assert result.is_error and result.structured_content["error_code"] == "BAD_ARGUMENTS"
    assert answer.asked == [] and orders.state.total_hits == 0


async def test_foreign_order_is_not_found_even_when_approved(
    orders: RunningService, orders_server: ServerProcess
) -> None:
    answer = Answer("accept")
    async with http_client(orders_server.url, ALICE_TOKEN, elicitation=answer) as client:
        read = await client.call_tool("getOrder", {"orderId": "ord_2001"})
        change = await client.call_tool("cancelOrder", {"orderId": "ord_2001", "reason": "other"})
    assert read.structured_content["error_code"] == "NOT_FOUND"
    assert change.structured_content["error_code"] == "NOT_FOUND"
    assert orders.state.hits("cancelOrder") == 0
    assert BOB not in json.dumps(read.structured_content) + json.dumps(change.structured_content)


async def test_reads_are_scoped_and_the_client_token_is_not_forwarded(
    orders: RunningService, orders_server: ServerProcess
) -> None:
    async with http_client(orders_server.url, BOB_TOKEN) as client:
        listed = await client.call_tool("listOrders", {})
        own = await client.call_tool("getOrder", {"orderId": "ord_2001"})
    assert not listed.is_error and not own.is_error
    assert own.structured_content["untrusted"]["data"]["customer_id"] == BOB
    ids = {o["id"] for o in listed.structured_content["untrusted"]["data"]["orders"]}
    assert ids and all(i.startswith("ord_2") for i in ids)
    sent = orders.state.recorded()
    assert sent
    for request in sent:
        headers = {k.lower(): v for k, v in request.headers.items()}
        assert "authorization" not in headers
        assert headers.get("x-staff-key") == STAFF_KEY
        assert BOB_TOKEN not in json.dumps(headers) + request.query + request.body.decode("utf-8", "replace")
    for result in (listed, own):
        assert STAFF_KEY not in result.content[0].text and BOB_TOKEN not in result.content[0].text


async def test_unsolicited_or_replayed_answers_do_not_approve(
    orders: RunningService, orders_server: ServerProcess
) -> None:
    """2026-07-28: an answer needs the sealed state of a question this server asked about these arguments."""
    approve = {"scopegate_confirm": types.ElicitResult(action="accept", content={"approve": True})}
    args = {"orderId": "ord_1005", "reason": "changed_mind"}
    async with http_client(orders_server.url, ALICE_TOKEN, elicitation=Answer("accept")) as client:
        unsolicited = await client.session.call_tool(
            "cancelOrder", args, input_responses=approve, allow_input_required=True
        )
        assert isinstance(unsolicited, types.InputRequiredResult)  # asked again, not executed
        assert orders.state.hits("cancelOrder") == 0
        state = unsolicited.request_state
        with pytest.raises(Exception, match="requestState"):
            await client.session.call_tool(
                "cancelOrder", {**args, "orderId": "ord_1006"}, input_responses=approve, request_state=state
            )
        with pytest.raises(Exception, match="requestState"):
            await client.session.call_tool("cancelOrder", args, input_responses=approve, request_state=state + "x")
        assert orders.state.hits("cancelOrder") == 0
    # Another user cannot use Alice's question either.
    async with http_client(orders_server.url, BOB_TOKEN) as other:
        with pytest.raises(Exception, match="requestState"):
            await other.session.call_tool("cancelOrder", args, input_responses=approve, request_state=state)
    assert orders.state.hits("cancelOrder") == 0


async def test_confirmation_over_stdio(world: World, orders: RunningService, orders_server: ServerProcess) -> None:
    config = Path(world.folder / "orders" / "orders.yaml")
    env = {"ORDERS_STAFF_KEY": STAFF_KEY, "SCOPEGATE_TENANT": "shop", "SCOPEGATE_USER": ALICE}
    for mode in MODES:
        orders.state.reset()
        answer = Answer("accept")
        async with stdio_client(config, env, mode=mode, elicitation=answer) as client:
            result = await client.call_tool("cancelOrder", {"orderId": "ord_1005", "reason": "changed_mind"})
        assert not result.is_error, result.structured_content
        assert len(answer.asked) == 1 and orders.state.hits("cancelOrder") == 1


async def test_config_and_python_toolsets_agree(
    orders: RunningService, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The same calls through the config-built toolset and ``OperationToolset(orders_settings(...))``."""
    entry = orders_openapi(orders.base_url, ["listOrders", "getOrder", "updateShippingAddress", "cancelOrder"])
    entry["policies"]["listOrders"] = {
        **entry["policies"]["listOrders"],
        "projection": ["orders.id", "orders.status", "total"],
    }
    path = tmp_path / "orders.yaml"
    path.write_text(yaml.safe_dump({"version": 1, "openapi": [entry]}), "utf-8")
    monkeypatch.setenv("ORDERS_STAFF_KEY", STAFF_KEY)
    app = await build_app(load_config(path), guard=None)
    python = OperationToolset(dataclasses.replace(orders_settings(orders.base_url), scope_keys=app.config.scope_keys))
    calls: list[tuple[str, dict[str, Any], bool | None]] = [
        ("listOrders", {}, None),
        ("getOrder", {"orderId": "ord_1001"}, None),
        ("getOrder", {"orderId": "ord_2001"}, None),
        ("getOrder", {"orderId": "../../admin"}, None),
        ("updateShippingAddress", UPDATE, None),
        ("updateShippingAddress", {"orderId": "ord_1001"}, None),
        ("cancelOrder", {"orderId": "ord_1005", "reason": "changed_mind"}, False),
        ("cancelOrder", {"orderId": "ord_2001", "reason": "other"}, True),
    ]
    try:
        for name, args, confirmed in calls:
            ctx = CallContext(state={"tenant_id": ALICE, "user_id": ALICE}, confirmed=confirmed)
            got = (await app.tool(name).run(args, ctx)).result
            want = (await python.tool(name).run(args, ctx)).result
            got.pop("request_id", None)
            want.pop("request_id", None)
            assert got == want, name
    finally:
        await app.aclose()
        await python.aclose()
    assert orders.state.hits("cancelOrder") == 0 and orders.state.hits("updateShippingAddress") == 0
