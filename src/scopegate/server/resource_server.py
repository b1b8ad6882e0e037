"""The MCP endpoint as an OAuth 2.1 resource server: metadata, challenges, scopes per tool.

* **Protected Resource Metadata** (RFC 9728) at
  ``/.well-known/oauth-protected-resource{path}`` and at the root well-known
  URL, built with the SDK (``resource``, ``authorization_servers``,
  ``scopes_supported``, ``bearer_methods_supported: [header]``).
* **401** for a missing or refused token, before any MCP message is read, with
  ``WWW-Authenticate: Bearer`` carrying ``resource_metadata`` and ``scope``
  (the scopes for basic access), and ``error="invalid_token"`` when a token was
  presented (RFC 6750 §3.1). A token that could not be checked now (the
  provider is down, or it names a key the cached JWKS lacks and the next
  refresh is not due yet) gets **503** with ``Retry-After`` instead: the client
  should not throw its token away.
* **400** ``invalid_request`` for a token in the URI (``?access_token=``): only the
  ``Authorization`` header carries tokens here.
* **403** ``insufficient_scope`` for a ``tools/call`` whose tool needs scopes the
  token lacks, before the call reaches the MCP server (nothing runs), naming in
  ``scope`` every scope the operation needs (one challenge, for step-up), with a
  JSON-RPC error body for clients that do not step up.
"""

from __future__ import annotations

import json
import math
from collections.abc import Awaitable, Callable, Iterable, Mapping, MutableMapping, Sequence
from dataclasses import dataclass
from typing import Any

from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser
from mcp.server.auth.routes import build_resource_metadata_url, create_protected_resource_routes
from pydantic import AnyHttpUrl
from starlette.routing import Route

from scopegate.identity.scopes import ToolScopes
from scopegate.identity.tokens import REASONS, REQUEST_REASONS, RETRY_REASONS
from scopegate.server.auth import FAILURE_KEY, RETRY_KEY

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

RETRY_AFTER_S = 5
FORBIDDEN_CODE = -32003  # JSON-RPC server error range: the call was refused for missing scopes
PARSE_ERROR_CODE = -32700


@dataclass(frozen=True)
class ToolInfo:
    family: str
    read_only: bool


def _quoted(value: str) -> str:
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'


@dataclass(frozen=True)
class ResourceServer:
    """What the MCP endpoint tells clients about itself and its scopes."""

    resource: str | None
    authorization_servers: tuple[str, ...]
    scopes: ToolScopes
    tools: Mapping[str, ToolInfo]
    name: str = "scopegate"

    @property
    def metadata_url(self) -> str | None:
        if self.resource is None or not self.authorization_servers:
            return None
        return str(build_resource_metadata_url(AnyHttpUrl(self.resource)))

    def needed(self, tool: str) -> frozenset[str] | None:
        info = self.tools.get(tool)
        return None if info is None else self.scopes.needed(tool, info.family, info.read_only)

    def missing(self, tool: str, granted: Iterable[str]) -> tuple[str, ...]:
        info = self.tools.get(tool)
        if info is None:  # unknown tools get the server's own "unknown tool" result
            return ()
        return self.scopes.missing(tool, info.family, info.read_only, granted)

    def basic_scopes(self) -> list[str]:
        """The scopes for basic access: what every call needs plus what the read-only tools need."""
        out = set(self.scopes.required)
        for name, info in self.tools.items():
            if info.read_only:
                out |= self.scopes.needed(name, info.family, True)
        return sorted(out)

    def supported_scopes(self) -> list[str]:
        return sorted(set(self.scopes.supported()) | set(self.basic_scopes()))

    def routes(self) -> list[Route]:
        """The metadata routes (none without a resource URI and an authorization server)."""
        if self.resource is None or not self.authorization_servers:
            return []
        routes = create_protected_resource_routes(
            resource_url=AnyHttpUrl(self.resource),
            authorization_servers=[AnyHttpUrl(a) for a in self.authorization_servers],
            scopes_supported=self.basic_scopes() or None,
            resource_name=self.name,
        )
        paths = {r.path for r in routes}
        root = "/.well-known/oauth-protected-resource"
        if root not in paths:
            routes.append(Route(root, endpoint=routes[0].endpoint, methods=["GET", "OPTIONS"]))
        return routes

    def challenge(self, *, error: str | None, description: str | None, scope: Sequence[str]) -> str:
        parts = []
        if error:
            parts.append(f"error={_quoted(error)}")
        if description:
            parts.append(f"error_description={_quoted(description)}")
        if scope:
            parts.append(f"scope={_quoted(' '.join(scope))}")
        if self.metadata_url:
            parts.append(f"resource_metadata={_quoted(self.metadata_url)}")
        return "Bearer " + ", ".join(parts) if parts else "Bearer"


async def _send_json(send: Send, status: int, body: Any, headers: Sequence[tuple[str, str]]) -> None:
    data = json.dumps(body, separators=(",", ":")).encode()
    raw = [(b"content-type", b"application/json"), (b"content-length", str(len(data)).encode())]
    raw += [(k.encode("latin-1"), v.encode("latin-1")) for k, v in headers]
    await send({"type": "http.response.start", "status": status, "headers": raw})
    await send({"type": "http.response.body", "body": data})


def tool_calls(payload: Any) -> list[tuple[Any, str]]:
    """(id, tool name) of every ``tools/call`` request in a JSON-RPC message or batch."""
    messages = payload if isinstance(payload, list) else [payload]
    calls = []
    for message in messages:
        if isinstance(message, dict) and message.get("method") == "tools/call":
            params = message.get("params")
            name = params.get("name") if isinstance(params, dict) else None
            calls.append((message.get("id"), name if isinstance(name, str) else ""))
    return calls


class BearerGate:
    """ASGI middleware in front of the MCP endpoint: 401/503 without a verified token, 403 without the scopes."""

    def __init__(self, app: ASGIApp, rs: ResourceServer, *, max_body_bytes: int) -> None:
        self.app = app
        self.rs = rs
        self.max_body_bytes = max_body_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope.get("type") != "http":
            await self.app(scope, receive, send)
            return
        user = scope.get("user")
        if not isinstance(user, AuthenticatedUser):
            await self._unauthorized(scope, send)
            return
        if not self.rs.scopes.enabled or scope.get("method") != "POST":
            await self.app(scope, receive, send)
            return
        body, complete = await self._read(receive)
        if complete:
            refused = self._refusal(body, frozenset(user.access_token.scopes))
            if refused is not None:
                await refused(send)
                return
        # Too large or cut short: the transport below enforces its own limit and answers for it.
        await self.app(scope, _replay(body, receive, complete), send)

    async def _read(self, receive: Receive) -> tuple[bytes, bool]:
        chunks: list[bytes] = []
        size = 0
        while True:
            message = await receive()
            if message["type"] != "http.request":
                return b"".join(chunks), False
            chunk = message.get("body", b"")
            chunks.append(chunk)
            size += len(chunk)
            if size > self.max_body_bytes:
                return b"".join(chunks), False
            if not message.get("more_body", False):
                return b"".join(chunks), True

    def _refusal(self, body: bytes, granted: frozenset[str]) -> Callable[[Send], Awaitable[None]] | None:
        try:
            payload = json.loads(body)
        except ValueError:
            return None  # not JSON: the transport answers with a parse error
        except RecursionError:
            # Nested deeper than the stack: unreadable here, so refused here (fail closed), the way the
            # transport refuses a body it cannot parse: 400 with a JSON-RPC parse error, connection kept.
            return self._too_deep
        for request_id, name in tool_calls(payload):
            missing = self.rs.missing(name, granted)
            if missing:
                needed = sorted(self.rs.needed(name) or ())
                return lambda send: self._forbidden(send, request_id, name, needed, missing)
        return None

    async def _too_deep(self, send: Send) -> None:
        error = {"code": PARSE_ERROR_CODE, "message": "Parse error: the JSON nests too deeply"}
        await _send_json(send, 400, {"jsonrpc": "2.0", "id": None, "error": error}, [])

    async def _forbidden(
        self, send: Send, request_id: Any, tool: str, needed: list[str], missing: Sequence[str]
    ) -> None:
        description = f"Calling {tool} needs the scopes: {' '.join(needed)}"
        header = self.rs.challenge(error="insufficient_scope", description=description, scope=needed)
        body = {
            "jsonrpc": "2.0",
            "id": request_id,
            "error": {
                "code": FORBIDDEN_CODE,
                "message": f"insufficient_scope: {description}",
                "data": {"error": "insufficient_scope", "scope": " ".join(needed), "missing": list(missing)},
            },
        }
        await _send_json(send, 403, body, [("www-authenticate", header)])

    async def _unauthorized(self, scope: Scope, send: Send) -> None:
        reason = str(scope.get(FAILURE_KEY) or "missing")
        description = REASONS.get(reason, "The access token is not valid")
        basic = self.rs.basic_scopes()
        if reason in RETRY_REASONS:
            header = self.rs.challenge(error=None, description=None, scope=basic)
            wait = scope.get(RETRY_KEY)
            retry = max(1, math.ceil(wait)) if isinstance(wait, (int, float)) else RETRY_AFTER_S
            headers = [("www-authenticate", header), ("retry-after", str(retry))]
            await _send_json(send, 503, {"error": "temporarily_unavailable", "error_description": description}, headers)
            return
        if reason in REQUEST_REASONS:
            header = self.rs.challenge(error="invalid_request", description=description, scope=basic)
            body = {"error": "invalid_request", "error_description": description}
            await _send_json(send, 400, body, [("www-authenticate", header)])
            return
        error = None if reason == "missing" else "invalid_token"
        header = self.rs.challenge(error=error, description=description, scope=basic)
        body = {"error": error or "invalid_request", "error_description": description}
        await _send_json(send, 401, body, [("www-authenticate", header)])


def _replay(body: bytes, receive: Receive, complete: bool) -> Receive:
    """A ``receive`` that hands out the buffered body first, then whatever is left."""
    sent = False

    async def replayed() -> Message:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": not complete}
        return await receive()

    return replayed
