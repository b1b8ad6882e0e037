"""One approval, one call (issue 36, M1), across two ``scopegate serve`` processes of one deployment.

Under protocol 2026-07-28 the user's approval travels in the sealed request state, which opens on
any replica holding the keys for its whole lifetime (300 s). Wave 2 ran the call again for every
copy of the answer: one approval, then three replays (one with another token of the same user),
gave four ``POST /orders/ord_1001/notes``. Here both processes are started from the same config
file (with the same state keys), the client is the SDK's, and the upstream is the real orders
service on 127.0.0.1, which counts the POSTs it receives.
"""

from __future__ import annotations

import asyncio
import contextlib
import secrets
from collections.abc import AsyncIterator, Iterator
from typing import Any

import httpx2
import mcp_types as types
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp_harness import (
    ServerProcess,
    World,
    opaque_token,
    orders_openapi,
    start_http_server,
    write_config,
    write_token_table,
)

from scopegate.examples.orders.data import ALICE, STAFF_KEY
from scopegate.examples.orders.server import RunningService

ALICE_TOKEN = opaque_token("shop", ALICE)
ALICE_OTHER_TOKEN = "sg-e2e-second-device-" + secrets.token_hex(12)  # another token of the same user
NOTE = {"orderId": "ord_1001", "text": "Leave it with the neighbour", "visible_to_courier": True}
APPROVE = {"scopegate_confirm": types.ElicitResult(action="accept", content={"approve": True})}
ENV = {"ORDERS_STAFF_KEY": STAFF_KEY, "SG_STATE_KEY": secrets.token_hex(32)}


async def never(context: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
    """Declares form elicitation; the test answers the question itself (input_responses)."""
    raise AssertionError("the client was not meant to be asked")


@pytest.fixture(scope="module")
def deployment(world: World, orders: RunningService) -> Iterator[tuple[ServerProcess, ServerProcess]]:
    """Two processes of one deployment: one config file, one environment (state keys included)."""
    folder = world.folder / "approvals"
    folder.mkdir(exist_ok=True)
    table = write_token_table(
        folder / "tokens.yaml",
        [
            {"token": ALICE_TOKEN, "tenant": "shop", "user": ALICE},
            {"token": ALICE_OTHER_TOKEN, "tenant": "shop", "user": ALICE},
        ],
    )
    config = write_config(
        folder / "deployment.yaml",
        server={"name": "scopegate-approvals", "http": {"request_state_keys_env": ["SG_STATE_KEY"]}},
        openapi=[orders_openapi(orders.base_url, ["getOrder", "addOrderNote"])],
        scope={"state_keys": {"tenant": "tenant_id", "user": "user_id"}},
        auth={"token_table": str(table)},
        guards={"cap": {"families": {"openapi": 1000}, "window_s": 3600}},
    )
    first = start_http_server(config, ENV, log_dir=folder)
    try:
        second = start_http_server(config, ENV, log_dir=folder)
        try:
            yield first, second
        finally:
            second.stop()
    finally:
        first.stop()


@contextlib.asynccontextmanager
async def client_of(server: ServerProcess, token: str) -> AsyncIterator[Client]:
    async with (
        httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=httpx2.Timeout(30.0)) as http,
        Client(streamable_http_client(server.url, http_client=http), mode="auto", elicitation_callback=never) as client,
    ):
        yield client


async def answer(client: Client, state: str | None) -> types.CallToolResult:
    return await client.session.call_tool("addOrderNote", NOTE, input_responses=APPROVE, request_state=state)


async def ask(client: Client) -> str | None:
    asked = await client.session.call_tool("addOrderNote", NOTE, allow_input_required=True)
    assert isinstance(asked, types.InputRequiredResult), asked
    return asked.request_state


async def test_an_approval_runs_one_call_and_its_replays_on_either_process_are_refused(
    orders: RunningService, deployment: tuple[ServerProcess, ServerProcess]
) -> None:
    a, b = deployment
    orders.state.reset()
    async with (
        client_of(a, ALICE_TOKEN) as on_a,
        client_of(b, ALICE_TOKEN) as on_b,
        client_of(b, ALICE_OTHER_TOKEN) as other_token_on_b,
    ):
        state = await ask(on_a)
        assert orders.state.hits("addOrderNote") == 0  # nothing is sent before the user said yes
        done = await answer(on_a, state)
        assert not done.is_error, done.structured_content
        assert done.structured_content["untrusted"]["data"]["note"] == NOTE["text"]
        for replay_client in (on_a, on_b, other_token_on_b):
            replayed = await answer(replay_client, state)
            assert replayed.is_error, replayed.structured_content
            assert replayed.structured_content["error_code"] == "CONFIRMATION_USED"
            assert replayed.structured_content["retryable"] is False
        assert orders.state.hits("addOrderNote") == 1  # one approval, one POST /orders/ord_1001/notes
        # A fresh question gets a fresh approval: the ledger refuses copies, not the user's next yes.
        again = await answer(on_b, await ask(on_b))
        assert not again.is_error, again.structured_content
    assert orders.state.hits("addOrderNote") == 2


async def test_one_approval_sent_to_both_processes_at_once_runs_at_most_once(
    orders: RunningService, deployment: tuple[ServerProcess, ServerProcess]
) -> None:
    a, b = deployment
    orders.state.reset()
    async with client_of(a, ALICE_TOKEN) as on_a, client_of(b, ALICE_OTHER_TOKEN) as on_b:
        state = await ask(on_a)
        results = await asyncio.gather(*(answer(client, state) for client in (on_a, on_b) * 4))
    codes = sorted(str(r.structured_content.get("error_code")) if r.is_error else "ok" for r in results)  # type: ignore[union-attr]
    assert codes == ["CONFIRMATION_USED"] * 7 + ["ok"]
    assert orders.state.hits("addOrderNote") == 1
