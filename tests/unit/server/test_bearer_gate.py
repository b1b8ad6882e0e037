"""The MCP endpoint's gate and metadata (pure ASGI calls, no network): 401/503/403, challenges, body replay."""

from __future__ import annotations

import json
from typing import Any

import pytest
from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser
from mcp.server.auth.provider import AccessToken

from scopegate.identity.scopes import ToolScopes
from scopegate.server.auth import FAILURE_KEY, RETRY_KEY
from scopegate.server.resource_server import BearerGate, ResourceServer, ToolInfo, tool_calls

RS = ResourceServer(
    resource="https://mcp.example.com/mcp",
    authorization_servers=("https://login.example.com/realms/x",),
    scopes=ToolScopes.of(read=["orders:read"], write=["orders:write"], tools={"search": ["tickets:read"]}),
    tools={
        "search_tickets": ToolInfo("search", True),
        "getOrder": ToolInfo("openapi", True),
        "cancelOrder": ToolInfo("openapi", False),
    },
)


class Inner:
    """The MCP transport stand-in: records the body it was handed."""

    def __init__(self) -> None:
        self.bodies: list[bytes] = []

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        body = b""
        while True:
            message = await receive()
            body += message.get("body", b"")
            if not message.get("more_body"):
                break
        self.bodies.append(body)
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b"{}"})


def user(*scopes: str) -> AuthenticatedUser:
    return AuthenticatedUser(AccessToken(token="<redacted>", client_id="sg:x", scopes=list(scopes)))


async def run(gate: BearerGate, scope: dict[str, Any], chunks: list[bytes]) -> tuple[int, dict[str, str], Any]:
    messages = [{"type": "http.request", "body": c, "more_body": i < len(chunks) - 1} for i, c in enumerate(chunks)]
    sent: list[dict[str, Any]] = []

    async def receive() -> dict[str, Any]:
        return messages.pop(0) if messages else {"type": "http.disconnect"}

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    await gate({"type": "http", "method": "POST", **scope}, receive, send)
    headers = {k.decode(): v.decode() for k, v in sent[0].get("headers", [])}
    body = b"".join(m.get("body", b"") for m in sent[1:])
    return sent[0]["status"], headers, json.loads(body) if body else None


def rpc(tool: str, request_id: int = 3) -> bytes:
    return json.dumps({"jsonrpc": "2.0", "id": request_id, "method": "tools/call", "params": {"name": tool}}).encode()


async def test_no_token_is_401_without_an_error_code() -> None:
    status, headers, body = await run(BearerGate(Inner(), RS, max_body_bytes=1000), {}, [b""])
    assert status == 401
    assert headers["www-authenticate"] == (
        'Bearer error_description="Authentication required", scope="orders:read tickets:read", '
        'resource_metadata="https://mcp.example.com/.well-known/oauth-protected-resource/mcp"'
    )
    assert body["error"] == "invalid_request"


async def test_a_refused_token_is_401_invalid_token() -> None:
    status, headers, _ = await run(BearerGate(Inner(), RS, max_body_bytes=1000), {FAILURE_KEY: "expired"}, [b""])
    assert status == 401 and headers["www-authenticate"].startswith('Bearer error="invalid_token", ')
    assert 'error_description="The access token expired"' in headers["www-authenticate"]


async def test_a_token_in_the_uri_is_a_bad_request() -> None:
    status, headers, body = await run(
        BearerGate(Inner(), RS, max_body_bytes=1000), {FAILURE_KEY: "token_in_query"}, [b""]
    )
    assert status == 400 and body["error"] == "invalid_request"
    assert headers["www-authenticate"].startswith('Bearer error="invalid_request"')


@pytest.mark.parametrize(("reason", "retry", "shown"), [("unavailable", None, "5"), ("key_pending", 7.2, "8")])
async def test_cannot_tell_now_is_503_with_retry_after(reason: str, retry: float | None, shown: str) -> None:
    scope: dict[str, Any] = {FAILURE_KEY: reason}
    if retry is not None:
        scope[RETRY_KEY] = retry
    status, headers, body = await run(BearerGate(Inner(), RS, max_body_bytes=1000), scope, [b""])
    assert status == 503 and headers["retry-after"] == shown and body["error"] == "temporarily_unavailable"
    assert "error=" not in headers["www-authenticate"]


async def test_a_call_without_its_scopes_is_403_and_never_reaches_the_transport() -> None:
    inner = Inner()
    gate = BearerGate(inner, RS, max_body_bytes=10_000)
    status, headers, body = await run(gate, {"user": user("tickets:read", "orders:read")}, [rpc("cancelOrder", 9)])
    assert status == 403 and inner.bodies == []
    assert headers["www-authenticate"] == (
        'Bearer error="insufficient_scope", error_description="Calling cancelOrder needs the scopes: orders:write", '
        'scope="orders:write", resource_metadata="https://mcp.example.com/.well-known/oauth-protected-resource/mcp"'
    )
    assert body["id"] == 9 and body["error"]["data"] == {
        "error": "insufficient_scope",
        "scope": "orders:write",
        "missing": ["orders:write"],
    }


async def test_allowed_calls_reach_the_transport_with_the_whole_body() -> None:
    inner = Inner()
    gate = BearerGate(inner, RS, max_body_bytes=10_000)
    payload = rpc("getOrder")
    status, _, _ = await run(gate, {"user": user("orders:read")}, [payload[:10], payload[10:]])
    assert status == 200 and inner.bodies == [payload]
    # Unknown tools, other methods and non-JSON pass: the MCP server answers for them.
    for body in (rpc("nope"), b'{"jsonrpc":"2.0","id":1,"method":"tools/list"}', b"not json"):
        assert (await run(gate, {"user": user()}, [body]))[0] == 200
    assert inner.bodies[-1] == b"not json"


async def test_a_batch_with_one_forbidden_call_is_refused() -> None:
    inner = Inner()
    batch = json.dumps([json.loads(rpc("getOrder", 1)), json.loads(rpc("cancelOrder", 2))]).encode()
    status, _, body = await run(BearerGate(inner, RS, max_body_bytes=10_000), {"user": user("orders:read")}, [batch])
    assert status == 403 and body["id"] == 2 and inner.bodies == []


async def test_an_oversized_body_is_left_to_the_transport_limit() -> None:
    inner = Inner()
    big = rpc("cancelOrder") + b" " * 200
    status, _, _ = await run(BearerGate(inner, RS, max_body_bytes=50), {"user": user()}, [big[:60], big[60:]])
    assert status == 200 and inner.bodies == [big]  # the transport enforces max_request_bytes itself


def test_tool_calls_in_messages_and_batches() -> None:
    assert tool_calls({"method": "tools/call", "id": 1, "params": {"name": "a"}}) == [(1, "a")]
    assert tool_calls([{"method": "tools/call", "id": 2, "params": {}}, "x", {"method": "ping"}]) == [(2, "")]
    assert tool_calls("junk") == [] and tool_calls(None) == []


def test_metadata_routes_and_basic_scopes() -> None:
    paths = [r.path for r in RS.routes()]
    assert paths == ["/.well-known/oauth-protected-resource/mcp", "/.well-known/oauth-protected-resource"]
    assert RS.basic_scopes() == ["orders:read", "tickets:read"]
    bare = ResourceServer(resource=None, authorization_servers=(), scopes=ToolScopes(), tools={})
    assert bare.routes() == [] and bare.metadata_url is None
    assert bare.challenge(error=None, description=None, scope=[]) == "Bearer"
    quoted = bare.challenge(error="invalid_token", description='a "quoted" \\ thing', scope=["a"])
    assert quoted == 'Bearer error="invalid_token", error_description="a \\"quoted\\" \\\\ thing", scope="a"'
