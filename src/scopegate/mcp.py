"""scopegate over MCP from Python: serve tools on stdio or streamable HTTP, or mount them in your ASGI app.

    import scopegate
    from scopegate.identity import Identity
    from scopegate.mcp import asgi_app, serve

    tools = scopegate.search_tools(spec, backend)        # or scopegate.load_config("scopegate.yaml")
    serve(tools, identity=Identity(tenant="acme"))       # stdio: one process, one fixed identity

    async def caller(request) -> Identity | None:         # your app's own authentication
        user = await current_user(request)
        return Identity(tenant=user.org_id, user=user.id) if user else None

    mcp = asgi_app(tools, authenticate=caller)
    api = FastAPI(lifespan=mcp.lifespan)
    api.mount("/agent", mcp)                              # MCP endpoint: /agent/mcp

Scope comes from the identity (stdio: fixed; HTTP: the config's token verification, or the host app's
``authenticate``), never from a tool argument. Needs the ``mcp`` extra (``pip install "scopegate[mcp]"``).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Mapping, Sequence
from dataclasses import replace
from typing import Any

from mcp.server.transport_security import TransportSecuritySettings
from starlette.applications import Starlette
from starlette.types import Receive, Scope, Send

from scopegate.config.builder import ToolApp
from scopegate.errors import ConfigError
from scopegate.guard import Guard
from scopegate.identity.model import Identity
from scopegate.server.auth import Authenticate
from scopegate.server.http_app import build_http_app, serve_http
from scopegate.server.stdio_app import serve_stdio
from scopegate.tools import ScopedTool, ToolSource

__all__ = ["Authenticate", "Identity", "McpApp", "asgi_app", "serve", "serve_async"]

Tools = ToolApp | ToolSource | Sequence[ScopedTool | ToolSource]


def tool_app(tools: Tools, *, guard: Guard | None = None, name: str | None = None) -> ToolApp:
    """A built app as it is, or the tools (and sources) as one (:meth:`ToolApp.from_tools`)."""
    if isinstance(tools, ToolApp):
        if guard is not None:
            raise ConfigError("a built config has its guard from the config's guards section")
        return tools
    return ToolApp.from_tools(tools, guard=guard, name=name or "scopegate")


class McpApp:
    """An ASGI app serving MCP over streamable HTTP. Run it with uvicorn, or mount it in another app and
    pass :meth:`lifespan` to that app (mounted apps do not get lifespan events of their own)."""

    def __init__(self, app: Starlette, tools: ToolApp) -> None:
        self.starlette = app
        self.tools = tools

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        await self.starlette(scope, receive, send)

    @contextlib.asynccontextmanager
    async def lifespan(self, _host: Any = None) -> AsyncIterator[None]:
        """Start the MCP session manager (and close the tools after): ``FastAPI(lifespan=mcp.lifespan)``."""
        async with self.starlette.router.lifespan_context(self.starlette):
            yield


def asgi_app(
    tools: Tools,
    *,
    authenticate: Authenticate | None = None,
    path: str | None = None,
    allowed_hosts: Sequence[str] | None = None,
    stateless: bool | None = None,
    guard: Guard | None = None,
    name: str | None = None,
    environ: Mapping[str, str] | None = None,
) -> McpApp:
    """The MCP endpoint (``path``, default ``/mcp``) for ``tools``, as an ASGI app.

    Who is calling: ``authenticate(request) -> Identity | None`` (sync or async; None or an exception is
    HTTP 401 before any MCP message is read) — your app's own authentication — or else the ``auth``
    section of a loaded config (bearer tokens: token table, JWT, introspection). DNS-rebinding
    protection checks the Host header against ``allowed_hosts`` when given; with ``authenticate`` and no
    ``allowed_hosts`` it is left to the host app (which owns its domain), otherwise it follows the
    config (loopback names for a loopback server).
    """
    app = tool_app(tools, guard=guard, name=name)
    http = app.config.server.http
    http = replace(
        http,
        path=path if path is not None else http.path,
        stateless=stateless if stateless is not None else http.stateless,
        allowed_hosts=tuple(allowed_hosts) if allowed_hosts is not None else http.allowed_hosts,
    )
    security = None
    if authenticate is not None and allowed_hosts is None:
        security = TransportSecuritySettings(enable_dns_rebinding_protection=False)
    starlette = build_http_app(
        app, http=http, authenticate=authenticate, security=security, environ=environ, close_app=True
    )
    return McpApp(starlette, app)


async def serve_async(
    tools: Tools,
    *,
    transport: str = "stdio",
    identity: Identity | None = None,
    host: str = "127.0.0.1",
    port: int = 8765,
    authenticate: Authenticate | None = None,
    guard: Guard | None = None,
    name: str | None = None,
) -> None:
    """Serve until stopped: ``stdio`` with one fixed ``identity`` (else the config's ``stdio`` section), or
    ``http`` on ``host:port`` with the config's token verification or ``authenticate``."""
    app = tool_app(tools, guard=guard, name=name)
    try:
        if transport == "stdio":
            await serve_stdio(app, identity=identity)
        elif transport == "http":
            http = replace(app.config.server.http, host=host, port=port)
            await serve_http(app, host=host, port=port, http=http, authenticate=authenticate)
        else:
            raise ConfigError(f"transport must be 'stdio' or 'http', not {transport!r}")
    finally:
        await app.aclose()


def serve(tools: Tools, **options: Any) -> None:
    """:func:`serve_async` in its own event loop (for a script's ``main``)."""
    asyncio.run(serve_async(tools, **options))
