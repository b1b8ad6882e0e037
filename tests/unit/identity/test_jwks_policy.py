"""The JWKS cache policy: one fetch for many callers, a rate-limited refresh on unknown kids, rotation, staleness.

The fetch is a plain function returning documents and the clock is injected: the policy is what is tested.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Mapping
from typing import Any

import jwt
import pytest
from cryptography.hazmat.primitives.asymmetric import rsa

from scopegate.errors import KeyRefreshPending, ProviderUnavailable
from scopegate.identity.jwks import RemoteKeySet, signing_keys


def jwk(kid: str, use: str = "sig") -> dict[str, Any]:
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    data: dict[str, Any] = json.loads(jwt.algorithms.RSAAlgorithm.to_jwk(key.public_key()))
    data.update(kid=kid, alg="RS256", use=use)
    return data


K1, K2 = jwk("k1"), jwk("k2")


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


class Provider:
    """The documents a provider serves, one per fetch; an exception instance is raised instead."""

    def __init__(self, *docs: Mapping[str, Any] | Exception) -> None:
        self.docs = list(docs)
        self.fetches = 0

    async def fetch(self) -> Mapping[str, Any]:
        self.fetches += 1
        await asyncio.sleep(0)
        doc = self.docs[min(self.fetches, len(self.docs)) - 1]
        if isinstance(doc, Exception):
            raise doc
        return doc


def keyset(provider: Provider, clock: Clock) -> RemoteKeySet:
    return RemoteKeySet(provider.fetch, cache_s=300, min_refresh_s=10, max_stale_s=3600, clock=clock)


async def test_many_first_callers_cause_one_fetch() -> None:
    provider, clock = Provider({"keys": [K1]}), Clock()
    keys = keyset(provider, clock)
    found = await asyncio.gather(*(keys.key_for("k1") for _ in range(20)))
    assert all(k is not None and k.key_id == "k1" for k in found)
    assert provider.fetches == 1


async def test_unknown_kid_refreshes_once_then_waits_for_the_interval() -> None:
    provider, clock = Provider({"keys": [K1]}, {"keys": [K1]}, {"keys": [K1, K2]}), Clock()
    keys = keyset(provider, clock)
    assert await keys.key_for("k1") is not None
    clock.now += 11
    assert await keys.key_for("nope") is None and provider.fetches == 2  # refreshed: really not there
    with pytest.raises(KeyRefreshPending) as pending:
        await asyncio.gather(*(keys.key_for("k2") for _ in range(50)))  # a flood: no fetch, "retry later"
    assert 0 < pending.value.retry_after <= 10 and provider.fetches == 2
    assert keys.stats.refreshes_refused >= 1
    clock.now += 10
    rotated = await keys.key_for("k2")  # the provider rotated k2 in meanwhile
    assert rotated is not None and rotated.key_id == "k2" and provider.fetches == 3


async def test_expiry_refetches_and_drops_removed_keys() -> None:
    provider, clock = Provider({"keys": [K1, K2]}, {"keys": [K2]}), Clock()
    keys = keyset(provider, clock)
    assert await keys.key_for("k1") is not None
    clock.now += 301
    assert await keys.key_for("k1") is None  # removed at the provider, gone once the set expired
    assert provider.fetches == 2


async def test_a_failed_refresh_keeps_the_old_keys_until_max_stale() -> None:
    provider, clock = Provider({"keys": [K1]}, ProviderUnavailable("down")), Clock()
    keys = keyset(provider, clock)
    assert await keys.key_for("k1") is not None
    clock.now += 301
    assert await keys.key_for("k1") is not None  # stale but usable
    assert keys.stats.failures == 1
    clock.now += 3600
    with pytest.raises(ProviderUnavailable):
        await keys.key_for("k1")


async def test_no_keys_at_all_is_unavailable_and_retried_soon() -> None:
    provider, clock = Provider(ProviderUnavailable("down"), {"keys": [K1]}), Clock()
    keys = keyset(provider, clock)
    with pytest.raises(ProviderUnavailable):
        await keys.key_for("k1")
    with pytest.raises(ProviderUnavailable):
        await keys.key_for("k1")  # within 5 s: no hammering
    assert provider.fetches == 1
    clock.now += 5
    assert await keys.key_for("k1") is not None


def test_only_asymmetric_signing_keys_are_used() -> None:
    enc = jwk("enc1", use="enc")
    enc["alg"] = "RSA-OAEP"
    secret = {"kty": "oct", "k": "c2VjcmV0LXNlY3JldC1zZWNyZXQtc2VjcmV0", "kid": "hmac", "alg": "HS256"}
    found = signing_keys({"keys": [K1, enc, secret, "junk", {"kty": "RSA"}]})
    assert set(found) == {"k1"}
    for bad in ({"keys": []}, {"keys": [enc, secret]}, {}, {"keys": "k1"}):
        with pytest.raises(ProviderUnavailable):
            signing_keys(bad)
