"""The identity room's entry point: a bearer token -> a :class:`Verification`.

:class:`Verifier` asks its checks in order (a token table, JWT verification,
introspection, ...); the first that applies decides. A JWT-shaped token goes to
the JWT verifier when one is configured; anything else (or every token, when no
JWT verifier is configured) to introspection. The same verifier serves the MCP
server's HTTP transport and an ADK binding's token source
(:meth:`Verifier.identity` is a ``verify(token) -> Identity | None`` function).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence

from scopegate.identity.model import Identity
from scopegate.identity.tokens import TokenCheck, Verification

MAX_TOKEN_CHARS = 20_000
# Refusals that let the next check try the token (a token-table rule does not bind an identity provider).
PASS_ON = frozenset({"unknown_token", "token_too_short"})
Closer = Callable[[], Awaitable[None]]


class Verifier:
    def __init__(self, checks: Sequence[TokenCheck], *, closers: Sequence[Closer] = ()) -> None:
        self.checks = tuple(checks)
        self._closers = tuple(closers)

    async def verify(self, token: str) -> Verification:
        if not token or len(token) > MAX_TOKEN_CHARS or not token.isascii() or any(c.isspace() for c in token):
            return Verification.refused("malformed")
        last = "unknown_token"
        for check in self.checks:
            verdict = await check.check(token)
            if verdict is None:
                continue
            if verdict.ok or verdict.reason not in PASS_ON:
                return verdict
            last = verdict.reason if last == "unknown_token" else last  # the more specific reason stays
        return Verification.refused(last)

    async def identity(self, token: str) -> Identity | None:
        """The verified identity of ``token``, or None (an ADK :class:`TokenSource`'s ``verify``)."""
        verdict = await self.verify(token)
        return verdict.token.identity if verdict.token is not None else None

    async def aclose(self) -> None:
        for close in self._closers:
            await close()
