"""The orders API as its own OAuth resource server: it accepts only tokens the provider issued *for it*.

With :class:`OidcSettings`, a bearer JWT must verify against the provider's
JWKS (PyJWT's ``PyJWKClient``), name the configured issuer, carry the API's
audience (``orders-api``) and a customer claim, and grant ``orders:read`` for
reads or ``orders:write`` for changes. The service then enforces ownership
itself (a customer sees only their own orders), so a per-user token cannot
read another customer's order however the calling tool is configured. A token
for another audience (say the MCP server's own token, passed through) is
refused with 401. Bearer tokens that are not JWTs keep the seed tokens'
meaning (the tests of the service-credential set-up).
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable, MutableMapping
from dataclasses import dataclass
from typing import Any

import jwt

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

PRINCIPAL_KEY = "orders.oidc_principal"
READ_METHODS = frozenset({"GET", "HEAD"})


@dataclass(frozen=True)
class OidcSettings:
    issuer: str
    jwks_url: str
    audience: str = "orders-api"
    customer_claim: str = "customer_id"
    read_scope: str = "orders:read"
    write_scope: str = "orders:write"


class OidcMiddleware:
    """Verifies bearer JWTs and records ``("customer", id)`` in the ASGI scope; refuses bad ones itself."""

    def __init__(self, app: ASGIApp, settings: OidcSettings) -> None:
        self.app = app
        self.settings = settings
        self.jwks = jwt.PyJWKClient(settings.jwks_url, cache_keys=True, lifespan=60, timeout=5)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["path"].startswith("/_control"):
            await self.app(scope, receive, send)
            return
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope.get("headers", [])}
        auth = headers.get("authorization", "")
        token = auth[len("Bearer ") :] if auth.startswith("Bearer ") else ""
        if token.count(".") != 2:
            await self.app(scope, receive, send)
            return
        s = self.settings
        try:
            key = await asyncio.to_thread(self.jwks.get_signing_key_from_jwt, token)
            claims = jwt.decode(
                token, key, algorithms=["RS256"], audience=s.audience, issuer=s.issuer,
                options={"require": ["exp", "iss", "aud"]},
            )  # fmt: skip
        except jwt.PyJWTError as exc:
            await _reply(send, 401, f"invalid token: {type(exc).__name__}")
            return
        customer = claims.get(s.customer_claim)
        if not isinstance(customer, str) or not customer:
            await _reply(send, 403, "the token names no customer")
            return
        granted = set(str(claims.get("scope", "")).split())
        needed = s.read_scope if scope["method"] in READ_METHODS else s.write_scope
        if needed not in granted:
            await _reply(send, 403, f"insufficient_scope: needs {needed}")
            return
        scope[PRINCIPAL_KEY] = ("customer", customer)
        await self.app(scope, receive, send)


async def _reply(send: Send, status: int, detail: str) -> None:
    body = json.dumps({"detail": detail}).encode()
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
    if status == 401:
        headers.append((b"www-authenticate", b'Bearer error="invalid_token"'))
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})
