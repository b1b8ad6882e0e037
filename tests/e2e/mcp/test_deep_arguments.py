"""Arguments nested thousands deep (issue 36, L1): a structured 400, and the connection stays usable.

Wave 2's scope gate parsed the body with ``json.loads``, whose ``RecursionError`` escaped as HTTP 500
with a traceback in the log, and uvicorn then dropped the keep-alive connection. The gate runs only
when scopes per tool are configured, so this server has them.
"""

from __future__ import annotations

import asyncio
import http.client
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from mcp_harness import (
    HEADERS,
    INIT,
    ServerProcess,
    World,
    in_thread_http_server,
    opaque_token,
    search_tool_config,
    write_config,
    write_token_table,
)

from scopegate.config import build_app, load_config
from scopegate.server.http_app import build_http_app

DEPTH = 3000
TOKEN = opaque_token("acme", "deep")


def deep_call(depth: int) -> bytes:
    nested = '{"a":' * depth + "1" + "}" * depth
    return (
        '{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"search_tickets","arguments":{"query":'
        + nested
        + "}}}"
    ).encode()


@pytest.fixture(scope="module")
def scoped_server(world: World, tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, int]]:
    folder: Path = tmp_path_factory.mktemp("deep")
    table = write_token_table(
        folder / "tokens.yaml", [{"token": TOKEN, "tenant": "acme", "user": "u1", "scopes": ["tickets:read"]}]
    )
    config = write_config(
        folder / "deep.yaml",
        server={"name": "scopegate-deep"},
        backends={"local": {"type": "embedded", "path": str(world.data)}},
        search_tools=[search_tool_config()],
        scope={"state_keys": {"tenant": "tenant_id", "user": "user_id"}},
        auth={"token_table": str(table), "scopes": {"read": ["tickets:read"]}},
    )
    app = asyncio.run(build_app(load_config(config)))
    try:
        with in_thread_http_server(build_http_app(app)) as base:
            host, _, port = base.removeprefix("http://").partition(":")
            yield host, int(port)
    finally:
        asyncio.run(app.aclose())


def post(conn: http.client.HTTPConnection, body: bytes, token: str = TOKEN) -> tuple[int, dict[str, str], Any]:
    headers = {**HEADERS, "Authorization": f"Bearer {token}", "MCP-Protocol-Version": "2025-11-25"}
    conn.request("POST", "/mcp", body=body, headers=headers)
    response = conn.getresponse()
    raw = response.read()
    return response.status, {k.lower(): v for k, v in response.getheaders()}, raw


def test_deeply_nested_arguments_get_a_structured_400_and_the_connection_lives_on(
    scoped_server: tuple[str, int],
) -> None:
    host, port = scoped_server
    assert_refused_and_alive(host, port, TOKEN)


def test_without_scopes_per_tool_the_transport_refuses_them_the_same_way(world: World, server: ServerProcess) -> None:
    host, _, port = server.base.removeprefix("http://").partition(":")
    assert_refused_and_alive(host, int(port), world.tokens["acme"])


def assert_refused_and_alive(host: str, port: int, token: str) -> None:
    conn = http.client.HTTPConnection(host, port, timeout=30)
    try:
        status, headers, raw = post(conn, deep_call(DEPTH), token)
        assert status == 400, raw[:300]
        body = json.loads(raw)
        assert body["jsonrpc"] == "2.0" and body["error"]["code"] == -32700  # JSON-RPC parse error
        assert "Traceback" not in raw.decode() and "RecursionError" not in raw.decode()
        assert headers.get("connection", "").lower() != "close"
        sock = conn.sock
        # The next request goes over the same keep-alive connection and is answered.
        status, _, raw = post(conn, json.dumps(INIT).encode(), token)
        assert status == 200, raw[:300]
        assert conn.sock is sock and sock is not None
    finally:
        conn.close()
