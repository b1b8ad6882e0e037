"""Opaque access tokens: RFC 7662 introspection at the provider, cached for a bounded time.

The request authenticates as scopegate's own client (authlib's client
authentication). An answer is accepted only when ``active`` is ``true``, ``exp``
(if given) is in the future, ``iss`` (if given) is the configured issuer, and
``aud`` names one of the accepted audiences: an active token issued for another
resource is refused like any other (RFC 8707). Claims map to an identity and
scopes exactly as JWT claims do.

Answers are cached by the token's SHA-256 (the token itself is not kept):
accepted ones for ``cache_s`` or until the token expires, whichever is first,
refused ones for ``inactive_cache_s``. So a token revoked at the provider is
refused at the latest ``cache_s`` later; set ``cache_s`` to what you can accept.
The cache is an LRU bounded by ``max_entries``; concurrent checks of one token
make one request. A provider that cannot be reached gives ``unavailable``
(not cached).
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
import time
from collections import OrderedDict
from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any

import httpx2

from scopegate.errors import ProviderUnavailable
from scopegate.identity.provider import Provider, check_endpoint
from scopegate.identity.tokens import AcceptedAudiences, Verification, accepted

if TYPE_CHECKING:  # config types only: the identity room does not import the config at run time
    from scopegate.config.model import ClaimMap

log = logging.getLogger("scopegate.identity.introspection")

MAX_TOKEN_CHARS = 16_384
MAX_RESPONSE_BYTES = 256 * 1024


class Introspector:
    """RFC 7662 token introspection with a bounded cache (see the module docstring)."""

    def __init__(
        self,
        provider: Provider,
        *,
        claims: ClaimMap,
        audiences: Iterable[str],
        endpoint: str | None = None,
        issuer: str | None = None,
        scope_claim: str = "scope",
        cache_s: float = 60.0,
        inactive_cache_s: float = 10.0,
        max_entries: int = 10_000,
        leeway_s: float = 0.0,
        clock: Callable[[], float] = time.monotonic,
        wall: Callable[[], float] = time.time,
    ) -> None:
        provider.oauth_client("introspection")  # refuse at start-up without a client
        self.provider = provider
        self.claims = claims
        self.audiences = AcceptedAudiences(audiences)
        self.endpoint = check_endpoint(endpoint, "introspection endpoint") if endpoint else None
        self.issuer = issuer
        self.scope_claim = scope_claim
        self.cache_s = cache_s
        self.inactive_cache_s = inactive_cache_s
        self.max_entries = max_entries
        self.leeway_s = leeway_s
        self._clock = clock
        self._wall = wall
        self._cache: OrderedDict[bytes, tuple[Verification, float]] = OrderedDict()
        self._inflight: dict[bytes, asyncio.Future[Verification]] = {}
        self.requests = 0

    async def check(self, token: str) -> Verification | None:
        return await self.verify(token)

    async def verify(self, token: str) -> Verification:
        if not token or len(token) > MAX_TOKEN_CHARS:
            return Verification.refused("malformed" if not token else "too_long")
        key = hashlib.sha256(token.encode("utf-8", "surrogatepass")).digest()
        cached = self._cache.get(key)
        now = self._clock()
        if cached is not None:
            if cached[1] > now:
                self._cache.move_to_end(key)
                return cached[0]
            del self._cache[key]
        task = self._inflight.get(key)
        if task is None:  # one request per token, however many callers wait for it
            task = asyncio.ensure_future(self._ask(token))
            self._inflight[key] = task
            task.add_done_callback(lambda _done: self._inflight.pop(key, None))
        result = await asyncio.shield(task)
        self._remember(key, result)
        return result

    def _remember(self, key: bytes, result: Verification) -> None:
        if result.reason == "unavailable":
            return
        ttl = self.cache_s if result.ok else self.inactive_cache_s
        token = result.token
        if token is not None and token.expires_at is not None:
            ttl = min(ttl, token.expires_at - self._wall())
        if ttl <= 0:
            return
        self._cache[key] = (result, self._clock() + ttl)
        self._cache.move_to_end(key)
        while len(self._cache) > self.max_entries:
            self._cache.popitem(last=False)

    async def _ask(self, token: str) -> Verification:
        try:
            url = self.endpoint or await self.provider.endpoint("introspection_endpoint")
            oauth = self.provider.oauth_client("introspection")
            self.requests += 1
            resp = await oauth.introspect_token(url, token=token, token_type_hint="access_token")
            if resp.status_code != 200:
                raise ProviderUnavailable(f"introspection answered HTTP {resp.status_code}")
            if len(resp.content) > MAX_RESPONSE_BYTES:
                raise ProviderUnavailable("the introspection response is too large")
            data = json.loads(resp.content)
        except (httpx2.HTTPError, ValueError) as exc:
            log.warning("token introspection failed: %s", type(exc).__name__)
            return Verification.refused("unavailable")
        except ProviderUnavailable as exc:
            log.warning("token introspection failed: %s", exc)
            return Verification.refused("unavailable")
        if not isinstance(data, dict):
            return Verification.refused("unavailable")
        return self._judge(data)

    def _judge(self, data: Mapping[str, Any]) -> Verification:
        if data.get("active") is not True:
            return Verification.refused("inactive")
        now = self._wall()
        exp, nbf = data.get("exp"), data.get("nbf")
        if exp is not None and (not isinstance(exp, (int, float)) or exp + self.leeway_s <= now):
            return Verification.refused("expired")
        if isinstance(nbf, (int, float)) and nbf - self.leeway_s > now:
            return Verification.refused("not_yet_valid")
        if self.issuer is not None and data.get("iss") is not None and data.get("iss") != self.issuer:
            return Verification.refused("bad_issuer")
        if not self.audiences.match(data):
            return Verification.refused("bad_audience")
        return accepted(data, "introspection", self.claims, self.scope_claim, issuer=self.issuer)
