"""Per-tenant session quotas for the streamable-HTTP transport.

The SDK's session manager caps open (handshake-era) sessions at
``max_sessions`` for the whole server, so one tenant opening sessions could
lock every other tenant out until its sessions idle out. Here each tenant may
hold at most ``max_sessions_per_tenant`` of them; the next one it opens is
refused like a full server (HTTP 503), and other tenants are unaffected.

The tenant of a request is the verified identity on it (``scope["user"]``),
put in a context variable by :class:`TenantOfRequest` in front of the manager.
Sessionless requests (stateless mode, protocol 2026-07-28) open no session and
are not counted.
"""

from __future__ import annotations

import contextvars
import logging
from collections import Counter
from typing import Any

from mcp.server.auth.middleware.bearer_auth import AuthorizationContext
from mcp.server.streamable_http import StreamableHTTPServerTransport
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from starlette.types import ASGIApp, Receive, Scope, Send

from scopegate.server.auth import identity_of_user

log = logging.getLogger("scopegate.server.sessions")

_tenant: contextvars.ContextVar[str | None] = contextvars.ContextVar("scopegate_request_tenant", default=None)


class TenantOfRequest:
    """ASGI middleware: the verified tenant of the request, for :class:`TenantQuotaSessionManager`."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        identity = identity_of_user(scope.get("user")) if scope["type"] == "http" else None
        token = _tenant.set(identity.tenant if identity is not None else None)
        try:
            await self.app(scope, receive, send)
        finally:
            _tenant.reset(token)


class TenantQuotaSessionManager(StreamableHTTPSessionManager):
    """The SDK's session manager, plus at most ``max_sessions_per_tenant`` open sessions per tenant."""

    def __init__(self, *args: Any, max_sessions_per_tenant: int | None = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.max_sessions_per_tenant = max_sessions_per_tenant
        self._tenant_of: dict[str, str] = {}
        self.open_by_tenant: Counter[str] = Counter()

    def _admit_session(self, requestor: AuthorizationContext | None) -> StreamableHTTPServerTransport | None:
        tenant = _tenant.get()
        quota = self.max_sessions_per_tenant
        if tenant is not None and quota is not None and self.open_by_tenant[tenant] >= quota:
            log.warning("refusing a new session: the tenant already holds %d (max_sessions_per_tenant)", quota)
            return None
        transport = super()._admit_session(requestor)
        if transport is not None and tenant is not None and transport.mcp_session_id is not None:
            self._tenant_of[transport.mcp_session_id] = tenant
            self.open_by_tenant[tenant] += 1
        return transport

    async def _discard_session(self, session_id: str, transport: StreamableHTTPServerTransport) -> None:
        tenant = self._tenant_of.pop(session_id, None)
        if tenant is not None:
            self.open_by_tenant[tenant] -= 1
            if self.open_by_tenant[tenant] <= 0:
                del self.open_by_tenant[tenant]
        await super()._discard_session(session_id, transport)
