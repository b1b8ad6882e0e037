"""Tools built in Python served over MCP (scopegate.mcp), and the MCP app mounted in a FastAPI app behind the
app's own authentication, driven by the official MCP client over real HTTP on loopback."""

from __future__ import annotations

from typing import Any

import httpx
import pytest
from fastapi import Depends, FastAPI, Header, HTTPException
from mcp_harness import http_client, in_thread_http_server, result_ids
from starlette.requests import HTTPConnection

import scopegate
from scopegate.backends.embedded import EmbeddedBackend
from scopegate.errors import ConfigError
from scopegate.identity.model import Identity
from scopegate.mcp import asgi_app, tool_app

# The host app's own users: an API key per user, each in one organisation (the tenant).
USERS = {"key-alice-0123456789": ("acme", "alice"), "key-bob-01234567890": ("globex", "bob")}


def current_user(x_api_key: str | None = Header(default=None)) -> tuple[str, str]:
    """The FastAPI dependency the team's own routes use."""
    if x_api_key not in USERS:
        raise HTTPException(status_code=401, detail="unknown API key")
    return USERS[x_api_key]


def mcp_identity(request: HTTPConnection) -> Identity:
    """The same check for the mounted MCP app: the identity is the scope, nothing from the model."""
    org, user = current_user(request.headers.get("x-api-key"))
    return Identity(tenant=org, user=user)


def team_app(embedded: EmbeddedBackend) -> FastAPI:
    mcp = asgi_app(scopegate.search_tools(embedded.spec, embedded), authenticate=mcp_identity)
    api = FastAPI(lifespan=mcp.lifespan)

    @api.get("/api/me")
    def me(user: tuple[str, str] = Depends(current_user)) -> dict[str, str]:
        return {"org": user[0], "user": user[1]}

    @api.get("/healthz")
    def healthz() -> dict[str, str]:
        return {"status": "ok"}

    api.mount("/agent", mcp)
    return api


async def test_mounted_mcp_app_uses_the_host_apps_authentication(embedded: EmbeddedBackend) -> None:
    with in_thread_http_server(team_app(embedded)) as base:
        # The team's own route works as before, behind the same key.
        me = httpx.get(f"{base}/api/me", headers={"x-api-key": "key-alice-0123456789"}, timeout=10)
        assert me.json() == {"org": "acme", "user": "alice"}
        url = f"{base}/agent/mcp"
        async with http_client(url, None, headers={"x-api-key": "key-alice-0123456789"}) as alice:
            names = {t.name for t in (await alice.list_tools()).tools}
            assert names == {"search_tickets", "get_ticket"}
            out = await alice.call_tool("search_tickets", {"query": "refund failed"})
            assert not out.is_error
            ids = result_ids(out.structured_content)
            assert ids and all(i.startswith("ACM-") for i in ids)
        async with http_client(url, None, headers={"x-api-key": "key-bob-01234567890"}) as bob:
            # Bob cannot fetch Alice's document by its id: another tenant, inside the engine.
            theirs = await bob.call_tool("get_ticket", {"id": ids[0]})
            assert theirs.structured_content["error_code"] == "NOT_FOUND"
            own = await bob.call_tool("search_tickets", {"query": "refund failed"})
            assert all(not i.startswith("ACM-") for i in result_ids(own.structured_content))
        # Without the host app's credentials no MCP message is read.
        for headers in ({}, {"x-api-key": "wrong"}):
            refused = httpx.post(url, json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"}, headers=headers)
            assert refused.status_code == 401


async def test_python_tools_served_over_mcp_with_a_scope_argument_ignored(embedded: EmbeddedBackend) -> None:
    mcp = asgi_app(scopegate.search_tools(embedded.spec, embedded), authenticate=mcp_identity, path="/mcp")
    with in_thread_http_server(mcp) as base:
        async with http_client(f"{base}/mcp", None, headers={"x-api-key": "key-bob-01234567890"}) as bob:
            # A model that tries to name a tenant gets an argument error, never another tenant's data.
            out = await bob.call_tool("search_tickets", {"query": "refund", "tenant_id": "acme"})
            assert out.is_error
            listing = await bob.list_tools()
            schema: dict[str, Any] = next(t for t in listing.tools if t.name == "search_tickets").input_schema
            assert "tenant_id" not in schema.get("properties", {})


def test_tool_app_refuses_tools_that_read_scope_from_different_keys(embedded: EmbeddedBackend) -> None:
    import dataclasses

    from scopegate.scope import ScopeKeys

    other = dataclasses.replace(
        embedded.spec, name="other_search", fetch_name="other_get", scope_keys=ScopeKeys(tenant="org_id")
    )
    with pytest.raises(ConfigError, match="different session-state keys"):
        tool_app([*scopegate.search_tools(embedded.spec, embedded), *scopegate.search_tools(other, embedded)])
