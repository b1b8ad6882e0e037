"""The caller's bearer token for the duration of one HTTP request (pure ASGI, no framework).

ADK's FastAPI server (``get_fast_api_app``, what ``adk deploy cloud_run``
serves) gives plugins no access to request headers. Put this middleware in
front of it and the scope binding's :class:`~scopegate.identity.sources.TokenSource`
reads the token the request carried::

    app = get_fast_api_app(agents_dir=..., web=False)
    app.add_middleware(BearerTokenMiddleware)

The middleware only carries the token; verifying it is the source's job (a
request without a valid token gets an invocation in which every scopegate tool
answers ``NO_SCOPE``). Tasks started while the request is handled (ADK runs
each ``/run`` in its own task) inherit the value.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, MutableMapping
from contextvars import ContextVar
from typing import Any

__all__ = ["MAX_TOKEN_CHARS", "BearerTokenMiddleware", "current_bearer_token"]

MAX_TOKEN_CHARS = 16_384
_TOKEN: ContextVar[str | None] = ContextVar("scopegate_bearer_token", default=None)

Scope = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[MutableMapping[str, Any]]]
Send = Callable[[MutableMapping[str, Any]], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]


def current_bearer_token() -> str | None:
    """The bearer token of the HTTP request being handled, if the middleware saw one."""
    return _TOKEN.get()


def bearer_token(headers: Any, header: bytes = b"authorization") -> str | None:
    """The token of an ``Authorization: Bearer <token>`` header in ASGI headers, else None."""
    for name, value in headers or ():
        if bytes(name).lower() != header:
            continue
        text = bytes(value).decode("latin-1").strip()
        scheme, _, token = text.partition(" ")
        token = token.strip()
        if scheme.lower() == "bearer" and token and len(token) <= MAX_TOKEN_CHARS and " " not in token:
            return token
        return None
    return None


class BearerTokenMiddleware:
    """Makes the request's bearer token available to :func:`current_bearer_token`."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope.get("type") not in ("http", "websocket"):
            await self.app(scope, receive, send)
            return
        token = _TOKEN.set(bearer_token(scope.get("headers")))
        try:
            await self.app(scope, receive, send)
        finally:
            _TOKEN.reset(token)
