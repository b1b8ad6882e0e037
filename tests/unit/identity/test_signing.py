"""Signed scope: HMAC-SHA256 over a canonical encoding, bound to app, user and session; key rotation by id."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from scopegate.errors import ConfigError, IdentityError
from scopegate.identity import Identity, KeyRing, SignatureInvalid, SigningKey
from scopegate.identity.signing import MIN_SECRET_BYTES, canonical_message
from scopegate.scope import id_problem

SECRET_A = b"a" * 32
SECRET_B = b"b" * 40
BIND = {"app_name": "support", "user_id": "u1", "session_id": "s1"}
ACME = Identity("acme", "alice", ("payments", "billing"))


def ring(*kids: str) -> KeyRing:
    secrets = {"k1": SECRET_A, "k2": SECRET_B}
    return KeyRing([SigningKey(k, secrets[k]) for k in kids or ("k1",)])


def test_round_trip_gives_the_identity_back() -> None:
    r = ring()
    envelope = r.sign(ACME, **BIND, now=1_700_000_000)
    assert envelope["kid"] == "k1" and envelope["scope"]["groups"] == ["billing", "payments"]
    assert json.loads(json.dumps(envelope)) == envelope  # storable in any session service
    assert r.verify(envelope, **BIND, now=1_700_000_100) == Identity("acme", "alice", ("billing", "payments"))


def test_canonical_message_is_fixed() -> None:
    message = canonical_message(
        kid="k1", iat=1, exp=None, scope={"tenant": "ä", "user": None, "groups": []}, app_name="a", user_id="u",
        session_id="s",
    )  # fmt: skip
    assert message == (
        b'scopegate/signed-scope/v1\x00{"app":"a","exp":null,"iat":1,"kid":"k1",'
        b'"scope":{"groups":[],"tenant":"\\u00e4","user":null},"sid":"s","uid":"u","v":1}'
    )


@pytest.mark.parametrize(
    ("where", "value"),
    [
        ("app_name", "other-app"),
        ("user_id", "u2"),
        ("session_id", "s2"),
    ],
)
def test_copied_to_another_session_user_or_app_is_refused(where: str, value: str) -> None:
    r = ring()
    envelope = r.sign(ACME, **BIND)
    with pytest.raises(SignatureInvalid) as info:
        r.verify(envelope, **{**BIND, where: value})
    assert info.value.reason == "bad_signature"


def _altered(envelope: dict[str, Any], path: tuple[str, ...], value: Any) -> dict[str, Any]:
    out = copy.deepcopy(envelope)
    target = out
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = value
    return out


@pytest.mark.parametrize(
    ("path", "value", "reason"),
    [
        (("scope", "tenant"), "globex", "bad_signature"),
        (("scope", "user"), "bob", "bad_signature"),
        (("scope", "user"), None, "bad_signature"),
        (("scope", "groups"), ["payments", "billing", "admin"], "bad_signature"),
        (("scope", "groups"), ["payments", "billing"], "bad_signature"),  # reordered
        (("iat",), 1_700_000_001, "bad_signature"),
        (("exp",), 1_800_000_000, "bad_signature"),
        (("sig",), "A" * 43, "bad_signature"),
        (("kid",), "k9", "unknown_key"),
        (("kid",), "../../etc", "malformed"),
        (("v",), 2, "malformed"),
        (("v",), True, "malformed"),
        (("iat",), "1700000000", "malformed"),
        (("iat",), 1.5, "malformed"),
        (("scope", "tenant"), ["acme"], "malformed"),
        (("scope", "groups"), "payments", "malformed"),
        (("scope", "extra"), "x", "malformed"),
        (("extra",), 1, "malformed"),
        (("sig",), "x" * 500, "malformed"),
    ],
)
def test_any_alteration_is_refused(path: tuple[str, ...], value: Any, reason: str) -> None:
    r = ring()
    envelope = r.sign(ACME, **BIND, now=1_700_000_000)
    with pytest.raises(SignatureInvalid) as info:
        r.verify(_altered(envelope, path, value), **BIND, now=1_700_000_000)
    assert info.value.reason == reason
    assert isinstance(info.value, IdentityError)


@pytest.mark.parametrize("envelope", [None, {}, [], "acme", {"scope": {"tenant": "acme"}}, 42])
def test_missing_or_not_an_envelope(envelope: Any) -> None:
    with pytest.raises(SignatureInvalid) as info:
        ring().verify(envelope, **BIND)
    assert info.value.reason in {"missing", "malformed"}


def test_expiry_and_future_issue() -> None:
    r = ring()
    envelope = r.sign(ACME, **BIND, ttl_s=60, now=1_000)
    assert r.verify(envelope, **BIND, now=1_080) == r.verify(envelope, **BIND, now=1_000)  # within leeway
    with pytest.raises(SignatureInvalid, match="expired"):
        r.verify(envelope, **BIND, now=1_100)
    with pytest.raises(SignatureInvalid, match="not_yet_valid"):
        r.verify(r.sign(ACME, **BIND, now=10_000), **BIND, now=1_000)


def test_rotation_new_key_signs_old_key_still_verifies_until_removed() -> None:
    old = ring("k1")
    signed_before = old.sign(ACME, **BIND)
    rotated = KeyRing([SigningKey("k2", SECRET_B), SigningKey("k1", SECRET_A)])
    assert rotated.active == "k2"
    assert rotated.sign(ACME, **BIND)["kid"] == "k2"
    assert rotated.verify(signed_before, **BIND).tenant == "acme"
    retired = ring("k2")
    with pytest.raises(SignatureInvalid, match="unknown_key"):
        retired.verify(signed_before, **BIND)


def test_same_kid_other_secret_is_refused() -> None:
    envelope = ring("k1").sign(ACME, **BIND)
    impostor = KeyRing([SigningKey("k1", b"z" * 32)])
    with pytest.raises(SignatureInvalid, match="bad_signature"):
        impostor.verify(envelope, **BIND)


def test_bad_identities_are_not_signed() -> None:
    with pytest.raises(IdentityError):
        ring().sign(Identity(" "), **BIND)
    with pytest.raises(SignatureInvalid, match="malformed"):
        ring().sign(ACME, app_name="a", user_id="", session_id="s")


def test_key_parsing_and_refusals() -> None:
    a, b = KeyRing.new_secret(), KeyRing.new_secret()
    parsed = KeyRing.parse(f"new:{a}, old:{b}\n# comment\n")
    assert parsed.kids == ("new", "old") and parsed.active == "new"
    assert "secret" not in repr(parsed) and a not in repr(parsed) and a not in repr(SigningKey("x", b"q" * 32))
    for bad in ("nokid", f"k1:{a},k1:{b}", "k1:c2hvcnQ", "bad kid:" + a, "k1:@@@", ""):
        with pytest.raises(ConfigError):
            KeyRing.parse(bad)
    assert len(KeyRing.new_secret()) >= MIN_SECRET_BYTES


def test_keys_from_env_or_file(tmp_path: Any) -> None:
    secret = KeyRing.new_secret()
    assert KeyRing.from_env(environ={}) is None
    assert KeyRing.from_env(environ={"SCOPEGATE_SCOPE_SIGNING_KEYS": f"k1:{secret}"}).kids == ("k1",)  # type: ignore[union-attr]
    path = tmp_path / "keys"
    path.write_text(f"k3:{secret}\n", encoding="utf-8")
    assert KeyRing.from_env(environ={"SCOPEGATE_SCOPE_SIGNING_KEYS": f"@{path}"}).kids == ("k3",)  # type: ignore[union-attr]
    with pytest.raises(ConfigError, match="cannot read"):
        KeyRing.from_env(environ={"SCOPEGATE_SCOPE_SIGNING_KEYS": f"@{tmp_path / 'missing'}"})


ids = st.text(
    st.characters(max_codepoint=0x2FFF, blacklist_categories=("Cc", "Cs", "Zs", "Zl", "Zp")), min_size=1, max_size=12
).filter(lambda text: id_problem(text) is None)  # canonical ids only (scopegate.scope's identity rule)


@settings(max_examples=200, deadline=None)
@given(tenant=ids, other=ids, user=ids, session=ids, other_session=ids)
def test_no_envelope_verifies_for_another_tenant_or_session(
    tenant: str, other: str, user: str, session: str, other_session: str
) -> None:
    r = ring()
    envelope = r.sign(Identity(tenant, user), app_name="app", user_id=user, session_id=session)
    forged = _altered(envelope, ("scope", "tenant"), other)
    if other != tenant:
        with pytest.raises(SignatureInvalid):
            r.verify(forged, app_name="app", user_id=user, session_id=session)
    if other_session != session:
        with pytest.raises(SignatureInvalid):
            r.verify(envelope, app_name="app", user_id=user, session_id=other_session)
