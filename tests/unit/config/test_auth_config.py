"""The identity keys of the config: provider, remote JWKS, introspection, scopes, exchange credentials."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from scopegate.config import ConfigValidationError, build_app, config_schema, load_config
from scopegate.config.identity import build_identity, default_resource
from scopegate.config.model import HttpConfig
from scopegate.errors import ConfigError
from scopegate.examples.orders import SPEC_PATH

Write = Callable[..., Path]
ISSUER = "https://login.example.com/realms/x"
JWT = {"issuer": ISSUER, "audience": "scopegate-mcp", "claims": {"tenant": "tenant_id"}, "discover": True}
PROVIDER = {"issuer": ISSUER, "client_id": "scopegate-mcp", "client_secret_env": "SG_SECRET"}


def problems(write: Write, data: dict[str, Any]) -> dict[str, str]:
    with pytest.raises(ConfigValidationError) as info:
        load_config(write(data), environ={})
    return {p.path: p.message for p in info.value.problems}


def orders(credentials: dict[str, Any]) -> dict[str, Any]:
    return {"name": "orders", "spec": str(SPEC_PATH), "allow": ["getOrder"], "credentials": credentials}


def test_the_schema_has_the_identity_keys() -> None:
    auth = config_schema()["$defs"]["AuthConfig"]["properties"]
    assert {"resource", "provider", "jwt", "introspection", "token_table", "scopes"} <= set(auth)
    jwt = config_schema()["$defs"]["JwtConfig"]["properties"]
    assert {"jwks_url", "discover", "jwks_cache_s", "jwks_refresh_min_s", "scope_claim"} <= set(jwt)
    assert "exchange" in config_schema()["$defs"]["CredentialConfig"]["properties"]


def test_cross_key_problems(base: dict[str, Any], write: Write) -> None:
    base["auth"] = {"jwt": JWT}
    assert "needs auth.provider" in problems(write, base)["auth.jwt.discover"]
    base["auth"] = {"jwt": JWT, "provider": {**PROVIDER, "issuer": "https://elsewhere"}}
    assert "must equal auth.provider.issuer" in problems(write, base)["auth.jwt.issuer"]
    base["auth"] = {"introspection": {}, "provider": {"issuer": ISSUER}}
    found = problems(write, base)
    assert "client_id" in found["auth.introspection"] and "audience" in found["auth.introspection.audience"]
    base["auth"] = {"jwt": JWT, "provider": {**PROVIDER, "client_secret_env": None}}
    assert "go together" in problems(write, base)["auth.provider"]
    base["auth"] = {"jwt": {**JWT, "jwks_url": "https://x/keys"}}
    assert "(got jwks_url, discover)" in problems(write, base)["auth.jwt"]


def test_exchange_needs_the_providers_client(base: dict[str, Any], write: Write) -> None:
    base["openapi"] = [orders({"customerToken": {"exchange": {"audience": "orders-api"}}})]
    found = problems(write, base)
    assert "token exchange needs auth.provider" in found["openapi[0].credentials.customerToken.exchange"]
    base["openapi"] = [orders({"customerToken": {"exchange": {"scopes": ["orders:read"]}}})]
    assert "audience and/or resource" in problems(write, base)["openapi[0].credentials.customerToken.exchange"]
    base["openapi"] = [orders({"customerToken": {"exchange": {"audience": "a"}, "env": "X"}})]
    assert "give one source" in problems(write, base)["openapi[0].credentials.customerToken"]
    base["openapi"] = [orders({"customerToken": {"exchange": {"audience": "a", "scopes": ["bad scope"]}}})]
    assert "openapi[0].credentials.customerToken.exchange.scopes[0]" in problems(write, base)


async def test_build_reads_secrets_once_and_opens_nothing(
    base: dict[str, Any], write: Write, monkeypatch: pytest.MonkeyPatch
) -> None:
    base["auth"] = {"jwt": JWT, "provider": PROVIDER, "scopes": {"read": ["r"], "implies": {"w": ["r"]}}}
    base["openapi"] = [orders({"customerToken": {"exchange": {"audience": "orders-api", "scopes": ["r"]}}})]
    config = load_config(write(base), environ={})
    with pytest.raises(ConfigError, match="SG_SECRET is not set"):
        await build_app(config, offline=True)
    monkeypatch.setenv("SG_SECRET", "s" * 20)
    app = await build_app(config, offline=True, resource="http://127.0.0.1:9/mcp")
    try:
        identity = app.identity
        assert identity is not None and identity.verifier is not None and identity.keys is not None
        assert identity.keys.stats.fetches == 0  # nothing fetched until a token arrives
        assert identity.authorization_servers == [ISSUER] and identity.resource == "http://127.0.0.1:9/mcp"
        assert len(identity.exchangers) == 1 and identity.scopes.granted(["w"]) == {"w", "r"}
        assert "s" * 20 not in repr(identity)
    finally:
        await app.aclose()


def test_default_resource_needs_a_concrete_address() -> None:
    assert default_resource(HttpConfig(host="127.0.0.1", port=8765)) == "http://127.0.0.1:8765/mcp"
    assert default_resource(HttpConfig(host="::1", port=8765)) == "http://[::1]:8765/mcp"
    assert default_resource(HttpConfig(host="0.0.0.0", port=8765)) is None
    assert default_resource(HttpConfig(), port=0) is None


def test_http_resource_from_config_wins(base: dict[str, Any], write: Write) -> None:
    base["auth"] = {"resource": "https://mcp.example.com/mcp", "token_table": "t.yaml"}
    path = write(base)
    (path.parent / "t.yaml").write_text("tokens: []\n", "utf-8")
    identity = build_identity(load_config(path, environ={}).auth, resource="http://127.0.0.1:1/mcp")
    assert identity.resource == "https://mcp.example.com/mcp" and identity.authorization_servers == []
