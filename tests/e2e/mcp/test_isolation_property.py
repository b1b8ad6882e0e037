"""Property: over HTTP, whatever the arguments, a token only ever sees its own tenant's documents.

Hypothesis draws tool calls (keywords, injection text, query-language
fragments, unicode, filters, pages, other tenants' ids, extra arguments) and
sends each through a real MCP client with one of three tenants' tokens. Every
returned id must belong to the token's tenant, and the MCP result must equal
what the search core returns in-process for that tenant (so totals and pages
are per tenant too, not filtered afterwards).
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import Coroutine, Iterator
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from mcp import Client
from mcp_harness import ServerProcess, World, http_client, result_ids

from scopegate.backends.embedded import EmbeddedBackend
from scopegate.context import CallContext
from scopegate.demo.corpus import INJECTION_ID, INJECTION_TENANT, INJECTION_TEXT, PRODUCTS, STATUSES
from scopegate.search.tools import FetchTool, SearchTool
from scopegate.tools import ScopedTool

TENANTS = ("acme", "globex", INJECTION_TENANT)
NASTY = [
    INJECTION_TEXT,
    "tenant_id:* OR tenant_id:acme",
    '{"query": {"match_all": {}}}',
    "*:*",
    "refund) OR (1=1",
    "ACM-00001 GLO-00001 INI-INJECT-1",
    "../../etc/passwd",
    "E4012 card_declined",
    "apple pay refund failed",
    "ünïcødé 退款 失败 🙂",
    "\u0000\u001b[31m",
]


class Clients:
    """MCP clients (one per tenant) living on a background event loop, callable from sync code.

    One task enters and exits every client (anyio cancel scopes must be left by the task that
    entered them); calls are submitted to the loop from the test thread.
    """

    def __init__(self, url: str, tokens: dict[str, str]) -> None:
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()
        self.by_tenant: dict[str, Client] = {}
        self._closing: asyncio.Event | None = None
        ready: asyncio.Future[None] = self.loop.create_future()

        async def hold() -> None:
            self._closing = asyncio.Event()
            try:
                async with contextlib.AsyncExitStack() as stack:
                    for tenant, token in tokens.items():
                        self.by_tenant[tenant] = await stack.enter_async_context(http_client(url, token))
                    ready.set_result(None)
                    await self._closing.wait()
            except BaseException as exc:
                if not ready.done():
                    ready.set_exception(exc)
                raise

        self._holder = asyncio.run_coroutine_threadsafe(hold(), self.loop)
        asyncio.run_coroutine_threadsafe(asyncio.wait_for(asyncio.shield(ready), 60), self.loop).result(timeout=70)

    def run(self, coro: Coroutine[Any, Any, Any]) -> Any:
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(timeout=60)

    def close(self) -> None:
        try:
            if self._closing is not None:
                self.loop.call_soon_threadsafe(self._closing.set)
            self._holder.result(timeout=30)
        finally:
            self.loop.call_soon_threadsafe(self.loop.stop)
            self.thread.join(timeout=10)


@pytest.fixture(scope="module")
def clients(world: World, server: ServerProcess) -> Iterator[Clients]:
    tokens = {
        "acme": world.jwt("acme"),
        "globex": world.tokens["globex"],
        INJECTION_TENANT: world.jwt(INJECTION_TENANT),
    }
    c = Clients(server.url, tokens)
    try:
        yield c
    finally:
        c.close()


@pytest.fixture(scope="module")
def direct(world: World, clients: Clients) -> Iterator[dict[str, ScopedTool]]:
    backend = EmbeddedBackend.open(world.data / "tickets")
    yield {"search_tickets": SearchTool(backend.spec, backend), "get_ticket": FetchTool(backend.spec, backend)}
    clients.run(backend.close())


queries = st.one_of(st.sampled_from(NASTY), st.text(max_size=80), st.from_regex(r"[A-Za-z0-9 _:*\-]{1,40}"))
search_args = st.fixed_dictionaries(
    {"query": queries},
    optional={
        "product": st.one_of(st.sampled_from(PRODUCTS), st.text(max_size=10)),
        "status": st.sampled_from(STATUSES),
        "page": st.one_of(st.integers(min_value=-1, max_value=6), st.sampled_from(["2", None, 1.0])),
        "tenant_id": st.sampled_from(TENANTS),
        "group_ids": st.just(["*"]),
    },
)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_no_argument_crosses_tenants(world: World, clients: Clients, direct: dict[str, ScopedTool], data: Any) -> None:
    tenant = data.draw(st.sampled_from(TENANTS), label="tenant")
    if data.draw(st.booleans(), label="fetch"):
        ids = sorted(world.owner)
        doc_id = data.draw(st.one_of(st.sampled_from([*ids[:50], *ids[-50:], INJECTION_ID]), st.text(max_size=20)))
        name, args = "get_ticket", {"id": doc_id}
    else:
        name, args = "search_tickets", data.draw(search_args, label="args")

    result = clients.run(clients.by_tenant[tenant].call_tool(name, args))
    structured = result.structured_content
    assert result.is_error == (structured["status"] == "error")
    for doc_id in result_ids(structured):
        assert world.owner.get(doc_id) == tenant, (tenant, doc_id, args)
    state = {"tenant_id": tenant, "user_id": "u1"}
    expected = clients.run(direct[name].run(args, CallContext(state=state))).result
    assert structured == expected
