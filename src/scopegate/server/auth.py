"""Bearer-token authentication of the HTTP transport.

:class:`BearerVerifier` turns a presented token into an :class:`Identity`
(token table first, then JWT). :class:`BearerBackend` plugs it into
Starlette's ``AuthenticationMiddleware``; the MCP route is wrapped in the
SDK's ``RequireAuthMiddleware``, so a request without a valid token gets
HTTP 401 before any MCP message is read and no tool runs.

The verified identity travels on the request (``scope["user"]``) as the SDK's
``AuthenticatedUser``; the MCP handlers read it per request. The token itself
is never put in session state, logs or downstream requests.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser
from mcp.server.auth.provider import AccessToken
from starlette.authentication import AuthCredentials, AuthenticationBackend, BaseUser
from starlette.requests import HTTPConnection

from scopegate.config.model import AuthConfig
from scopegate.errors import ConfigError
from scopegate.server.identity import Identity
from scopegate.server.jwt_auth import JwtVerifier
from scopegate.server.token_table import MAX_TOKEN_CHARS, TokenTable

log = logging.getLogger("scopegate.server.auth")

IDENTITY_CLAIM = "scopegate_identity"
MAX_HEADER_CHARS = 20_000


@dataclass(frozen=True)
class Verified:
    identity: Identity | None
    reason: str
    expires_at: float | None = None
    issuer: str | None = None


class BearerVerifier:
    """Token table and/or JWT verification, configured from the ``auth`` section."""

    def __init__(self, table: TokenTable | None = None, jwt_verifier: JwtVerifier | None = None) -> None:
        if table is None and jwt_verifier is None:
            raise ConfigError("HTTP needs auth: configure auth.jwt and/or auth.token_table")
        self.table = table
        self.jwt = jwt_verifier

    @classmethod
    def from_config(cls, cfg: AuthConfig, environ: Mapping[str, str] | None = None) -> BearerVerifier:
        table = TokenTable.load(cfg.token_table) if cfg.token_table is not None else None
        jwt_verifier = JwtVerifier(cfg.jwt, environ) if cfg.jwt is not None else None
        return cls(table, jwt_verifier)

    def verify(self, token: str) -> Verified:
        if not token or len(token) > MAX_HEADER_CHARS:
            return Verified(None, "malformed")
        reason = "unknown_token"
        if self.table is not None and len(token) <= MAX_TOKEN_CHARS:
            identity, reason, expires = self.table.lookup(token)
            if identity is not None or reason == "expired":
                return Verified(identity, reason, expires)
        if self.jwt is not None and token.count(".") == 2:
            result = self.jwt.verify(token)
            expires = result.claims.get("exp") if result.claims else None
            issuer = result.claims.get("iss") if result.claims else None
            return Verified(
                result.identity,
                result.reason,
                float(expires) if isinstance(expires, (int, float)) else None,
                str(issuer) if issuer is not None else None,
            )
        return Verified(None, reason)


def bearer_token(conn: HTTPConnection) -> str | None:
    header = conn.headers.get("authorization")
    if header is None:
        return None
    scheme, _, value = header.strip().partition(" ")
    if scheme.lower() != "bearer":
        return None
    return value.strip() or None


def access_token_for(verified: Verified) -> AccessToken:
    """The SDK's AccessToken for a verified identity; the raw token is not kept."""
    assert verified.identity is not None
    identity = verified.identity
    return AccessToken(
        token="<redacted>",
        # The principal is the exact identity: an MCP session can only be used again by a token
        # that maps to the same tenant, user and groups.
        client_id=identity.principal(),
        scopes=[],
        expires_at=int(verified.expires_at) if verified.expires_at is not None else None,
        subject=identity.user,
        claims={IDENTITY_CLAIM: identity.as_dict(), **({"iss": verified.issuer} if verified.issuer else {})},
    )


def identity_of_user(user: BaseUser | None) -> Identity | None:
    """The identity the backend attached to a request, or None."""
    if not isinstance(user, AuthenticatedUser):
        return None
    claims = user.access_token.claims or {}
    raw = claims.get(IDENTITY_CLAIM)
    if not isinstance(raw, Mapping):
        return None
    return Identity(tenant=str(raw["tenant"]), user=raw.get("user"), groups=tuple(raw.get("groups") or ()))


class BearerBackend(AuthenticationBackend):
    """Starlette backend: a valid bearer token -> ``AuthenticatedUser``; anything else -> anonymous."""

    def __init__(
        self,
        verifier: BearerVerifier,
        on_failure: Callable[[str], None] | None = None,
        *,
        paths: frozenset[str] | None = None,
    ) -> None:
        self.verifier = verifier
        self.on_failure = on_failure
        # Only these paths authenticate (others, e.g. /metrics, are not MCP and carry no identity).
        self.paths = paths

    def _fail(self, reason: str) -> None:
        log.info("bearer token refused: %s", reason)
        if self.on_failure is not None:
            try:
                self.on_failure(reason)
            except Exception:
                log.exception("auth failure hook raised")

    async def authenticate(self, conn: HTTPConnection) -> tuple[AuthCredentials, BaseUser] | None:
        if self.paths is not None and conn.url.path.rstrip("/") not in self.paths:
            return None
        token = bearer_token(conn)
        if token is None:
            self._fail("missing")
            return None
        verified = self.verifier.verify(token)
        if verified.identity is None:
            self._fail(verified.reason)
            return None
        return AuthCredentials([]), AuthenticatedUser(access_token_for(verified))
