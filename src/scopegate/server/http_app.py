"""The streamable-HTTP transport: a Starlette app with bearer auth, ``/metrics`` and ``/healthz``.

Routes:

* ``POST/GET/DELETE {path}`` (default ``/mcp``): MCP over streamable HTTP,
  behind :class:`~scopegate.server.resource_server.BearerGate`: no valid bearer
  token, HTTP 401 with ``WWW-Authenticate`` and no MCP message is read; a
  ``tools/call`` without the tool's scopes, HTTP 403 ``insufficient_scope``.
  Sessions (handshake era) are bound to the identity that opened them; a token
  for another identity gets 404 for that session.
* ``GET /.well-known/oauth-protected-resource{path}`` (and at the root): the
  Protected Resource Metadata (RFC 9728), when an authorization server is known.
* ``GET {metrics_path}`` (default ``/metrics``): Prometheus text format, by
  default (``metrics_auth: bearer``) only for a bearer token: the one in
  ``metrics_token_env`` when set, else any token the MCP endpoint accepts;
  with ``metrics_port`` on its own listener (:func:`build_metrics_app`)
  instead of this one, where ``metrics_auth: none`` may open it; with
  ``metrics_path: null`` nowhere.
* ``GET /healthz``: liveness.

Replicas: several of these behind one URL serve one client interchangeably
when the request-state keys are shared (``request_state_keys_env``) and the
client uses sessionless requests (stateless mode, or protocol 2026-07-28);
handshake-era sessions live in the process that opened them. Used approvals
are recorded where every replica sees them (:mod:`.approvals`), so one
approval runs one call whichever replicas its copies reach. Each tenant may
hold at most ``max_sessions_per_tenant`` sessions (:mod:`.sessions`).

The client's ``Authorization`` header stops here: tools receive only the
scope (tenant, user, groups) in session state, never headers or the token.
"""

from __future__ import annotations

import asyncio
import contextlib
import hmac
import logging
import os
from collections.abc import AsyncIterator, Mapping
from typing import Any

from mcp.server.auth.middleware.auth_context import AuthContextMiddleware
from mcp.server.streamable_http_manager import StreamableHTTPASGIApp
from mcp.server.transport_security import TransportSecuritySettings
from starlette.applications import Starlette
from starlette.authentication import AuthenticationBackend
from starlette.middleware import Middleware
from starlette.middleware.authentication import AuthenticationMiddleware
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from scopegate.config.builder import ToolApp
from scopegate.config.identity import build_identity, default_resource
from scopegate.config.model import HttpConfig
from scopegate.errors import ConfigError
from scopegate.server import confirm
from scopegate.server.approvals import build_ledger
from scopegate.server.auth import MAX_HEADER_CHARS, Authenticate, BearerBackend, HostAuthBackend, Verifies, bearer_token
from scopegate.server.identity_metrics import IdentityCollector
from scopegate.server.mcp_server import ScopegateMcpServer
from scopegate.server.metrics import CONTENT_TYPE, ServerMetrics, exposition
from scopegate.server.resource_server import BearerGate, ResourceServer, ToolInfo
from scopegate.server.sessions import TenantOfRequest, TenantQuotaSessionManager

log = logging.getLogger("scopegate.server.http")

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
    verifier: Verifies | None = None,
    environ: Mapping[str, str] | None = None,
    metrics: ServerMetrics | None = None,
    close_app: bool = False,
    authenticate: Authenticate | None = None,
    security: TransportSecuritySettings | None = None,
) -> Starlette:
    """The ASGI app serving ``app``'s tools; auth from the config unless ``verifier`` is given, or the host
    app's own check with ``authenticate`` (a request -> Identity | None function, for an app mounted inside
    another); secrets (request-state keys, the metrics token, identity files) from ``environ`` (default the
    process's). ``security``: DNS-rebinding protection (default: from ``http``)."""
    cfg = http or app.config.server.http
    identity = app.identity
    if identity is None:
        identity = app.identity = build_identity(app.config.auth, resource=default_resource(cfg), environ=environ)
        app.closers.append(identity.aclose)
    verifier = verifier or identity.verifier
    if verifier is None and authenticate is None:
        raise ConfigError("HTTP needs auth: configure auth.jwt, auth.introspection and/or auth.token_table")
    metrics = metrics or ServerMetrics()
    metrics.registry.register(IdentityCollector(identity))
    keys = confirm.state_keys(cfg.request_state_keys_env, environ)
    approvals = build_ledger(
        shared_keys=bool(cfg.request_state_keys_env),
        path=cfg.approvals_path,
        redis_url=cfg.approvals_redis_url,
        cache_redis_url=app.config.guards.cache.redis_url,
        config_file=app.config.source,
    )
    app.closers.append(approvals.aclose)
    mcp = ScopegateMcpServer(
        app,
        transport="http",
        events=metrics,
        stateful_http=not cfg.stateless,
        state_keys=keys,
        approvals=approvals,
    )
    rs = ResourceServer(
        resource=identity.resource or default_resource(cfg),
        authorization_servers=tuple(identity.authorization_servers),
        scopes=identity.scopes,
        tools={t.name: ToolInfo(t.family, t.read_only) for t in app.tools},
        name=app.config.server.name,
    )
    manager = TenantQuotaSessionManager(
        app=mcp.server,
        json_response=cfg.json_response,
        stateless=cfg.stateless,
        security_settings=security or transport_security(cfg),
        session_idle_timeout=cfg.session_idle_timeout_s,
        max_request_body_size=cfg.max_request_bytes,
        max_sessions=cfg.max_sessions,
        max_sessions_per_tenant=cfg.max_sessions_per_tenant,
    )
    mcp_endpoint = BearerGate(TenantOfRequest(StreamableHTTPASGIApp(manager)), rs, max_body_bytes=cfg.max_request_bytes)

    async def healthz(_request: Request) -> Response:
        return JSONResponse({"status": "ok", "tools": len(app.tools)})

    routes = [Route(cfg.path, endpoint=mcp_endpoint), Route("/healthz", endpoint=healthz, methods=["GET"])]
    routes += rs.routes()
    if cfg.metrics_path and cfg.metrics_port is None:
        routes.append(metrics_route(cfg, app, metrics, environ, verifier=verifier))

    @contextlib.asynccontextmanager
    async def lifespan(_app: Starlette) -> AsyncIterator[None]:
        try:
            async with manager.run():
                yield
        finally:
            if close_app:
                await app.aclose()

    mcp_paths = frozenset({cfg.path.rstrip("/") or "/"})
    backend: AuthenticationBackend
    if authenticate is not None:
        backend = HostAuthBackend(authenticate, paths=mcp_paths)
    else:
        assert verifier is not None  # checked above
        backend = BearerBackend(verifier, on_failure=metrics.auth_failure, paths=mcp_paths, resource=rs.resource)
    starlette = Starlette(
        routes=routes,
        middleware=[Middleware(AuthenticationMiddleware, backend=backend), Middleware(AuthContextMiddleware)],
        lifespan=lifespan,
    )
    starlette.state.scopegate_mcp = mcp
    starlette.state.scopegate_metrics = metrics
    starlette.state.scopegate_resource = rs
    return starlette


def metrics_route(
    cfg: HttpConfig,
    app: ToolApp,
    metrics: ServerMetrics,
    environ: Mapping[str, str] | None = None,
    *,
    verifier: Verifies | None = None,
) -> Route:
    """``GET metrics_path``: the Prometheus text, for whom ``metrics_auth`` says: a bearer token
    (``metrics_token_env``'s, else one ``verifier`` accepts) or, with ``none``, anyone reaching it."""
    expected: bytes | None = None
    if cfg.metrics_auth == "bearer" and cfg.metrics_token_env is not None:
        value = (os.environ if environ is None else environ).get(cfg.metrics_token_env)
        if not value:
            raise ConfigError(f"server.http.metrics_token_env names {cfg.metrics_token_env}, which is not set")
        expected = value.encode("utf-8")
    elif cfg.metrics_auth == "bearer" and verifier is None:
        # No token verifier to share (e.g. the host application authenticates): fail closed, say how to open it.
        log.warning("metrics_path answers 401 to every request: set server.http.metrics_token_env for the scraper")

    async def allowed(request: Request) -> bool:
        if cfg.metrics_auth == "none":
            return True
        token = bearer_token(request)
        if token is None or len(token) > MAX_HEADER_CHARS:
            return False
        if expected is not None:
            return hmac.compare_digest(token.encode("utf-8"), expected)
        return verifier is not None and (await verifier.verify(token)).token is not None

    async def metrics_endpoint(request: Request) -> Response:
        if not await allowed(request):
            return JSONResponse(
                {"error": "a valid bearer token is required"}, status_code=401, headers={"WWW-Authenticate": "Bearer"}
            )
        return Response(exposition(metrics, app.guard), media_type=CONTENT_TYPE)

    return Route(cfg.metrics_path or "/metrics", endpoint=metrics_endpoint, methods=["GET"])


def build_metrics_app(
    app: ToolApp,
    metrics: ServerMetrics,
    *,
    http: HttpConfig,
    environ: Mapping[str, str] | None = None,
    verifier: Verifies | None = None,
) -> Starlette:
    """The listener of ``metrics_port``: ``metrics_path`` only (and ``/healthz``); ``verifier`` defaults to the
    MCP endpoint's."""
    if verifier is None and app.identity is not None:
        verifier = app.identity.verifier

    async def healthz(_request: Request) -> Response:
        return JSONResponse({"status": "ok"})

    return Starlette(
        routes=[
            metrics_route(http, app, metrics, environ, verifier=verifier),
            Route("/healthz", endpoint=healthz, methods=["GET"]),
        ]
    )


async def serve_http(
    app: ToolApp, *, host: str, port: int, log_level: str = "info", http: HttpConfig | None = None, **kwargs: Any
) -> None:
    """Run the HTTP transport (and the metrics listener, with ``metrics_port``) with uvicorn until cancelled."""
    import uvicorn

    cfg = http or app.config.server.http
    metrics = kwargs.pop("metrics", None) or ServerMetrics()
    asgi = build_http_app(app, http=cfg, metrics=metrics, **kwargs)
    servers = [
        uvicorn.Server(uvicorn.Config(asgi, host=host, port=port, log_level=log_level, lifespan="on", access_log=False))
    ]
    if cfg.metrics_path and cfg.metrics_port is not None:
        side = build_metrics_app(app, metrics, http=cfg, environ=kwargs.get("environ"), verifier=kwargs.get("verifier"))
        servers.append(
            uvicorn.Server(
                uvicorn.Config(
                    side, host=cfg.metrics_host, port=cfg.metrics_port, log_level=log_level, access_log=False
                )
            )
        )
    await asyncio.gather(*(server.serve() for server in servers))
