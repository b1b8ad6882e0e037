"""Where a hand-written tool's downstream credential comes from: a provider scopegate calls, never the model.

A :data:`CredentialProvider` takes the call's :class:`~scopegate.context.CallContext` and returns
the credential for *this* caller (a :class:`~scopegate.openapi.runtime.credentials.Credential`,
a plain token string, a ``(username, password)`` pair) or ``None`` when there is none (the tool
then answers ``NOT_AUTHORIZED`` and does not run). It may be sync or async.

This is the hook a per-user token exchange plugs into: a provider that exchanges the caller's
verified identity for a downstream token (``scopegate.identity``) is passed as
``credentials=`` when the tool is bound, or named in the config. The two built-in providers
read a session-state key (the signed-in user's own token) or a service secret.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from scopegate.context import CallContext
from scopegate.openapi.runtime.credentials import Credential, ProvidedValue, Secret, provided_credential

CredentialProvider = Callable[[CallContext], Awaitable[ProvidedValue] | ProvidedValue]


async def resolve_credential(provider: CredentialProvider, ctx: CallContext) -> Credential | None:
    """The provider's answer as a :class:`Credential`, or None (missing, blank or not printable ASCII)."""
    return await provided_credential(provider(ctx))


@dataclass(frozen=True)
class FromState:
    """The credential is in session state under ``key`` (delegated: the signed-in user's own token)."""

    key: str
    username_key: str | None = None

    def __call__(self, ctx: CallContext) -> Credential | None:
        value = ctx.state.get(self.key)
        if not isinstance(value, str):
            return None
        username = ctx.state.get(self.username_key) if self.username_key is not None else None
        if self.username_key is not None and not isinstance(username, str):
            return None
        return Credential(Secret(value), username=username if isinstance(username, str) else None)


@dataclass(frozen=True)
class Fixed:
    """A service credential read once at start-up (from the environment, a vault)."""

    credential: Credential

    def __call__(self, ctx: CallContext) -> Credential:
        return self.credential
