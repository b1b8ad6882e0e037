"""Signing keys for JWT verification: a fixed key set, or a remote JWKS with caching and rotation.

:class:`RemoteKeySet` fetches the provider's JWKS (``jwks_uri``, configured or
from the provider's metadata) with the provider's HTTP client and keeps it for
``cache_s``. A token signed with a ``kid`` the cached set lacks triggers one
refresh, at most once per ``min_refresh_s`` (a flood of tokens with made-up
``kid``s costs the provider one request per interval, not one per token);
concurrent refreshes are one request. A rotated key is therefore picked up
without a restart, and a key removed at the provider stops verifying once the
cached set expires. A token with an unknown ``kid`` that arrives while the
refresh interval has not passed is not called invalid: it may be signed with a
key the provider has just rotated in. :class:`~scopegate.errors.KeyRefreshPending`
(HTTP 503 with ``Retry-After``) tells the client to retry once the set may be
fetched again, rather than to throw its token away. When a refresh fails the
previous set is kept (the provider's outage is not every user's outage) until
``max_stale_s``.

Only asymmetric signing keys are used: keys marked ``use: enc`` and symmetric
(``oct``) keys in a published set are skipped. Parsing and signature
verification are PyJWT's (:class:`jwt.PyJWKSet`, :class:`jwt.PyJWK`).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import jwt
from jwt import PyJWK, PyJWKSet

from scopegate.errors import KeyRefreshPending, ProviderUnavailable

log = logging.getLogger("scopegate.identity.jwks")

SIGNING_KEY_TYPES = frozenset({"RSA", "EC", "OKP"})


class KeySource(Protocol):
    async def key_for(self, kid: str | None) -> PyJWK | None:
        """The key for ``kid`` (None: the only key), or None when there is none; ProviderUnavailable if unknowable."""
        ...


def signing_keys(data: Mapping[str, Any], *, allow_symmetric: bool = False) -> dict[str | None, PyJWK]:
    """The usable signing keys of a JWKS document, by ``kid`` (None for keys without one)."""
    raw = data.get("keys")
    if not isinstance(raw, list):
        raise ProviderUnavailable("the JWKS has no 'keys' list")
    usable = [
        k
        for k in raw
        if isinstance(k, dict)
        and k.get("use", "sig") == "sig"
        and (k.get("kty") in SIGNING_KEY_TYPES or (allow_symmetric and k.get("kty") == "oct"))
    ]
    if not usable:
        raise ProviderUnavailable("the JWKS holds no usable signing keys")
    try:
        keyset = PyJWKSet(usable)
    except (jwt.PyJWKSetError, jwt.PyJWKError, jwt.InvalidKeyError) as exc:
        raise ProviderUnavailable(f"the JWKS could not be read: {exc}") from exc
    return {key.key_id: key for key in keyset.keys}


def pick(keys: Mapping[str | None, PyJWK], kid: str | None) -> PyJWK | None:
    if kid is not None:
        return keys.get(kid)
    return next(iter(keys.values())) if len(keys) == 1 else None


class StaticKeySet:
    """Keys from a file, loaded once."""

    def __init__(self, data: Mapping[str, Any]) -> None:
        self.keys = signing_keys(data, allow_symmetric=False)

    async def key_for(self, kid: str | None) -> PyJWK | None:
        return pick(self.keys, kid)


@dataclass
class JwksStats:
    fetches: int = 0
    failures: int = 0
    refreshes_refused: int = 0  # unknown kids that arrived before the next refresh was allowed


Fetch = Callable[[], Awaitable[Mapping[str, Any]]]


class RemoteKeySet:
    """A provider's JWKS, cached, refreshed on an unknown ``kid`` (rate-limited) and on expiry."""

    def __init__(
        self,
        fetch: Fetch,
        *,
        cache_s: float = 300.0,
        min_refresh_s: float = 10.0,
        max_stale_s: float = 3600.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._fetch = fetch
        self.cache_s = cache_s
        self.min_refresh_s = min_refresh_s
        self.max_stale_s = max(max_stale_s, cache_s)
        self._clock = clock
        self._keys: dict[str | None, PyJWK] = {}
        self._fetched_at: float | None = None
        self._attempted_at: float | None = None
        self._generation = 0
        self._lock = asyncio.Lock()
        self.stats = JwksStats()

    @property
    def kids(self) -> Sequence[str | None]:
        return list(self._keys)

    def _age(self) -> float:
        return float("inf") if self._fetched_at is None else self._clock() - self._fetched_at

    async def _refresh(self, seen_generation: int) -> None:
        """Fetch again, unless another task did since ``seen_generation`` or a fetch ran too recently.

        Keeps the old set when the fetch fails (until ``max_stale_s``). Callers that arrive while a fetch
        is running wait for it instead of fetching again.
        """
        async with self._lock:
            if self._generation != seen_generation or not self._may_refresh():
                return
            self._attempted_at = self._clock()
            self.stats.fetches += 1
            try:
                keys = signing_keys(await self._fetch())
            except ProviderUnavailable:
                self.stats.failures += 1
                if self._keys and self._age() <= self.max_stale_s:
                    log.warning("JWKS refresh failed; using the cached keys (%.0fs old)", self._age(), exc_info=True)
                return
            finally:
                self._generation += 1
            self._keys = keys
            self._fetched_at = self._clock()

    def _may_refresh(self) -> bool:
        if self._attempted_at is None:
            return True
        # With no keys at all, retry sooner: every request is failing meanwhile.
        interval = self.min_refresh_s if self._keys else min(self.min_refresh_s, 5.0)
        return self._clock() - self._attempted_at >= interval

    async def key_for(self, kid: str | None) -> PyJWK | None:
        seen = self._generation
        if self._age() >= self.cache_s:
            await self._refresh(seen)
        if not self._keys or self._age() > self.max_stale_s:
            raise ProviderUnavailable("no signing keys: the provider's JWKS could not be fetched")
        found = pick(self._keys, kid)
        if found is not None or kid is None or self._generation != seen:  # fetched just now: it is not there
            return found
        if not self._may_refresh():
            self.stats.refreshes_refused += 1
            assert self._attempted_at is not None
            raise KeyRefreshPending(self._attempted_at + self.min_refresh_s - self._clock())
        await self._refresh(seen)
        return pick(self._keys, kid)
