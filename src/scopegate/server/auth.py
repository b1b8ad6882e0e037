"""Bearer-token authentication of the HTTP transport.

:class:`BearerBackend` plugs the identity room's verifier
(:class:`scopegate.identity.Verifier`: token table, JWT, introspection) into
Starlette's ``AuthenticationMiddleware``. The MCP route is wrapped in
:class:`scopegate.server.resource_server.BearerGate`, so a request without a
valid token gets HTTP 401 (with ``WWW-Authenticate``) before any MCP message is
read and no tool runs.

The verified identity travels on the request (``scope["user"]``) as the SDK's
``AuthenticatedUser`` with the token's scopes; the MCP handlers read it per
request. The raw token is kept only in the request's ASGI scope, as a
:class:`~scopegate.context.SubjectToken` (masked ``repr``) for token exchange;
it is never put in session state, logs or downstream requests.
"""

from __future__ import annotations

import inspect
import logging
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, Protocol

from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser
from mcp.server.auth.provider import AccessToken
from starlette.authentication import AuthCredentials, AuthenticationBackend, BaseUser
from starlette.requests import HTTPConnection

from scopegate.context import SubjectToken
from scopegate.errors import IdentityError
from scopegate.identity.model import Identity
from scopegate.identity.table import MAX_TOKEN_CHARS, MIN_TOKEN_CHARS, TOO_SHORT
from scopegate.identity.tokens import Verification, VerifiedToken

log = logging.getLogger("scopegate.server.auth")

IDENTITY_CLAIM = "scopegate_identity"
SUBJECT_KEY = "scopegate.subject_token"  # ASGI scope: this request's verified SubjectToken
FAILURE_KEY = "scopegate.auth_failure"  # ASGI scope: why the presented token was refused
RETRY_KEY = "scopegate.auth_retry_after"  # ASGI scope: seconds until asking again may help (503)
MAX_HEADER_CHARS = 20_000


class Verifies(Protocol):
    async def verify(self, token: str) -> Verification: ...


def bearer_token(conn: HTTPConnection) -> str | None:
    header = conn.headers.get("authorization")
    if header is None:
        return None
    scheme, _, value = header.strip().partition(" ")
    if scheme.lower() != "bearer":
        return None
    return value.strip() or None


def access_token_for(verified: VerifiedToken, *, resource: str | None = None) -> AccessToken:
    """The SDK's AccessToken for a verified token; the raw token is not kept in it."""
    identity = verified.identity
    claims: dict[str, Any] = {IDENTITY_CLAIM: identity.as_dict()}
    if verified.issuer:
        claims["iss"] = verified.issuer
    return AccessToken(
        token="<redacted>",
        # The principal is the exact identity: an MCP session can only be used again by a token
        # that maps to the same tenant, user and groups.
        client_id=identity.principal(),
        scopes=sorted(verified.scopes),
        expires_at=int(verified.expires_at) if verified.expires_at is not None else None,
        subject=identity.user,
        resource=resource,
        claims=claims,
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


def scopes_of_user(user: BaseUser | None) -> frozenset[str]:
    return frozenset(user.access_token.scopes) if isinstance(user, AuthenticatedUser) else frozenset()


def route_path(conn: HTTPConnection) -> str:
    """The request path inside this app (a mount's prefix, ``root_path``, taken off), without a final /."""
    path = str(conn.scope.get("path", ""))
    root = str(conn.scope.get("root_path", ""))
    if root and path.startswith(root):
        path = path[len(root) :]
    return path.rstrip("/") or "/"


class BearerBackend(AuthenticationBackend):
    """Starlette backend: a valid bearer token -> ``AuthenticatedUser``; anything else -> anonymous."""

    def __init__(
        self,
        verifier: Verifies,
        on_failure: Callable[[str], None] | None = None,
        *,
        paths: frozenset[str] | None = None,
        resource: str | None = None,
    ) -> None:
        self.verifier = verifier
        self.on_failure = on_failure
        # Only these paths authenticate (others, e.g. /metrics, are not MCP and carry no identity).
        self.paths = paths
        self.resource = resource

    def _fail(self, conn: HTTPConnection, reason: str) -> None:
        conn.scope[FAILURE_KEY] = reason
        if reason == TOO_SHORT:  # an operator's mistake, not an attack: say what the rule is
            log.warning(
                "bearer token refused (HTTP 401): token too short; tokens must be %d to %d characters "
                "(docs: MCP server and identity)",
                MIN_TOKEN_CHARS,
                MAX_TOKEN_CHARS,
            )
        else:
            log.info("bearer token refused: %s", reason)
        if self.on_failure is not None:
            try:
                self.on_failure(reason)
            except Exception:
                log.exception("auth failure hook raised")

    async def authenticate(self, conn: HTTPConnection) -> tuple[AuthCredentials, BaseUser] | None:
        if self.paths is not None and route_path(conn) not in self.paths:
            return None
        if "access_token" in conn.query_params:  # tokens in the URI are refused outright (bearer_methods: header)
            self._fail(conn, "token_in_query")
            return None
        if "authorization" not in conn.headers:
            self._fail(conn, "missing")
            return None
        token = bearer_token(conn)
        if token is None or len(token) > MAX_HEADER_CHARS:
            self._fail(conn, "malformed")
            return None
        verdict = await self.verifier.verify(token)
        if verdict.token is None:
            if verdict.retry_after is not None:
                conn.scope[RETRY_KEY] = verdict.retry_after
            self._fail(conn, verdict.reason)
            return None
        subject: SubjectToken = verdict.token.subject_token(token)
        conn.scope[SUBJECT_KEY] = subject
        scopes = sorted(verdict.token.scopes)
        return AuthCredentials(scopes), AuthenticatedUser(access_token_for(verdict.token, resource=self.resource))


Authenticate = Callable[[HTTPConnection], Identity | Awaitable[Identity | None] | None]


class HostAuthBackend(AuthenticationBackend):
    """Starlette backend for an MCP app mounted inside a team's own app, behind the team's authentication.

    ``authenticate(request)`` is the host app's own check (the function its routes depend on): it returns
    the caller's :class:`Identity`, or None to refuse (HTTP 401, no MCP message read). The identity is the
    caller's scope, exactly as a verified token's would be; no token is kept or passed on.
    """

    def __init__(self, authenticate: Authenticate, *, paths: frozenset[str] | None = None) -> None:
        self.authenticate_request = authenticate
        self.paths = paths

    async def authenticate(self, conn: HTTPConnection) -> tuple[AuthCredentials, BaseUser] | None:
        if self.paths is not None and route_path(conn) not in self.paths:
            return None
        try:
            found = self.authenticate_request(conn)
            identity = await found if inspect.isawaitable(found) else found
        except Exception as exc:  # the host's check refused (e.g. its HTTPException) or failed: no identity
            conn.scope[FAILURE_KEY] = "host_auth_refused"
            log.info("host authentication refused the request: %s", type(exc).__name__)
            return None
        if identity is None:
            conn.scope[FAILURE_KEY] = "host_auth_refused"
            return None
        if not isinstance(identity, Identity):
            raise TypeError(f"authenticate must return a scopegate Identity or None, not {type(identity).__name__}")
        try:  # the same rules as any other source of scope: no control characters, no empty tenant
            identity = Identity.checked(identity.tenant, identity.user, identity.groups)
        except IdentityError as exc:
            conn.scope[FAILURE_KEY] = "host_auth_bad_identity"
            log.warning("host authentication returned an unusable identity: %s", exc)
            return None
        token = AccessToken(
            token="<host-authenticated>",
            client_id=identity.principal(),
            scopes=[],
            subject=identity.user,
            claims={IDENTITY_CLAIM: identity.as_dict()},
        )
        return AuthCredentials([]), AuthenticatedUser(token)
