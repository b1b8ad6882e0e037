"""The host app's own authentication in front of a mounted MCP app (scopegate.mcp.asgi_app(authenticate=...)):
what it returns is checked like any other source of scope."""

from __future__ import annotations

from typing import Any

import pytest
from starlette.requests import HTTPConnection

from scopegate.identity.model import Identity
from scopegate.server.auth import FAILURE_KEY, HostAuthBackend, identity_of_user


def connection(path: str = "/agent/mcp", root_path: str = "/agent") -> HTTPConnection:
    scope: dict[str, Any] = {"type": "http", "path": path, "root_path": root_path, "headers": [], "query_string": b""}
    return HTTPConnection(scope)


async def test_an_identity_from_the_host_becomes_the_callers_scope() -> None:
    backend = HostAuthBackend(lambda _conn: Identity("acme", "alice"), paths=frozenset({"/mcp"}))
    found = await backend.authenticate(connection())
    assert found is not None and identity_of_user(found[1]) == Identity("acme", "alice")


@pytest.mark.parametrize("tenant", ["", "acme\x00", "acme\u202e", " " * 3])
async def test_an_unusable_identity_is_refused_not_trusted(tenant: str) -> None:
    conn = connection()
    assert await HostAuthBackend(lambda _conn: Identity(tenant), paths=frozenset({"/mcp"})).authenticate(conn) is None
    assert conn.scope[FAILURE_KEY] == "host_auth_bad_identity"


async def test_a_refusing_or_failing_host_check_is_a_refusal() -> None:
    def refuse(_conn: HTTPConnection) -> Identity:
        raise PermissionError("unknown API key")

    async def nobody(_conn: HTTPConnection) -> None:
        return None

    for check in (refuse, nobody):
        conn = connection()
        assert await HostAuthBackend(check, paths=frozenset({"/mcp"})).authenticate(conn) is None
        assert conn.scope[FAILURE_KEY] == "host_auth_refused"


async def test_routes_other_than_the_mcp_endpoint_are_not_authenticated() -> None:
    calls: list[object] = []
    backend = HostAuthBackend(lambda conn: calls.append(conn) or Identity("acme"), paths=frozenset({"/mcp"}))
    assert await backend.authenticate(connection("/agent/healthz")) is None
    assert calls == []


async def test_a_host_check_returning_something_else_is_a_programming_error() -> None:
    backend = HostAuthBackend(lambda _conn: {"tenant": "acme"}, paths=frozenset({"/mcp"}))  # type: ignore[arg-type,return-value]
    with pytest.raises(TypeError, match="Identity"):
        await backend.authenticate(connection())
