"""The identity room against a real Keycloak: discovery, introspection (bounded cache, revocation), exchange.

Clocks are injected where a cache's lifetime is the subject, so no test waits for one to pass.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator

import pytest

from scopegate.config.model import ClaimMap
from scopegate.context import CallContext, SubjectToken
from scopegate.errors import CredentialUnavailable, ProviderUnavailable
from scopegate.identity.exchange import ExchangeTarget, TokenExchanger
from scopegate.identity.introspection import Introspector
from scopegate.identity.provider import Provider, ProviderSettings
from scopegate.scope import ScopeKeys
from scopegate_lab.keycloak import RealmClient
from scopegate_lab.keycloak_realm import MCP_CLIENT, RealmInfo

pytestmark = pytest.mark.keycloak

CLAIMS = ClaimMap(tenant="tenant_id", user="customer_id", groups="groups")
KEYS = ScopeKeys(tenant="tenant_id", user="user_id")


class Clock:
    def __init__(self, now: float) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


@pytest.fixture(scope="module")
def realm(keycloak: RealmInfo) -> Iterator[RealmClient]:
    client = RealmClient(keycloak)
    yield client
    client.close()


@pytest.fixture
async def provider(keycloak: RealmInfo) -> AsyncIterator[Provider]:
    settings = ProviderSettings(issuer=keycloak.issuer, client_id=MCP_CLIENT, client_secret=keycloak.secret(MCP_CLIENT))
    p = Provider(settings)
    yield p
    await p.aclose()


async def test_discovery_validates_the_issuer(keycloak: RealmInfo, provider: Provider) -> None:
    metadata = await provider.metadata()
    assert metadata.issuer == keycloak.issuer
    assert metadata.jwks_uri == keycloak.jwks_uri and metadata.token_endpoint == keycloak.token_endpoint
    assert metadata.introspection_endpoint and metadata.introspection_endpoint.startswith(keycloak.issuer)
    # The same provider under a name it does not claim: the metadata is refused.
    other = Provider(ProviderSettings(issuer=keycloak.issuer + "-not-this-one"))
    try:
        with pytest.raises(ProviderUnavailable, match="no usable metadata"):
            await other.metadata()
    finally:
        await other.aclose()


async def test_introspection_maps_claims_caches_and_sees_revocation(
    keycloak: RealmInfo, provider: Provider, realm: RealmClient
) -> None:
    clock = Clock(1000.0)
    intro = Introspector(provider, claims=CLAIMS, audiences=[MCP_CLIENT], issuer=keycloak.issuer, cache_s=30.0,
                         clock=clock)  # fmt: skip
    token = realm.password_token("carol", scopes=["tickets:read"])
    first = await intro.verify(token)
    assert first.token is not None and first.token.identity.tenant == "acme" and first.token.kind == "introspection"
    assert first.token.identity.user is None  # carol has no customer id
    assert first.token.scopes == {"tickets:read"}
    assert (await intro.verify(token)).ok and intro.requests == 1  # answered from the cache
    realm.logout("carol")  # her session ends: the token is no longer active at the provider
    assert (await intro.verify(token)).ok and intro.requests == 1  # still cached: revocation waits for cache_s
    clock.now += 31.0
    revoked = await intro.verify(token)
    assert revoked.reason == "inactive" and intro.requests == 2
    assert (await intro.verify("not-a-token-at-all")).reason == "inactive"
    assert (await intro.verify("not-a-token-at-all")).reason == "inactive" and intro.requests == 3  # negative cache


async def test_introspection_checks_the_audience(keycloak: RealmInfo, provider: Provider, realm: RealmClient) -> None:
    intro = Introspector(provider, claims=CLAIMS, audiences=[MCP_CLIENT], issuer=keycloak.issuer)
    other = realm.password_token("alice", client="reporting-app", scopes=["tickets:read"])
    assert (await intro.verify(other)).reason == "bad_audience"  # active, but not issued for this server


async def test_introspection_provider_down_is_unavailable_and_not_cached(keycloak: RealmInfo) -> None:
    settings = ProviderSettings(issuer=keycloak.issuer, client_id=MCP_CLIENT, client_secret="x" * 20)
    down = Provider(settings)
    try:
        intro = Introspector(down, claims=CLAIMS, audiences=[MCP_CLIENT], endpoint="http://127.0.0.1:9/introspect")
        assert (await intro.verify("some-token-value")).reason == "unavailable"
        assert (await intro.verify("some-token-value")).reason == "unavailable" and intro.requests == 2
    finally:
        await down.aclose()


def _subject(realm: RealmClient, user: str, scopes: list[str]) -> tuple[SubjectToken, CallContext]:
    token = realm.password_token(user, scopes=scopes)
    claims = realm.claims(token)
    subject = SubjectToken(
        token, tenant=claims["tenant_id"], user=claims.get("customer_id"), subject=claims["sub"],
        issuer=claims["iss"], expires_at=float(claims["exp"]), scopes=frozenset(claims["scope"].split()),
    )  # fmt: skip
    ctx = CallContext(state={"tenant_id": claims["tenant_id"], "user_id": claims.get("customer_id")})
    return subject, ctx


async def test_exchange_is_down_scoped_cached_until_expiry_then_refreshed(
    provider: Provider, realm: RealmClient
) -> None:
    clock = Clock(2_000_000_000.0)
    target = ExchangeTarget(audience="orders-api", scopes=("orders:read", "orders:write"))
    exchanger = TokenExchanger(provider, target, scope_keys=KEYS, clock=clock, skew_s=30)
    subject, ctx = _subject(realm, "alice", ["orders:read"])
    first = await exchanger.credential_for(subject, ctx)
    assert realm.claims(first)["scope"].split() == ["orders:read"]  # never more than alice's own token grants
    assert await exchanger.credential_for(subject, ctx) == first and exchanger.stats.exchanges == 1
    clock.now += 300 - 30  # Keycloak's tokens live 300 s: within the skew of expiry, exchange again
    second = await exchanger.credential_for(subject, ctx)
    assert second != first and exchanger.stats.exchanges == 2
    bob, bob_ctx = _subject(realm, "bob", ["orders:read"])
    assert realm.claims(await exchanger.credential_for(bob, bob_ctx))["customer_id"] == "cust_bob"
    assert exchanger.stats.exchanges == 3  # per user


async def test_exchange_refuses_without_asking_the_provider(provider: Provider, realm: RealmClient) -> None:
    exchanger = TokenExchanger(provider, ExchangeTarget(audience="orders-api", scopes=("orders:read",)),
                               scope_keys=KEYS)  # fmt: skip
    no_orders, ctx = _subject(realm, "alice", ["tickets:read"])
    with pytest.raises(CredentialUnavailable) as refused:
        await exchanger.credential_for(no_orders, ctx)  # the token grants none of the asked scopes
    assert refused.value.code == "NOT_AUTHORIZED"
    alice, _ = _subject(realm, "alice", ["orders:read"])
    _bob, bob_ctx = _subject(realm, "bob", ["orders:read"])
    with pytest.raises(CredentialUnavailable, match="another tenant or user"):
        await exchanger.credential_for(alice, bob_ctx)  # alice's token in bob's session
    with pytest.raises(CredentialUnavailable, match="no subject token"):
        await exchanger.credential_for(None, ctx)
    assert exchanger.stats.exchanges == 0
    assert "eyJ" not in repr(alice) and "eyJ" not in repr(exchanger)
