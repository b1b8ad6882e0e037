"""``scopegate serve`` as two replicas behind one URL (issue 12): any request of one client on either replica.

Two real ``scopegate serve --transport http`` processes share the embedded
index, the request-state keys (``server.http.request_state_keys_env``) and
nothing else. The client is the official SDK's ``Client`` over one
``httpx`` transport that sends each request to one replica or the other, like
a load balancer would (round robin, or pinned by the test).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import secrets
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import httpx
import httpx2
import mcp_types as types
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp_harness import (
    ServerProcess,
    World,
    free_port,
    in_thread_http_server,
    opaque_token,
    orders_openapi,
    result_ids,
    search_tool_config,
    start_http_server,
    write_config,
    write_token_table,
)

from scopegate.config import build_app, load_config
from scopegate.examples.orders.data import ALICE, STAFF_KEY
from scopegate.examples.orders.server import RunningService
from scopegate.server.http_app import build_http_app

KEY_1 = secrets.token_hex(32)
KEY_2 = secrets.token_hex(32)
METRICS_TOKEN = secrets.token_hex(16)
ALICE_TOKEN = opaque_token("shop", ALICE)
APPROVE = {"scopegate_confirm": types.ElicitResult(action="accept", content={"approve": True})}
CANCEL = {"orderId": "ord_1005", "reason": "changed_mind"}


async def never(context: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
    """Declares form elicitation; the tests answer the question themselves (input_responses)."""
    raise AssertionError("the client was not meant to be asked")


def replica_config(world: World, orders: RunningService, folder: Path, name: str, **http: Any) -> Path:
    tokens = [{"token": tok, "tenant": tenant, "user": "u1"} for tenant, tok in world.tokens.items()]
    tokens.append({"token": ALICE_TOKEN, "tenant": "shop", "user": ALICE})
    table = write_token_table(folder / "tokens.yaml", tokens)
    return write_config(
        folder / f"{name}.yaml",
        server={
            "name": "scopegate-replicas",
            "http": {
                "request_state_keys_env": ["SG_STATE_KEY_NEW", "SG_STATE_KEY_OLD"],
                "max_sessions": 4,
                "max_sessions_per_tenant": 2,
                **http,
            },
        },
        backends={"local": {"type": "embedded", "path": str(world.data)}},
        search_tools=[search_tool_config()],
        openapi=[orders_openapi(orders.base_url, ["getOrder", "cancelOrder"])],
        scope={"state_keys": {"tenant": "tenant_id", "user": "user_id"}},
        auth={"token_table": str(table)},
        guards={"cap": {"families": {"search": 100_000, "openapi": 1000}, "window_s": 3600}},
    )


ENV = {"ORDERS_STAFF_KEY": STAFF_KEY, "SG_STATE_KEY_NEW": KEY_1, "SG_STATE_KEY_OLD": KEY_2}


@pytest.fixture(scope="module")
def replicas(world: World, orders: RunningService) -> Iterator[tuple[ServerProcess, ServerProcess, int]]:
    folder = world.folder / "replicas"
    folder.mkdir(exist_ok=True)
    metrics_port = free_port()
    first = replica_config(world, orders, folder, "a", metrics_port=metrics_port, metrics_auth="none")
    second = replica_config(world, orders, folder, "b", metrics_token_env="SG_METRICS_TOKEN")
    a = start_http_server(first, ENV, log_dir=folder)
    try:
        b = start_http_server(second, {**ENV, "SG_METRICS_TOKEN": METRICS_TOKEN}, log_dir=folder)
        try:
            yield a, b, metrics_port
        finally:
            b.stop()
    finally:
        a.stop()


class Balancer(httpx2.AsyncBaseTransport):
    """Sends each request to one of the replicas: round robin, or the one ``pin`` names."""

    def __init__(self, ports: list[int]) -> None:
        self.ports = ports
        self.inner = httpx2.AsyncHTTPTransport()
        self.turn = 0
        self.pin: int | None = None
        self.served: list[tuple[int, str]] = []  # (port, JSON-RPC method)

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        port = self.ports[self.pin if self.pin is not None else self.turn % len(self.ports)]
        self.turn += 1
        try:
            method = str(json.loads(request.content or b"{}").get("method", request.method))
        except ValueError:
            method = request.method
        self.served.append((port, method))
        request.url = request.url.copy_with(port=port)
        return await self.inner.handle_async_request(request)

    async def aclose(self) -> None:
        await self.inner.aclose()


@contextlib.asynccontextmanager
async def balanced_client(
    replicas: tuple[ServerProcess, ServerProcess, int], token: str, **kw: Any
) -> AsyncIterator[tuple[Client, Balancer]]:
    a, b, _ = replicas
    ports = [httpx.URL(a.url).port, httpx.URL(b.url).port]
    balancer = Balancer([p for p in ports if p is not None])
    headers = {"Authorization": f"Bearer {token}"}
    async with (
        httpx2.AsyncClient(transport=balancer, headers=headers, timeout=httpx2.Timeout(30.0)) as http,
        Client(streamable_http_client(a.url, http_client=http), mode="auto", **kw) as client,
    ):
        yield client, balancer


async def test_one_clients_requests_alternate_between_replicas(
    world: World, replicas: tuple[ServerProcess, ServerProcess, int]
) -> None:
    async with balanced_client(replicas, world.tokens["acme"]) as (client, balancer):
        seen: list[str] = []
        for query in ("refund failed", "E4012", "payout delayed bank", "selfie check fails", "invoice total wrong"):
            out = await client.call_tool("search_tickets", {"query": query})
            assert not out.is_error, out.structured_content
            seen += result_ids(out.structured_content)
            if seen:
                doc = await client.call_tool("get_ticket", {"id": seen[-1]})
                assert doc.structured_content["document"]["ticket_id"] == seen[-1]
        foreign = next(i for i, owner in world.owner.items() if owner == "globex")
        refused = await client.call_tool("get_ticket", {"id": foreign})
        assert refused.structured_content["error_code"] == "NOT_FOUND"
    assert seen and all(world.owner[i] == "acme" for i in seen)
    calls = [port for port, method in balancer.served if method == "tools/call"]
    assert len(set(calls)) == 2 and len(calls) >= 10  # both replicas answered this one client


async def test_a_confirmation_asked_by_one_replica_is_answered_on_the_other(
    orders: RunningService, replicas: tuple[ServerProcess, ServerProcess, int]
) -> None:
    """Wave 1 sealed request state with a random key per process: the retry on another replica failed."""
    orders.state.reset()
    async with balanced_client(replicas, ALICE_TOKEN, elicitation_callback=never) as (client, balancer):
        balancer.pin = 0
        asked = await client.session.call_tool("cancelOrder", CANCEL, allow_input_required=True)
        assert isinstance(asked, types.InputRequiredResult)
        assert orders.state.hits("cancelOrder") == 0
        balancer.pin = 1
        done = await client.session.call_tool(
            "cancelOrder", CANCEL, input_responses=APPROVE, request_state=asked.request_state
        )
        assert not done.is_error, done.structured_content
    assert orders.state.hits("cancelOrder") == 1
    tool_calls = [port for port, method in balancer.served if method == "tools/call"]
    assert tool_calls[0] != tool_calls[-1]


async def test_the_sdk_client_confirms_through_the_balancer(
    orders: RunningService, replicas: tuple[ServerProcess, ServerProcess, int]
) -> None:
    orders.state.reset()
    asked: list[Any] = []

    async def approve(context: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
        asked.append(params)
        return types.ElicitResult(action="accept", content={"approve": True})

    async with balanced_client(replicas, ALICE_TOKEN, elicitation_callback=approve) as (client, balancer):
        for _ in range(2):  # whichever replica asks, the other may get the answer
            orders.state.reset()
            result = await client.call_tool("cancelOrder", CANCEL)
            assert not result.is_error, result.structured_content
            assert orders.state.hits("cancelOrder") == 1
    assert len(asked) == 2
    assert len({port for port, method in balancer.served if method == "tools/call"}) == 2


async def test_one_tenant_cannot_take_every_session(
    world: World, replicas: tuple[ServerProcess, ServerProcess, int]
) -> None:
    """max_sessions 4, max_sessions_per_tenant 2: acme's third session is refused, globex still gets one.
    Wave 1 let acme open all four and locked every other tenant out until they idled out."""
    a, _, _ = replicas

    @contextlib.asynccontextmanager
    async def session(token: str) -> AsyncIterator[Client]:
        async with (
            httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=30) as http,
            Client(streamable_http_client(a.url, http_client=http), mode="legacy") as client,
        ):
            yield client

    async with contextlib.AsyncExitStack() as stack:
        for _ in range(2):
            client = await stack.enter_async_context(session(world.tokens["acme"]))
            assert (await client.call_tool("search_tickets", {"query": "refund"})).structured_content["total"] > 0
        with pytest.raises(Exception):  # noqa: B017 - the SDK reports the 503 as its own error type
            await stack.enter_async_context(session(world.tokens["acme"]))
        other = await stack.enter_async_context(session(world.tokens["globex"]))
        assert (await other.call_tool("search_tickets", {"query": "refund"})).structured_content["total"] > 0
    await asyncio.sleep(0.5)  # closed sessions are released: acme may open one again
    async with session(world.tokens["acme"]) as again:
        assert (await again.call_tool("search_tickets", {"query": "refund"})).structured_content["total"] > 0


def test_metrics_on_their_own_port_or_behind_a_token(replicas: tuple[ServerProcess, ServerProcess, int]) -> None:
    a, b, metrics_port = replicas
    assert httpx.get(f"{a.base}/metrics", timeout=10).status_code == 404  # not on the MCP port
    side = httpx.get(f"http://127.0.0.1:{metrics_port}/metrics", timeout=10)
    assert side.status_code == 200 and "scopegate_" in side.text
    assert httpx.get(f"{b.base}/metrics", timeout=10).status_code == 401
    wrong = {"Authorization": "Bearer nope"}
    assert httpx.get(f"{b.base}/metrics", headers=wrong, timeout=10).status_code == 401
    good = httpx.get(f"{b.base}/metrics", headers={"Authorization": f"Bearer {METRICS_TOKEN}"}, timeout=10)
    assert good.status_code == 200 and "scopegate_" in good.text


async def test_request_state_keys_rotate(
    world: World, orders: RunningService, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """[old, new] -> [new, old] -> [new]: each phase opens what the phase before or after it seals."""
    monkeypatch.setenv("ORDERS_STAFF_KEY", STAFF_KEY)
    config = load_config(replica_config(world, orders, tmp_path, "rotate"))
    retired = secrets.token_hex(32)  # the ring has two slots; in the last phase the second is a key nobody uses
    rings = {  # the first named variable seals
        "phase1": {"SG_STATE_KEY_NEW": KEY_2, "SG_STATE_KEY_OLD": KEY_1},
        "phase2": {"SG_STATE_KEY_NEW": KEY_1, "SG_STATE_KEY_OLD": KEY_2},
        "phase3": {"SG_STATE_KEY_NEW": KEY_1, "SG_STATE_KEY_OLD": retired},
    }
    apps = {name: await build_app(config) for name in rings}
    try:
        servers = {name: build_http_app(apps[name], environ={**ENV, **ring}) for name, ring in rings.items()}
        with contextlib.ExitStack() as stack:
            bases = {name: stack.enter_context(in_thread_http_server(asgi)) for name, asgi in servers.items()}

            @contextlib.asynccontextmanager
            async def client_of(name: str) -> AsyncIterator[Client]:
                headers = {"Authorization": f"Bearer {ALICE_TOKEN}"}
                async with (
                    httpx2.AsyncClient(headers=headers, timeout=30) as http,
                    Client(
                        streamable_http_client(f"{bases[name]}/mcp", http_client=http), elicitation_callback=never
                    ) as client,
                ):
                    yield client

            async def ask(name: str) -> str:
                async with client_of(name) as client:
                    asked = await client.session.call_tool("cancelOrder", CANCEL, allow_input_required=True)
                    assert isinstance(asked, types.InputRequiredResult)
                    return str(asked.request_state)

            async def answer(name: str, state: str) -> bool:
                orders.state.reset()
                async with client_of(name) as client:
                    try:
                        await client.session.call_tool(
                            "cancelOrder", CANCEL, input_responses=APPROVE, request_state=state
                        )
                    except Exception:
                        return False
                return orders.state.hits("cancelOrder") == 1

            # An approval runs one call (issue 36, M1), so each answer below answers a question of its own.
            assert await answer("phase2", await ask("phase1"))  # phase 2 opens what phase 1 sealed
            assert await answer("phase1", await ask("phase2"))  # replicas still in phase 1 open what phase 2 seals
            assert await answer("phase3", await ask("phase2"))
            assert not await answer("phase3", await ask("phase1"))  # once the old key is gone, its state is refused
    finally:
        for app in apps.values():
            await app.aclose()
