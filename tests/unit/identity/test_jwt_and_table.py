"""Token verification: JWT checks, the token table, identities, the verifier chain, the access token."""

from __future__ import annotations

import asyncio
import base64
import json
import time
from pathlib import Path
from typing import Any

import jwt
import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from hypothesis import given, settings
from hypothesis import strategies as st

from scopegate.config.identity import build_identity
from scopegate.config.loader import ConfigValidationError
from scopegate.config.model import AuthConfig, ClaimMap, JwtConfig, StdioScope
from scopegate.errors import ConfigError
from scopegate.identity.jwt_verify import JwtVerifier, key_source_from_files
from scopegate.identity.table import TokenTable, token_digest
from scopegate.identity.tokens import VerifiedToken
from scopegate.identity.verifier import Verifier
from scopegate.scope import ScopeKeys
from scopegate.server.auth import access_token_for, identity_of_user
from scopegate.server.identity import Identity, IdentityError, claim, identity_from_claims, stdio_identity

ISSUER = "https://login.example.test/"
AUDIENCE = "scopegate-test"


@pytest.fixture(scope="module")
def rsa_key() -> rsa.RSAPrivateKey:
    return rsa.generate_private_key(public_exponent=65537, key_size=2048)


@pytest.fixture(scope="module")
def pem_file(rsa_key: rsa.RSAPrivateKey, tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("keys") / "public.pem"
    path.write_bytes(
        rsa_key.public_key().public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)
    )
    return path


@pytest.fixture(scope="module")
def jwks_file(rsa_key: rsa.RSAPrivateKey, tmp_path_factory: pytest.TempPathFactory) -> Path:
    jwk = json.loads(jwt.algorithms.RSAAlgorithm.to_jwk(rsa_key.public_key()))
    jwk.update(kid="k1", alg="RS256", use="sig")
    other = json.loads(jwt.algorithms.RSAAlgorithm.to_jwk(rsa.generate_private_key(65537, 2048).public_key()))
    other.update(kid="k2", alg="RS256", use="sig")
    path = tmp_path_factory.mktemp("jwks") / "jwks.json"
    path.write_text(json.dumps({"keys": [jwk, other]}), "utf-8")
    return path


def jwt_config(**kw: Any) -> JwtConfig:
    base: dict[str, Any] = {
        "issuer": ISSUER,
        "audience": (AUDIENCE,),
        "claims": ClaimMap(tenant="org.id", user="sub", groups="groups"),
    }
    base.update(kw)
    return JwtConfig(**base)


def verifier_for(cfg: JwtConfig, environ: dict[str, str] | None = None) -> JwtVerifier:
    keys = key_source_from_files(cfg, environ or {})
    assert keys is not None
    return JwtVerifier(cfg, keys)


def mint(key: Any, alg: str = "RS256", headers: dict[str, Any] | None = None, **claims: Any) -> str:
    now = int(time.time())
    body: dict[str, Any] = {"iss": ISSUER, "aud": AUDIENCE, "sub": "alice", "iat": now, "exp": now + 300}
    body["org"] = {"id": "acme"}
    body.update(claims)
    for k in [k for k, v in body.items() if v is None]:
        del body[k]
    return jwt.encode(body, key, algorithm=alg, headers=headers)


async def test_valid_token_maps_claims_to_identity(rsa_key: rsa.RSAPrivateKey, pem_file: Path) -> None:
    verifier = verifier_for(jwt_config(public_key_file=pem_file))
    result = await verifier.verify(mint(rsa_key, groups=["support", "billing", "support"]))
    assert result.reason == "ok"
    assert (result.token.identity if result.token else None) == Identity("acme", "alice", ("billing", "support"))


@pytest.mark.parametrize(
    ("claims", "reason"),
    [
        ({"exp": int(time.time()) - 3600}, "expired"),
        ({"aud": "another-service"}, "bad_audience"),
        ({"iss": "https://evil.example/"}, "bad_issuer"),
        ({"exp": None}, "missing_claim"),
        ({"aud": None}, "bad_audience"),
        ({"nbf": int(time.time()) + 3600}, "not_yet_valid"),
        ({"org": None}, "no_identity"),
        ({"org": {"id": ""}}, "no_identity"),
        ({"org": {"id": "a\nb"}}, "no_identity"),
        ({"org": {"id": ["acme"]}}, "no_identity"),
        ({"groups": "x" * 10}, "ok"),
        ({"groups": [1, 2]}, "no_identity"),
    ],
)
async def test_claim_checks(rsa_key: rsa.RSAPrivateKey, pem_file: Path, claims: dict[str, Any], reason: str) -> None:
    verifier = verifier_for(jwt_config(public_key_file=pem_file, leeway_s=0))
    assert (await verifier.verify(mint(rsa_key, **claims))).reason == reason


async def test_tampered_signature_and_payload(rsa_key: rsa.RSAPrivateKey, pem_file: Path) -> None:
    verifier = verifier_for(jwt_config(public_key_file=pem_file))
    token = mint(rsa_key)
    head, body, sig = token.split(".")
    flipped = sig[:-4] + ("AAAA" if sig[-4:] != "AAAA" else "BBBB")
    assert (await verifier.verify(f"{head}.{body}.{flipped}")).reason == "bad_signature"
    claims = json.loads(base64.urlsafe_b64decode(body + "=" * (-len(body) % 4)))
    claims["org"] = {"id": "globex"}
    forged = base64.urlsafe_b64encode(json.dumps(claims).encode()).decode().rstrip("=")
    assert (await verifier.verify(f"{head}.{forged}.{sig}")).reason == "bad_signature"


async def test_algorithm_attacks_refused(rsa_key: rsa.RSAPrivateKey, pem_file: Path) -> None:
    verifier = verifier_for(jwt_config(public_key_file=pem_file))
    unsigned = mint(None, alg="none")
    assert (await verifier.verify(unsigned)).token is None
    # HS256 "signed" with the public key (the classic key-confusion attack).
    public_pem = pem_file.read_bytes()
    header = base64.urlsafe_b64encode(b'{"alg":"HS256","typ":"JWT"}').decode().rstrip("=")
    payload = (
        base64.urlsafe_b64encode(
            json.dumps({"iss": ISSUER, "aud": AUDIENCE, "exp": int(time.time()) + 60, "org": {"id": "acme"}}).encode()
        )
        .decode()
        .rstrip("=")
    )
    import hashlib
    import hmac

    sig = hmac.new(public_pem, f"{header}.{payload}".encode(), hashlib.sha256).digest()
    confused = f"{header}.{payload}." + base64.urlsafe_b64encode(sig).decode().rstrip("=")
    assert (await verifier.verify(confused)).token is None
    # A token signed by another key.
    assert (await verifier.verify(mint(rsa.generate_private_key(65537, 2048)))).reason == "bad_signature"
    # An EC key when RS256 is configured.
    assert (await verifier.verify(mint(ec.generate_private_key(ec.SECP256R1()), alg="ES256"))).token is None


async def test_jwks_picks_key_by_kid(rsa_key: rsa.RSAPrivateKey, jwks_file: Path) -> None:
    verifier = verifier_for(jwt_config(jwks_file=jwks_file))
    assert (await verifier.verify(mint(rsa_key, headers={"kid": "k1"}))).reason == "ok"
    assert (await verifier.verify(mint(rsa_key, headers={"kid": "k2"}))).reason == "bad_signature"
    assert (await verifier.verify(mint(rsa_key, headers={"kid": "nope"}))).reason == "unknown_key"
    assert (await verifier.verify(mint(rsa_key))).reason == "unknown_key"  # two keys, no kid: ambiguous


async def test_shared_secret(monkeypatch: pytest.MonkeyPatch) -> None:
    secret = "s" * 40
    cfg = jwt_config(secret_env="SG_SECRET", algorithms=("HS256",))
    verifier = verifier_for(cfg, {"SG_SECRET": secret})
    assert (await verifier.verify(mint(secret, alg="HS256"))).reason == "ok"
    assert (await verifier.verify(mint("t" * 40, alg="HS256"))).reason == "bad_signature"
    with pytest.raises(ConfigError, match="at least 32"):
        verifier_for(cfg, {"SG_SECRET": "short"})


async def test_max_age(rsa_key: rsa.RSAPrivateKey, pem_file: Path) -> None:
    verifier = verifier_for(jwt_config(public_key_file=pem_file, max_age_s=60, leeway_s=0))
    assert (await verifier.verify(mint(rsa_key))).reason == "ok"
    assert (await verifier.verify(mint(rsa_key, iat=int(time.time()) - 600))).reason == "too_old"


def test_bad_key_files_fail_at_start(tmp_path: Path) -> None:
    (tmp_path / "bad.pem").write_text("not a key", "utf-8")
    with pytest.raises(ConfigError, match="public_key_file"):
        verifier_for(jwt_config(public_key_file=tmp_path / "bad.pem"))
    (tmp_path / "jwks.json").write_text('{"keys": []}', "utf-8")
    with pytest.raises(ConfigError, match="jwks_file"):
        verifier_for(jwt_config(jwks_file=tmp_path / "jwks.json"))
    with pytest.raises(ConfigError, match="cannot read"):
        verifier_for(jwt_config(public_key_file=tmp_path / "missing.pem"))


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=300))
def test_garbage_tokens_never_crash(garbage: str) -> None:
    result = asyncio.run(_GARBAGE_VERIFIER.verify(garbage))
    assert result.token is None and result.reason


_GARBAGE_VERIFIER = Verifier(
    [
        TokenTable.from_data({"tokens": [{"token": "a-real-token-0123456789", "tenant": "acme"}]}),
        verifier_for(jwt_config(secret_env="S", algorithms=("HS256",)), {"S": "k" * 40}),
    ]
)


# -- token table ------------------------------------------------------------------------
async def test_token_table_lookup_and_expiry(tmp_path: Path) -> None:
    path = tmp_path / "tokens.yaml"
    path.write_text(
        "tokens:\n"
        f"  - sha256: {token_digest('token-for-acme-000001')}\n    tenant: acme\n    user: alice\n    groups: [a, b]\n"
        "  - token: token-for-globex-00002\n    tenant: globex\n    expires: 2001-01-01T00:00:00Z\n"
        f"  - sha256: {token_digest('token-for-hooli-00003').upper()}\n    tenant: hooli\n    expires: 2999-01-01\n"
        "    scopes: [tickets:read]\n",
        "utf-8",
    )
    table = TokenTable.load(path)
    assert len(table) == 3
    acme = await table.check("token-for-acme-000001")
    assert acme is not None and acme.token is not None and acme.token.identity == Identity("acme", "alice", ("a", "b"))
    expired = await table.check("token-for-globex-00002")
    assert expired is not None and expired.reason == "expired"
    hooli = await table.check("token-for-hooli-00003")
    assert hooli is not None and hooli.token is not None and hooli.token.identity == Identity("hooli")
    assert hooli.token.scopes == {"tickets:read"}
    assert await table.check("token-for-acme-000002") is None  # not the table's: the next check decides
    chain = Verifier([table])
    assert (await chain.verify("token-for-acme-000002")).reason == "unknown_token"
    assert (await chain.verify("token-for-globex-00002")).reason == "expired"
    # Issue 19: a short token was refused as "unknown" with nothing said anywhere.
    short = await table.check("short")
    assert short is not None and short.token is None and short.reason == "token_too_short"
    assert (await chain.verify("short")).reason == "token_too_short"


async def test_a_short_token_is_refused_with_the_rule_in_the_log_and_the_401(caplog: pytest.LogCaptureFixture) -> None:
    import logging

    from starlette.requests import HTTPConnection

    from scopegate.identity.tokens import REASONS
    from scopegate.server.auth import BearerBackend

    short = "acme-token"  # 10 characters: its digest may be in the table, the token is still refused
    table = TokenTable.from_data({"tokens": [{"sha256": token_digest(short), "tenant": "acme"}]})
    failures: list[str] = []
    backend = BearerBackend(Verifier([table]), failures.append)
    header = [(b"authorization", f"Bearer {short}".encode())]
    scope = {"type": "http", "path": "/mcp", "query_string": b"", "headers": header}
    with caplog.at_level(logging.WARNING, logger="scopegate"):
        assert await backend.authenticate(HTTPConnection(scope)) is None
    assert failures == ["token_too_short"]
    assert "bearer token refused (HTTP 401): token too short; tokens must be 16 to 4096 characters" in caplog.text
    assert REASONS["token_too_short"] == "The access token is too short: tokens are 16 to 4096 characters"


async def test_a_short_token_can_still_pass_another_check() -> None:
    class ShortTokens:  # e.g. an identity provider whose opaque tokens are short
        async def check(self, token: str) -> Any:
            from scopegate.identity.tokens import Verification

            return Verification(VerifiedToken(Identity("acme"), "introspection"), "ok") if token == "abc" else None

    table = TokenTable.from_data({"tokens": [{"token": "t" * 20, "tenant": "globex"}]})
    verdict = await Verifier([table, ShortTokens()]).verify("abc")
    assert verdict.ok and verdict.token is not None and verdict.token.identity == Identity("acme")


@pytest.mark.parametrize(
    ("data", "fragment"),
    [
        ({"tokens": [{"tenant": "acme"}]}, "exactly one of sha256 (preferred) or token"),
        ({"tokens": [{"tenant": "acme", "token": "x" * 20, "sha256": "a" * 64}]}, "exactly one of"),
        ({"tokens": [{"sha256": "abc", "tenant": "acme"}]}, "does not match"),
        ({"tokens": [{"token": "x" * 20}]}, "'tenant' is required"),
        ({"tokens": [{"token": "x" * 20, "tenant": "a"}, {"token": "x" * 20, "tenant": "b"}]}, "appears twice"),
        ({"tokens": [{"token": "x" * 20, "tenant": " "}]}, "leading or trailing whitespace"),
        ({"tokens": [{"token": "x" * 20, "tenant": "a", "expires": "soon"}]}, "not an ISO 8601 time"),
        ({"tokenz": []}, "Additional properties"),
    ],
)
def test_token_table_problems(data: dict[str, Any], fragment: str) -> None:
    with pytest.raises(ConfigValidationError) as info:
        TokenTable.from_data(data)
    assert fragment in str(info.value)


# -- identities and the backend ------------------------------------------------------------
def test_identity_state_carries_only_scope() -> None:
    identity = Identity.checked("acme", "alice", ["g2", "g1"])
    assert identity.state(ScopeKeys(tenant="tenant_id", user="user_id", groups="group_ids")) == {
        "tenant_id": "acme",
        "user_id": "alice",
        "group_ids": ["g1", "g2"],
    }
    assert identity.state(ScopeKeys()) == {"tenant_id": "acme"}
    assert identity.principal() != Identity("acme", "alice", ("g1",)).principal()
    assert identity.principal() == Identity.checked("acme", "alice", ["g1", "g2"]).principal()


def test_claim_paths() -> None:
    claims = {"org": {"id": "acme"}, "a.b": "exact"}
    assert claim(claims, "org.id") == "acme"
    assert claim(claims, "a.b") == "exact"
    assert claim(claims, "org.missing") is None
    with pytest.raises(IdentityError):
        identity_from_claims({"sub": "x"}, ClaimMap(tenant="tid"))


def test_stdio_identity_from_config_or_environment() -> None:
    assert stdio_identity(StdioScope(tenant="acme", user="al"), {}) == Identity("acme", "al")
    env = {"SCOPEGATE_TENANT": "globex", "SCOPEGATE_GROUPS": "b,a,,"}
    assert stdio_identity(StdioScope(), env) == Identity("globex", None, ("a", "b"))
    assert stdio_identity(StdioScope(tenant="acme"), env).tenant == "acme"  # config wins
    with pytest.raises(ConfigError, match="SCOPEGATE_TENANT"):
        stdio_identity(StdioScope(), {})
    with pytest.raises(ConfigError, match="invalid stdio identity"):
        stdio_identity(StdioScope(tenant="a\tb"), {})
    # The one identity rule: never stripped into another tenant or group.
    with pytest.raises(ConfigError, match="leading or trailing whitespace"):
        stdio_identity(StdioScope(), {"SCOPEGATE_TENANT": "globex "})
    with pytest.raises(ConfigError, match="leading or trailing whitespace"):
        stdio_identity(StdioScope(), {"SCOPEGATE_TENANT": "globex", "SCOPEGATE_GROUPS": "b, a"})


def test_access_token_round_trip_drops_the_raw_token() -> None:
    from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser

    verified = VerifiedToken(
        Identity("acme", "al", ("g",)), "jwt", scopes=frozenset({"b", "a"}), issuer=ISSUER, expires_at=2_000_000_000.0
    )
    token = access_token_for(verified)
    assert token.token == "<redacted>" and token.expires_at == 2_000_000_000 and token.scopes == ["a", "b"]
    assert "raw-token" not in repr(verified.subject_token("raw-token"))
    assert identity_of_user(AuthenticatedUser(token)) == Identity("acme", "al", ("g",))
    assert identity_of_user(None) is None


def test_no_auth_section_builds_no_verifier() -> None:
    assert build_identity(AuthConfig()).verifier is None
