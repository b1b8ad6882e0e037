"""Per-user downstream tokens: RFC 8693 token exchange at the provider, cached per user until expiry.

The MCP client's token is never sent downstream (the MCP authorization spec
forbids token passthrough). Instead, for a downstream API whose audience (or
resource) is configured, scopegate trades the caller's verified token at the
provider's token endpoint for a token *for that API*, authenticating as its own
client. The downstream API validates that token against the same provider and
enforces its own rules, so the caller's scope is checked twice.

* **Down-scoped.** The request names only the configured scopes the caller's
  token itself grants (Keycloak's standard token exchange grants any optional
  scope of the requesting client, whatever the subject token holds), so an
  exchange never widens what the user may do.
* **The right user.** The subject token must name the same tenant (and user,
  where session state carries one) as the call's scope; an unverified token
  (ADK) is verified first with the same verifier the server uses.
* **Cached** per (issuer, subject, audience/resource, scopes) until ``skew_s``
  before it expires, then exchanged again (the refresh); one request per key at
  a time; the cache is an LRU bounded by ``max_entries``.
* **Never logged.** Tokens live in :class:`~scopegate.openapi.runtime.credentials.Secret`
  values; log lines and errors carry the provider's error code only.

Failures are :class:`~scopegate.errors.CredentialUnavailable`: ``NOT_AUTHORIZED``
when the provider or the checks refuse, ``UNAVAILABLE`` (retryable) when the
provider cannot be reached. The tool then sends nothing.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

import httpx2
from authlib.integrations.base_client.errors import OAuthError

from scopegate.context import CallContext, SubjectToken
from scopegate.errors import CredentialUnavailable, ProviderUnavailable, ScopeMissing
from scopegate.identity.provider import Provider, check_endpoint
from scopegate.identity.tokens import Verification
from scopegate.scope import ScopeKeys, read_scope

log = logging.getLogger("scopegate.identity.exchange")

TOKEN_EXCHANGE = "urn:ietf:params:oauth:grant-type:token-exchange"
ACCESS_TOKEN = "urn:ietf:params:oauth:token-type:access_token"
DEFAULT_LIFETIME_S = 60.0  # when the provider does not say (expires_in missing)
MAX_TOKEN_CHARS = 16_384

_REFUSED = "The identity provider would not issue a token for this API to the signed-in user."
_UNREACHABLE = "The identity provider could not be reached to get a token for this API; try again later."
_NO_TOKEN = "This session has no signed-in user token, so no per-user credential for this API can be obtained."
_MISMATCH = "The signed-in user's token does not belong to this session's account."


class Verifies(Protocol):
    async def verify(self, token: str) -> Verification: ...


@dataclass(frozen=True)
class ExchangeTarget:
    """What the exchanged token is for: an ``audience`` (a client id) and/or a ``resource`` URI, and scopes."""

    audience: str | None = None
    resource: str | None = None
    scopes: tuple[str, ...] = ()

    def requested(self, granted: frozenset[str]) -> tuple[str, ...]:
        return tuple(s for s in self.scopes if s in granted)


@dataclass
class ExchangeStats:
    exchanges: int = 0
    cache_hits: int = 0
    refused: int = 0
    unavailable: int = 0


@dataclass(frozen=True)
class _Entry:
    token: str
    expires_at: float

    def __repr__(self) -> str:
        return f"_Entry('***', expires_at={self.expires_at})"


class TokenExchanger:
    """RFC 8693 token exchange for one downstream target (see the module docstring)."""

    def __init__(
        self,
        provider: Provider,
        target: ExchangeTarget,
        *,
        scope_keys: ScopeKeys,
        verifier: Verifies | None = None,
        endpoint: str | None = None,
        skew_s: float = 30.0,
        max_entries: int = 10_000,
        clock: Callable[[], float] = time.time,
    ) -> None:
        provider.oauth_client("token exchange")  # refuse at start-up without a client
        if target.audience is None and target.resource is None:
            raise ValueError("a token exchange target needs an audience or a resource")
        self.provider = provider
        self.target = target
        self.scope_keys = scope_keys
        self.verifier = verifier
        self.endpoint = check_endpoint(endpoint, "token endpoint") if endpoint else None
        self.skew_s = skew_s
        self.max_entries = max_entries
        self._clock = clock
        self._cache: OrderedDict[tuple[str, ...], _Entry] = OrderedDict()
        self._locks: dict[tuple[str, ...], asyncio.Lock] = {}
        self.stats = ExchangeStats()

    def __repr__(self) -> str:
        return f"TokenExchanger(audience={self.target.audience!r}, resource={self.target.resource!r})"

    # -- the credential-source protocol (scopegate.openapi.runtime.FromSubject) --------------
    async def credential_for(self, subject: SubjectToken | None, ctx: CallContext) -> str:
        subject = await self._checked(subject, ctx)
        scopes = self.target.requested(subject.scopes)
        if self.target.scopes and not scopes:
            self.stats.refused += 1
            raise CredentialUnavailable(
                "the caller's token grants none of the scopes the exchange asks for", public=_REFUSED
            )
        key = (subject.issuer or "", subject.subject or subject.user or "", self.target.audience or "",
               self.target.resource or "", " ".join(sorted(scopes)))  # fmt: skip
        entry = self._fresh(key)
        if entry is not None:
            self.stats.cache_hits += 1
            return entry.token
        lock = self._locks.setdefault(key, asyncio.Lock())
        try:
            async with lock:
                entry = self._fresh(key)
                if entry is not None:
                    self.stats.cache_hits += 1
                    return entry.token
                entry = await self._exchange(subject, scopes)
                self._cache[key] = entry
                self._cache.move_to_end(key)
                while len(self._cache) > self.max_entries:
                    self._cache.popitem(last=False)
                return entry.token
        finally:
            if not lock.locked():
                self._locks.pop(key, None)

    def forget(self, subject: str | None = None) -> None:
        """Drop cached tokens (of one subject, or all)."""
        for key in [k for k in self._cache if subject is None or k[1] == subject]:
            del self._cache[key]

    def _fresh(self, key: tuple[str, ...]) -> _Entry | None:
        entry = self._cache.get(key)
        if entry is None:
            return None
        if entry.expires_at - self.skew_s <= self._clock():
            del self._cache[key]
            return None
        self._cache.move_to_end(key)
        return entry

    async def _checked(self, subject: SubjectToken | None, ctx: CallContext) -> SubjectToken:
        if subject is None:
            raise CredentialUnavailable("no subject token in this call", public=_NO_TOKEN)
        if not subject.verified:
            if self.verifier is None:
                raise CredentialUnavailable("an unverified subject token and no verifier", public=_NO_TOKEN)
            verdict = await self.verifier.verify(subject.reveal())
            if verdict.token is None:
                unavailable = verdict.reason == "unavailable"
                raise CredentialUnavailable(
                    f"the subject token was refused: {verdict.reason}",
                    code="UNAVAILABLE" if unavailable else "NOT_AUTHORIZED",
                    retryable=unavailable,
                    public=_UNREACHABLE if unavailable else _NO_TOKEN,
                )
            subject = verdict.token.subject_token(subject.reveal())
        try:
            scope = read_scope(ctx.state, self.scope_keys)
        except ScopeMissing as exc:
            raise CredentialUnavailable(f"no scope in this call: {exc}", public=_MISMATCH) from exc
        if scope.tenant_id != subject.tenant or (scope.user_id is not None and scope.user_id != subject.user):
            raise CredentialUnavailable("the subject token names another tenant or user", public=_MISMATCH)
        return subject

    async def _exchange(self, subject: SubjectToken, scopes: tuple[str, ...]) -> _Entry:
        params: dict[str, Any] = {
            "subject_token": subject.reveal(),
            "subject_token_type": ACCESS_TOKEN,
            "requested_token_type": ACCESS_TOKEN,
        }
        if self.target.audience:
            params["audience"] = self.target.audience
        if self.target.resource:
            params["resource"] = self.target.resource
        if scopes:
            params["scope"] = " ".join(scopes)
        self.stats.exchanges += 1
        try:
            url = self.endpoint or await self.provider.endpoint("token_endpoint")
            oauth = self.provider.oauth_client("token exchange")
            try:
                token = await oauth.fetch_token(url, grant_type=TOKEN_EXCHANGE, **params)
            finally:
                oauth.token = None  # authlib keeps the last token on the client: not ours to keep
        except OAuthError as exc:
            self.stats.refused += 1
            log.warning("token exchange refused by the provider: %s", exc.error)
            raise CredentialUnavailable(f"token exchange refused: {exc.error}", public=_REFUSED) from None
        except (ProviderUnavailable, httpx2.HTTPError, ValueError) as exc:
            self.stats.unavailable += 1
            log.warning("token exchange failed: %s", type(exc).__name__)
            raise CredentialUnavailable(
                f"token exchange failed: {type(exc).__name__}", code="UNAVAILABLE", retryable=True, public=_UNREACHABLE
            ) from None
        value = token.get("access_token")
        issued = token.get("issued_token_type", ACCESS_TOKEN)
        if not isinstance(value, str) or not value or len(value) > MAX_TOKEN_CHARS or issued != ACCESS_TOKEN:
            self.stats.refused += 1
            raise CredentialUnavailable("the provider answered without a usable access token", public=_REFUSED)
        expires_in = token.get("expires_in")
        lifetime = float(expires_in) if isinstance(expires_in, (int, float)) and expires_in > 0 else DEFAULT_LIFETIME_S
        return _Entry(value, self._clock() + lifetime)
