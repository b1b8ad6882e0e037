"""Catalog mode over MCP (a ``scopegate serve`` subprocess, the real client), from the same YAML as ADK.

The orders API behind find_operations / describe_operation / call_operation: a read found,
described and called; a write confirmed through the MCP elicitation flow used for flat tools
(both protocol eras); operations outside the allowlist and beyond the token's scopes never
found nor callable (the same answer as a name that does not exist); ownership refusing a
foreign order behind call_operation.
"""

from __future__ import annotations

import asyncio
import json
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import mcp_types as types
import pytest
from mcp_harness import MODES, ServerProcess, http_client, opaque_token, start_http_server, write_token_table

sys.path.insert(0, str(Path(__file__).parents[1]))  # the config shared with the ADK test

from catalog_config import ALL_SCOPES, OUTSIDE, READ_SCOPES, catalog_config

from scopegate.demo.orders_demo import NEW_ADDRESS
from scopegate.examples.orders.data import ALICE, BOB, STAFF_KEY
from scopegate.examples.orders.server import RunningService

ALICE_TOKEN = opaque_token("shop", ALICE)
READER_TOKEN = opaque_token("shop", ALICE + "-reader")
UPDATE = {"orderId": "ord_1001", **NEW_ADDRESS}


@pytest.fixture(autouse=True)
def _fresh(orders: RunningService) -> None:
    orders.state.reset()


@pytest.fixture(scope="module")
def catalog_server(tmp_path_factory: pytest.TempPathFactory, orders: RunningService) -> Iterator[ServerProcess]:
    folder = tmp_path_factory.mktemp("mcp-catalog")
    table = write_token_table(
        folder / "tokens.yaml",
        [
            {"token": ALICE_TOKEN, "tenant": "shop", "user": ALICE, "scopes": ALL_SCOPES},
            {"token": READER_TOKEN, "tenant": "shop", "user": ALICE, "scopes": READ_SCOPES},
        ],
    )
    config = catalog_config(folder, orders.base_url, table, log=folder / "calls.jsonl")
    proc = start_http_server(config, {"ORDERS_STAFF_KEY": STAFF_KEY}, log_dir=folder)
    proc.folder = folder  # type: ignore[attr-defined]
    try:
        yield proc
    finally:
        proc.stop()


class Answer:
    """An elicitation callback that records what the user was asked and answers as told."""

    def __init__(self, approve: bool = True) -> None:
        self.approve = approve
        self.asked: list[types.ElicitRequestParams] = []

    async def __call__(self, context: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
        self.asked.append(params)
        return types.ElicitResult(action="accept", content={"approve": self.approve})


async def logged_calls(path: Path, wanted: set[tuple[str, Any]], wait_s: float = 15.0) -> set[tuple[str, Any]]:
    """(tool, operation) of the call-log lines, once ``wanted`` is there: the server writes its log in the
    background, so the lines of a call can land a moment after its answer."""
    deadline = time.monotonic() + wait_s
    while True:
        lines = path.read_text("utf-8").splitlines() if path.is_file() else []
        records = [json.loads(line) for line in lines if line.strip()]
        seen = {(r["tool"], r.get("operation")) for r in records if r.get("event") == "call"}
        if wanted <= seen or time.monotonic() > deadline:
            return seen
        await asyncio.sleep(0.1)


def _found(result: Any) -> list[str]:
    return [o["name"] for o in result.structured_content["operations"]]


async def test_three_tools_find_describe_and_call_a_read(orders: RunningService, catalog_server: ServerProcess) -> None:
    async with http_client(catalog_server.url, ALICE_TOKEN) as client:
        tools = {t.name: t for t in (await client.list_tools()).tools}
        found = await client.call_tool("find_operations", {"query": "get one order"})
        described = await client.call_tool("describe_operation", {"name": "getOrder"})
        read = await client.call_tool("call_operation", {"name": "getOrder", "arguments": {"orderId": "ord_1001"}})
        foreign = await client.call_tool("call_operation", {"name": "getOrder", "arguments": {"orderId": "ord_2001"}})
    assert set(tools) == {"find_operations", "describe_operation", "call_operation"}
    assert tools["find_operations"].annotations.read_only_hint is True  # type: ignore[union-attr]
    assert _found(found)[0] == "getOrder"
    declaration = described.structured_content["declaration"]
    assert declaration["name"] == "getOrder" and declaration["parameters"]["required"] == ["orderId"]
    assert not read.is_error and read.structured_content["untrusted"]["data"]["customer_id"] == ALICE
    # Ownership: Bob's order is not found behind call_operation either, and nothing of it shows.
    assert foreign.structured_content["error_code"] == "NOT_FOUND"
    assert BOB not in json.dumps(foreign.structured_content) and "Bob" not in json.dumps(foreign.structured_content)
    log = catalog_server.folder / "calls.jsonl"  # type: ignore[attr-defined]
    wanted = {("getOrder", None), ("call_operation", "getOrder")}
    assert wanted <= await logged_calls(log, wanted)


@pytest.mark.parametrize("mode", MODES)
async def test_a_write_through_call_operation_asks_the_user_first(
    orders: RunningService, catalog_server: ServerProcess, mode: str
) -> None:
    answer = Answer(approve=True)
    async with http_client(catalog_server.url, ALICE_TOKEN, mode=mode, elicitation=answer) as client:
        result = await client.call_tool("call_operation", {"name": "updateShippingAddress", "arguments": UPDATE})
    assert not result.is_error, result.structured_content
    assert len(answer.asked) == 1 and "5 Quai Voltaire" in answer.asked[0].message  # type: ignore[union-attr]
    assert orders.state.hits("updateShippingAddress") == 1
    with orders.state.lock:
        assert orders.state.orders["ord_1001"]["shipping_address"]["line1"] == "5 Quai Voltaire"


async def test_a_rejected_write_sends_nothing(orders: RunningService, catalog_server: ServerProcess) -> None:
    answer = Answer(approve=False)
    args = {"name": "cancelOrder", "arguments": {"orderId": "ord_1005", "reason": "changed_mind"}}
    async with http_client(catalog_server.url, ALICE_TOKEN, elicitation=answer) as client:
        result = await client.call_tool("call_operation", args)
    assert result.structured_content["error_code"] == "CONFIRMATION_REJECTED"
    assert len(answer.asked) == 1 and orders.state.total_hits == 0


async def test_outside_the_allowlist_never_found_nor_callable(
    orders: RunningService, catalog_server: ServerProcess
) -> None:
    async with http_client(catalog_server.url, ALICE_TOKEN, elicitation=Answer()) as client:
        found = await client.call_tool("find_operations", {"query": "delivery note sales summary report profile me"})
        answers = [
            await client.call_tool(tool, {"name": name, "arguments": {}})
            if tool == "call_operation"
            else await client.call_tool(tool, {"name": name})
            for name in (*OUTSIDE, "noSuchOperation")
            for tool in ("describe_operation", "call_operation")
        ]
    assert not set(OUTSIDE) & set(_found(found))
    assert {a.structured_content["error_code"] for a in answers} == {"NOT_FOUND"}
    assert orders.state.total_hits == 0


async def test_beyond_the_token_scopes_never_found_nor_callable(
    orders: RunningService, catalog_server: ServerProcess
) -> None:
    answer = Answer()
    async with http_client(catalog_server.url, READER_TOKEN, elicitation=answer) as client:
        found = await client.call_tool("find_operations", {"query": "cancel order change shipping address"})
        described = await client.call_tool("describe_operation", {"name": "cancelOrder"})
        missing = await client.call_tool("describe_operation", {"name": "cancelOrdr"})
        called = await client.call_tool(
            "call_operation", {"name": "cancelOrder", "arguments": {"orderId": "ord_1005", "reason": "changed_mind"}}
        )
        read = await client.call_tool("call_operation", {"name": "getOrder", "arguments": {"orderId": "ord_1005"}})
    assert not {"cancelOrder", "updateShippingAddress"} & set(_found(found))
    assert described.structured_content["error_code"] == missing.structured_content["error_code"] == "NOT_FOUND"
    assert called.structured_content["error_code"] == "NOT_FOUND"
    assert answer.asked == []  # never asked about an operation this token cannot use
    assert orders.state.hits("cancelOrder") == 0
    assert not read.is_error  # what the token grants still runs
