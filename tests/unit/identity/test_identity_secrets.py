"""Per-identity downstream credentials (issue 37): exact identity match, no fallback, masked, mode-checked."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from scopegate.context import CallContext, SubjectToken
from scopegate.errors import ConfigError, CredentialUnavailable
from scopegate.identity import IdentitySecrets
from scopegate.openapi.model import SecurityScheme
from scopegate.openapi.runtime import FromSubject
from scopegate.openapi.runtime.credentials import resolve_auth
from scopegate.scope import ScopeKeys

KEYS = ScopeKeys(tenant="tenant_id", user="user_id")


def ctx(tenant: str, user: str | None = None, subject: SubjectToken | None = None) -> CallContext:
    state = {"tenant_id": tenant, **({"user_id": user} if user else {})}
    return CallContext(state=state, subject_token=subject)


async def test_each_identity_gets_its_own_and_no_one_else_s() -> None:
    store = IdentitySecrets.from_mapping({"acme/ana": "ana-secret-1", "acme": "tenant-wide-2"}, scope_keys=KEYS)
    assert await store.credential_for(None, ctx("acme", "ana")) == "ana-secret-1"
    assert await store.credential_for(None, ctx("acme")) == "tenant-wide-2"  # an identity without a user
    with pytest.raises(CredentialUnavailable) as refused:
        await store.credential_for(None, ctx("acme", "bob"))  # no entry: no fallback to the tenant's
    assert refused.value.code == "NOT_AUTHORIZED" and "ana-secret" not in str(refused.value)
    assert "secret" not in repr(store)


async def test_a_verified_token_of_another_identity_is_refused() -> None:
    store = IdentitySecrets.from_mapping({"acme/ana": "ana-secret-1"}, scope_keys=KEYS)
    other = SubjectToken("tok", tenant="acme", user="bob")
    with pytest.raises(CredentialUnavailable):
        await store.credential_for(other, ctx("acme", "ana"))
    same = SubjectToken("tok", tenant="acme", user="ana")
    assert await store.credential_for(same, ctx("acme", "ana")) == "ana-secret-1"


async def test_a_function_store_and_basic_auth() -> None:
    async def lookup(tenant: str, user: str | None) -> tuple[str, str] | None:
        return ("svc-" + str(user), "pw-" + str(user)) if user == "ana" else None

    store = IdentitySecrets.from_function(lookup, scope_keys=KEYS)
    basic = SecurityScheme(key="b", type="http", scheme="basic")
    parts = await resolve_auth([{"b": ()}], {"b": basic}, {"b": FromSubject(store)}, ctx("acme", "ana"))
    assert parts.headers[0][0] == "Authorization" and parts.headers[0][1].startswith("Basic ")
    with pytest.raises(CredentialUnavailable):
        await resolve_auth([{"b": ()}], {"b": basic}, {"b": FromSubject(store)}, ctx("acme", "bob"))


def test_env_and_file_stores_check_at_start(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="ANA_KEY"):
        IdentitySecrets.from_env({"acme/ana": "ANA_KEY"}, {})
    path = tmp_path / "secrets.yaml"
    path.write_text("secrets:\n  acme/ana: s3cret-value\n", "utf-8")
    os.chmod(path, 0o640)
    with pytest.raises(ConfigError, match="readable by others"):
        IdentitySecrets.from_file(path)
    os.chmod(path, 0o600)
    IdentitySecrets.from_file(path)
    path.write_text("secrets:\n  /ana: x\n", "utf-8")
    with pytest.raises(ConfigError, match="tenant/user"):
        IdentitySecrets.from_file(path)
