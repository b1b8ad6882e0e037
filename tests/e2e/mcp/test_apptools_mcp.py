"""Hand-written tools and the counting tool over MCP: a real client against ``scopegate serve``.

One server process serves the ticket search with its counting tool, the orders OpenAPI toolset
and the hand-written ``cancel_order`` workflow (named in the config as
``scopegate.examples.orders.tools:cancel_order``, using getOrder and cancelOrder, the latter
hidden from the model). Scope comes from the verified bearer token only.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import mcp_types as types
import pytest
from mcp_harness import (
    MODES,
    ServerProcess,
    World,
    http_client,
    opaque_token,
    orders_openapi,
    search_tool_config,
    start_http_server,
    write_config,
    write_token_table,
)

from scopegate.examples.orders.data import ALICE, BOB, STAFF_KEY
from scopegate.examples.orders.server import RunningService
from scopegate.examples.orders.tools import cancel_order
from scopegate.search.agg_tool import AggregateTool
from scopegate_lab.agg_oracle import result_counts

ALICE_TOKEN = opaque_token("shop", ALICE)


@pytest.fixture(autouse=True)
def _fresh(orders: RunningService) -> None:
    orders.state.reset()


@pytest.fixture(scope="module")
def app_server(world: World, orders: RunningService) -> Iterator[ServerProcess]:
    folder = world.folder / "apptools"
    folder.mkdir(exist_ok=True)
    table = write_token_table(
        folder / "tokens.yaml",
        [
            {"token": ALICE_TOKEN, "tenant": "shop", "user": ALICE},
            {"token": world.tokens["acme"], "tenant": "acme", "user": "u1"},
            {"token": world.tokens["globex"], "tenant": "globex", "user": "u1"},
        ],
    )
    config = write_config(
        folder / "apptools.yaml",
        server={"name": "apptools-mcp"},
        backends={"local": {"type": "embedded", "path": str(world.data)}},
        search_tools=[{**search_tool_config(), "aggregate": {"max_buckets": 31}}],
        openapi=[orders_openapi(orders.base_url, ["getOrder", "cancelOrder"])],
        app_tools=[
            {
                "function": "scopegate.examples.orders.tools:cancel_order",
                "uses": ["getOrder", "cancelOrder"],
                "hide": ["cancelOrder"],
            }
        ],
        scope={"state_keys": {"tenant": "tenant_id", "user": "user_id"}},
        auth={"token_table": str(table)},
        guards={"cap": {"families": {"openapi": 1000, "app": 1000, "search": 1000}}},
    )
    proc = start_http_server(config, {"ORDERS_STAFF_KEY": STAFF_KEY}, log_dir=folder)
    try:
        yield proc
    finally:
        proc.stop()


class Answer:
    def __init__(self, approve: bool) -> None:
        self.approve = approve
        self.asked: list[str] = []

    async def __call__(self, context: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
        self.asked.append(str(getattr(params, "message", "")))
        return types.ElicitResult(action="accept", content={"approve": self.approve})


async def test_the_tools_are_listed_as_python_declares_them(world: World, app_server: ServerProcess) -> None:
    async with http_client(app_server.url, ALICE_TOKEN) as client:
        tools = {t.name: t for t in (await client.list_tools()).tools}
    assert set(tools) == {"search_tickets", "get_ticket", "count_tickets", "getOrder", "cancel_order"}
    assert tools["cancel_order"].input_schema == cancel_order.parameters_schema()
    assert tools["cancel_order"].annotations.destructive_hint is True  # type: ignore[union-attr]
    from scopegate.backends.embedded import EmbeddedBackend
    from scopegate.search.aggregation import AggregationSpec

    backend = EmbeddedBackend.open(world.data / "tickets")
    expected = AggregateTool(backend.spec, backend, AggregationSpec(max_buckets=31)).parameters_schema()
    assert tools["count_tickets"].input_schema == expected
    assert tools["count_tickets"].annotations.read_only_hint is True  # type: ignore[union-attr]
    await backend.close()


@pytest.mark.parametrize("tenant", ["acme", "globex"])
async def test_counts_over_mcp_are_the_tokens_own_tickets(world: World, app_server: ServerProcess, tenant: str) -> None:
    async with http_client(app_server.url, world.tokens[tenant]) as client:
        result = await client.call_tool("count_tickets", {"group_by": "status", "product": "payments"})
        forged = await client.call_tool("count_tickets", {"group_by": "status", "tenant_id": "acme"})
    table = result.structured_content
    assert not result.is_error, table
    expected: dict[str, int] = {}
    for t in world.tickets:
        if t["tenant_id"] == tenant and t["product"] == "payments":
            expected[t["status"]] = expected.get(t["status"], 0) + 1
    assert result_counts(table) == expected
    assert forged.is_error and forged.structured_content["error_code"] == "BAD_ARGUMENTS"


@pytest.mark.parametrize("mode", MODES)
async def test_the_workflow_asks_over_elicitation_and_cancels_once(
    orders: RunningService, app_server: ServerProcess, mode: str
) -> None:
    answer = Answer(approve=True)
    async with http_client(app_server.url, ALICE_TOKEN, mode=mode, elicitation=answer) as client:
        result = await client.call_tool("cancel_order", {"order_id": "ord_1005", "reason": "changed_mind"})
        hidden = await client.call_tool("cancelOrder", {"orderId": "ord_1009", "reason": "other"})
    assert not result.is_error, result.structured_content
    assert result.structured_content["untrusted"]["data"]["status"] == "cancelled"
    assert len(answer.asked) == 1 and answer.asked[0].startswith("Cancel order ord_1005 (")
    assert orders.state.hits("cancelOrder") == 1
    assert hidden.is_error and hidden.structured_content["error_code"] != "CONFIRMATION_REQUIRED"
    assert STAFF_KEY not in json.dumps(result.structured_content)


@pytest.mark.parametrize("mode", MODES)
async def test_a_refused_or_foreign_workflow_cancels_nothing(
    orders: RunningService, app_server: ServerProcess, mode: str
) -> None:
    refused = Answer(approve=False)
    async with http_client(app_server.url, ALICE_TOKEN, mode=mode, elicitation=refused) as client:
        rejected = await client.call_tool("cancel_order", {"order_id": "ord_1005"})
        foreign = await client.call_tool("cancel_order", {"order_id": "ord_2001"})
    assert rejected.structured_content["error_code"] == "CONFIRMATION_REJECTED"
    assert foreign.structured_content["error_code"] == "NOT_FOUND" and BOB not in json.dumps(foreign.structured_content)
    assert len(refused.asked) == 1  # the foreign order was refused before asking
    assert orders.state.hits("cancelOrder") == 0
    async with http_client(app_server.url, ALICE_TOKEN, mode=mode) as client:  # no elicitation support
        unavailable = await client.call_tool("cancel_order", {"order_id": "ord_1005"})
    assert unavailable.structured_content["error_code"] == "CONFIRMATION_UNAVAILABLE"
    assert orders.state.hits("cancelOrder") == 0
