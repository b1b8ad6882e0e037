"""Verified identity sources: where a trusted scope binding gets the caller's identity.

A binding (the ADK plugin in :mod:`scopegate.adapters.adk_scope`, later the
MCP server too) asks its source once per invocation::

    identity = await source.resolve(IdentityRequest(app_name, user_id, session_id, invocation_id, state, token))

and writes the answer where clients cannot. ``None`` means "no verified
identity": every scopegate tool then answers ``NO_SCOPE``. Sources:

* :class:`TokenSource`: a bearer token the caller presented, verified by a
  function you supply (a JWT/JWKS verifier, an introspection call, the MCP
  server's token table). The OAuth resource-server work plugs in here.
* :class:`UserDirectory`: a server-side lookup by the user id of the session,
  for deployments where that id is authenticated before it reaches ADK
  (your own Runner, a proxy that checks it, Agent Engine called only by your
  backend).
* :class:`SignedStateSource`: a scope the server signed into the session's state
  (:mod:`scopegate.identity.signing`).
* :class:`FunctionSource`: any application function of the request.

``request.state`` is the session state as the invocation starts: clients can
write it, so a source must never trust a value from it without verifying it
(as :class:`SignedStateSource` does).
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from scopegate.identity.model import Identity
from scopegate.identity.signing import SIGNED_SCOPE_KEY, KeyRing

__all__ = [
    "FunctionSource",
    "IdentityRequest",
    "IdentitySource",
    "SignedStateSource",
    "TokenSource",
    "UserDirectory",
    "as_source",
]


@dataclass(frozen=True)
class IdentityRequest:
    """What a binding knows when an invocation starts."""

    app_name: str
    user_id: str
    session_id: str
    invocation_id: str
    # Session state as the invocation starts. Client-writable: verify before trusting anything in it.
    state: Mapping[str, Any] = field(default_factory=dict, repr=False)
    # A bearer token the caller presented (request header via middleware, or the run's temp token key).
    token: str | None = field(default=None, repr=False)


@runtime_checkable
class IdentitySource(Protocol):
    async def resolve(self, request: IdentityRequest) -> Identity | None:
        """The verified identity of this caller, or None (every tool then refuses with NO_SCOPE)."""
        ...


Answer = Identity | None | Awaitable[Identity | None]


async def _call(fn: Callable[..., Any], *args: Any) -> Identity | None:
    """Call a sync or async application function; sync ones run off the event loop."""
    if inspect.iscoroutinefunction(fn):
        result = await fn(*args)
    else:
        result = await asyncio.to_thread(fn, *args)
        if inspect.isawaitable(result):
            result = await result
    if result is not None and not isinstance(result, Identity):
        raise TypeError(f"an identity source returned {type(result).__name__}, not Identity or None")
    return result


class FunctionSource:
    """An application function ``fn(request) -> Identity | None`` (sync or async)."""

    def __init__(self, fn: Callable[[IdentityRequest], Answer]) -> None:
        self.fn = fn

    async def resolve(self, request: IdentityRequest) -> Identity | None:
        return await _call(self.fn, request)


class UserDirectory:
    """A server-side lookup by the session's user id: a mapping or a function ``user_id -> Identity | None``.

    Only as trustworthy as whatever authenticated that user id: ``adk api_server``
    takes it from the URL, unauthenticated.
    """

    def __init__(self, lookup: Mapping[str, Identity] | Callable[[str], Answer]) -> None:
        self.lookup = lookup

    async def resolve(self, request: IdentityRequest) -> Identity | None:
        if isinstance(self.lookup, Mapping):
            found = self.lookup.get(request.user_id)
            return found if isinstance(found, Identity) else None
        return await _call(self.lookup, request.user_id)


class TokenSource:
    """A presented bearer token, verified by ``verify(token) -> Identity | None`` (sync or async).

    ``verify`` must check the token cryptographically (signature, issuer,
    audience, expiry) or against a server-side table; no token, or a token it
    refuses, means no identity. With ``require_user_match`` the token's user
    must equal the session's user id, so a valid token cannot drive another
    user's session.
    """

    def __init__(self, verify: Callable[[str], Answer], *, require_user_match: bool = False) -> None:
        self.verify = verify
        self.require_user_match = require_user_match

    async def resolve(self, request: IdentityRequest) -> Identity | None:
        if not request.token:
            return None
        identity = await _call(self.verify, request.token)
        if identity is not None and self.require_user_match and identity.user != request.user_id:
            return None
        return identity


class SignedStateSource:
    """The scope the server signed into this session's state (see :mod:`scopegate.identity.signing`)."""

    def __init__(self, ring: KeyRing, *, key: str = SIGNED_SCOPE_KEY) -> None:
        self.ring = ring
        self.key = key

    async def resolve(self, request: IdentityRequest) -> Identity | None:
        # Raises SignatureInvalid with the reason; the binding logs it and binds "no identity".
        return self.ring.verify(
            request.state.get(self.key),
            app_name=request.app_name,
            user_id=request.user_id,
            session_id=request.session_id,
        )


def as_source(value: Any) -> IdentitySource:
    """An :class:`IdentitySource` from a source, a mapping (a user directory) or a function of the request."""
    if isinstance(value, IdentitySource):
        return value
    if isinstance(value, Mapping):
        return UserDirectory(value)
    if callable(value):
        return FunctionSource(value)
    raise TypeError(f"not an identity source: {type(value).__name__}")
