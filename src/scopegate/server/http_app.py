"""The streamable-HTTP transport: a Starlette app with bearer auth, ``/metrics`` and ``/healthz``.

Routes:

* ``POST/GET/DELETE {path}`` (default ``/mcp``): MCP over streamable HTTP,
  behind ``RequireAuthMiddleware``: no valid bearer token, HTTP 401 and no MCP
  message is read. Sessions (handshake era) are bound to the identity that
  opened them; a token for another identity gets 404 for that session.
* ``GET {metrics_path}`` (default ``/metrics``): Prometheus text format.
* ``GET /healthz``: liveness.

The client's ``Authorization`` header stops here: tools receive only the
scope (tenant, user, groups) in session state, never headers or the token.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Mapping
from typing import Any

from mcp.server.auth.middleware.auth_context import AuthContextMiddleware
from mcp.server.auth.middleware.bearer_auth import RequireAuthMiddleware
from mcp.server.streamable_http_manager import StreamableHTTPASGIApp, StreamableHTTPSessionManager
from mcp.server.transport_security import TransportSecuritySettings
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.middleware.authentication import AuthenticationMiddleware
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from scopegate.config.builder import ToolApp
from scopegate.config.model import HttpConfig
from scopegate.server.auth import BearerBackend, BearerVerifier
from scopegate.server.mcp_server import ScopegateMcpServer
from scopegate.server.metrics import CONTENT_TYPE, ServerMetrics, exposition

LOCAL_HOSTS = ("127.0.0.1", "localhost", "::1")


def transport_security(cfg: HttpConfig) -> TransportSecuritySettings:
    """DNS-rebinding protection: on for loopback (or when hosts are configured), else off."""
    if cfg.allowed_hosts:
        return TransportSecuritySettings(
            enable_dns_rebinding_protection=True,
            allowed_hosts=list(cfg.allowed_hosts),
            allowed_origins=list(cfg.allowed_origins),
        )
    if cfg.host in LOCAL_HOSTS:
        return TransportSecuritySettings(
            enable_dns_rebinding_protection=True,
            allowed_hosts=["127.0.0.1:*", "localhost:*", "[::1]:*"],
            allowed_origins=["http://127.0.0.1:*", "http://localhost:*", "http://[::1]:*", *cfg.allowed_origins],
        )
    return TransportSecuritySettings(enable_dns_rebinding_protection=False)


def build_http_app(
    app: ToolApp,
    *,
    http: HttpConfig | None = None,
    verifier: BearerVerifier | None = None,
    environ: Mapping[str, str] | None = None,
    metrics: ServerMetrics | None = None,
) -> Starlette:
    """The ASGI app serving ``app``'s tools; auth from the config unless ``verifier`` is given."""
    cfg = http or app.config.http
    verifier = verifier or BearerVerifier.from_config(app.config.auth, environ)
    metrics = metrics or ServerMetrics()
    mcp = ScopegateMcpServer(app, transport="http", events=metrics, stateful_http=not cfg.stateless)
    manager = StreamableHTTPSessionManager(
        app=mcp.server,
        json_response=cfg.json_response,
        stateless=cfg.stateless,
        security_settings=transport_security(cfg),
        session_idle_timeout=cfg.session_idle_timeout_s,
        max_request_body_size=cfg.max_request_bytes,
        max_sessions=cfg.max_sessions,
    )
    mcp_endpoint = RequireAuthMiddleware(StreamableHTTPASGIApp(manager), required_scopes=[])

    async def healthz(_request: Request) -> Response:
        return JSONResponse({"status": "ok", "tools": len(app.tools)})

    async def metrics_endpoint(_request: Request) -> Response:
        return Response(exposition(metrics, app.guard), media_type=CONTENT_TYPE)

    routes = [Route(cfg.path, endpoint=mcp_endpoint), Route("/healthz", endpoint=healthz, methods=["GET"])]
    if cfg.metrics_path:
        routes.append(Route(cfg.metrics_path, endpoint=metrics_endpoint, methods=["GET"]))

    @contextlib.asynccontextmanager
    async def lifespan(_app: Starlette) -> AsyncIterator[None]:
        async with manager.run():
            yield

    backend = BearerBackend(verifier, on_failure=metrics.auth_failure, paths=frozenset({cfg.path.rstrip("/") or "/"}))
    starlette = Starlette(
        routes=routes,
        middleware=[Middleware(AuthenticationMiddleware, backend=backend), Middleware(AuthContextMiddleware)],
        lifespan=lifespan,
    )
    starlette.state.scopegate_mcp = mcp
    starlette.state.scopegate_metrics = metrics
    return starlette


async def serve_http(app: ToolApp, *, host: str, port: int, log_level: str = "info", **kwargs: Any) -> None:
    """Run the HTTP transport with uvicorn until cancelled (Ctrl-C)."""
    import uvicorn

    asgi = build_http_app(app, **kwargs)
    config = uvicorn.Config(asgi, host=host, port=port, log_level=log_level, lifespan="on", access_log=False)
    server = uvicorn.Server(config)
    await server.serve()
