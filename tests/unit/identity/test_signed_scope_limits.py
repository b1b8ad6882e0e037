"""Signed scope's two loose ends (issue 36, L7): passthrough of scope keys, envelopes that never expire.

Wave 2 let ``ScopePolicy.signed(ring, passthrough=("user_id",))`` fill ``user_id`` from client state
when the signed identity had no user, and ownership rules (``state.user_id``) then trusted it; and
``create_signed_session`` signed envelopes without an expiry, so a ten-year-old one was accepted.
"""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest
from google.adk.sessions import InMemorySessionService

from scopegate.adapters.adk_scope import ScopeBinding, ScopePolicy, create_signed_session, resolve_state
from scopegate.config.loader import parse_config
from scopegate.errors import ConfigError
from scopegate.identity import Identity, KeyRing, SignatureInvalid, SigningKey
from scopegate.identity.signing import SIGNED_SCOPE_KEY, canonical_message
from scopegate.scope import ScopeKeys

RING = KeyRing([SigningKey("k1", b"k" * 32)])
BIND = {"app_name": "app", "user_id": "alice", "session_id": "s1"}
TENANT_ONLY = Identity("shop")  # a signed identity without a user
DAY = 86_400
MAX_LIFETIME_S = 30 * DAY  # the documented rule (docs/deployment-adk.md)


def ctx() -> Any:
    return SimpleNamespace(session=SimpleNamespace(app_name="app", user_id="alice", id="s1"), invocation_id="e-1")


@pytest.mark.parametrize("name", ["user_id", "tenant_id", "group_ids"])
def test_passthrough_of_a_scope_key_is_refused_when_the_policy_is_built(name: str) -> None:
    with pytest.raises(ConfigError, match=f"passthrough names scope keys \\({name}\\)"):
        ScopePolicy.signed(RING, passthrough=(name,))
    with pytest.raises(ConfigError, match="passthrough names scope keys"):
        ScopePolicy.binding(passthrough=("locale", name))
    with pytest.raises(ConfigError, match="passthrough names scope keys"):
        ScopeBinding(lambda request: TENANT_ONLY, passthrough=(name,))


def test_passthrough_of_a_custom_scope_key_is_refused() -> None:
    keys = ScopeKeys(tenant="org", user="owner")
    with pytest.raises(ConfigError, match="owner"):
        ScopePolicy.signed(RING, keys=keys, passthrough=("owner",))
    assert ScopePolicy.signed(RING, keys=keys, passthrough=("locale",)).passthrough == ("locale",)


def test_a_config_cannot_pass_a_scope_key_through() -> None:
    scope = {"state_keys": {"tenant": "org", "user": "owner"}, "passthrough": ["locale", "owner"]}
    with pytest.raises(ConfigError, match="passthrough names scope keys"):
        parse_config({"version": 1, "scope": scope})


def test_client_state_never_supplies_a_tools_own_scope_key() -> None:
    """Defence in depth: a tool's scope keys (not the policy's) are never copied from client state either."""
    policy = ScopePolicy.signed(RING, passthrough=("owner", "locale"))
    raw = {SIGNED_SCOPE_KEY: RING.sign(TENANT_ONLY, **BIND), "owner": "bob", "user_id": "bob", "locale": "fr"}
    resolved = resolve_state(raw, ctx(), policy=policy, scope_keys=ScopeKeys(tenant="org", user="owner"))
    assert resolved.source == "signed"
    assert resolved.state == {"tenant_id": "shop", "group_ids": [], "org": "shop", "locale": "fr"}


async def test_create_signed_session_gives_a_bounded_lifetime_by_default() -> None:
    service = InMemorySessionService()  # type: ignore[no-untyped-call]
    session = await create_signed_session(service, RING, TENANT_ONLY, app_name="app", user_id="alice")
    envelope = session.state[SIGNED_SCOPE_KEY]
    assert envelope["exp"] - envelope["iat"] == DAY
    with pytest.raises(ConfigError, match="lifetime"):
        await create_signed_session(service, RING, TENANT_ONLY, app_name="app", user_id="alice", ttl_s=10 * 365 * DAY)


def _unexpiring(ring: KeyRing, iat: int, exp: int | None) -> dict[str, Any]:
    """An envelope as wave 2 signed it (no ``exp``), or with any lifetime, under the ring's key."""
    scope = {"tenant": "shop", "user": None, "groups": []}
    message = canonical_message(kid="k1", iat=iat, exp=exp, scope=scope, **BIND)
    envelope: dict[str, Any] = {
        "v": 1,
        "kid": "k1",
        "iat": iat,
        "scope": scope,
        "sig": ring._mac(ring._keys["k1"], message),
    }
    if exp is not None:
        envelope["exp"] = exp
    return envelope


def test_envelopes_without_an_expiry_or_with_too_long_a_life_are_refused() -> None:
    now = 1_900_000_000
    ten_years_ago = now - 10 * 365 * DAY
    with pytest.raises(SignatureInvalid) as info:
        RING.verify(_unexpiring(RING, ten_years_ago, None), **BIND, now=now)
    assert info.value.reason == "no_expiry"
    with pytest.raises(SignatureInvalid) as info:
        RING.verify(_unexpiring(RING, ten_years_ago, now + DAY), **BIND, now=now)
    assert info.value.reason == "lifetime_too_long"
    assert RING.verify(_unexpiring(RING, now - DAY, now - DAY + MAX_LIFETIME_S), **BIND, now=now).tenant == "shop"
    short = KeyRing([SigningKey("k1", b"k" * 32)], max_lifetime_s=3600)
    with pytest.raises(SignatureInvalid, match="lifetime_too_long"):
        short.verify(RING.sign(TENANT_ONLY, **BIND, now=now), **BIND, now=now)
    with pytest.raises(ConfigError):
        RING.sign(TENANT_ONLY, **BIND, ttl_s=None)  # type: ignore[arg-type]
