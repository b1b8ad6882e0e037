"""Pure parts of the identity room: tool scopes, resource URIs, metadata URLs, endpoint and metadata checks."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from scopegate.errors import ProviderUnavailable
from scopegate.identity.exchange import ExchangeTarget
from scopegate.identity.provider import ProviderMetadata, check_endpoint, metadata_urls
from scopegate.identity.scopes import ToolScopes
from scopegate.identity.tokens import canonical_resource

RULES = ToolScopes.of(
    required=["mcp"],
    read=["orders:read"],
    write=["orders:write"],
    tools={"search": ["tickets:read"], "cancelOrder": ["orders:admin"]},
    implies={"orders:admin": ["orders:write"], "orders:write": ["orders:read"]},
)


def test_needed_scopes_by_name_family_and_kind() -> None:
    assert RULES.needed("search_tickets", "search", True) == {"mcp", "tickets:read"}
    assert RULES.needed("getOrder", "openapi", True) == {"mcp", "orders:read"}
    assert RULES.needed("updateShippingAddress", "openapi", False) == {"mcp", "orders:write"}
    assert RULES.needed("cancelOrder", "openapi", False) == {"mcp", "orders:admin"}  # a name beats the kind


def test_broader_scopes_grant_narrower_ones_transitively() -> None:
    assert RULES.granted(["orders:admin"]) == {"orders:admin", "orders:write", "orders:read"}
    assert RULES.missing("getOrder", "openapi", True, ["mcp", "orders:admin"]) == ()
    assert RULES.missing("cancelOrder", "openapi", False, ["mcp", "orders:write"]) == ("orders:admin",)
    assert RULES.missing("getOrder", "openapi", True, []) == ("mcp", "orders:read")
    assert RULES.supported() == ["mcp", "orders:admin", "orders:read", "orders:write", "tickets:read"]
    assert not ToolScopes().enabled and ToolScopes().missing("x", "search", True, []) == ()


def test_cyclic_implications_terminate() -> None:
    rules = ToolScopes.of(read=["a"], implies={"a": ["b"], "b": ["a"]})
    assert rules.granted(["b"]) == {"a", "b"}


@given(st.lists(st.sampled_from(["mcp", "orders:read", "orders:write", "orders:admin", "tickets:read", "x"])))
def test_more_scopes_never_need_more(granted: list[str]) -> None:
    fewer = set(RULES.missing("updateShippingAddress", "openapi", False, granted))
    more = set(RULES.missing("updateShippingAddress", "openapi", False, [*granted, "orders:admin"]))
    assert more <= fewer


def test_exchange_asks_only_for_scopes_the_caller_holds() -> None:
    target = ExchangeTarget(audience="orders-api", scopes=("orders:read", "orders:write"))
    assert target.requested(frozenset({"orders:read", "tickets:read"})) == ("orders:read",)
    assert target.requested(frozenset()) == ()


@pytest.mark.parametrize(
    ("a", "b"),
    [
        ("https://MCP.example.com/mcp", "https://mcp.example.com/mcp/"),
        ("https://mcp.example.com:443/mcp", "https://mcp.example.com/mcp"),
        ("http://127.0.0.1:80", "http://127.0.0.1"),
        ("http://[::1]:8765/mcp", "http://[::1]:8765/mcp"),
    ],
)
def test_canonical_resource_equates_spellings(a: str, b: str) -> None:
    assert canonical_resource(a) == canonical_resource(b)


def test_canonical_resource_keeps_what_matters() -> None:
    assert canonical_resource("https://mcp.example.com/a") != canonical_resource("https://mcp.example.com/b")
    assert canonical_resource("https://mcp.example.com:8443/") != canonical_resource("https://mcp.example.com/")
    assert canonical_resource("http://x:notaport/") == "http://x:notaport/"  # garbage matches nothing


def test_metadata_urls_in_the_spec_order() -> None:
    assert metadata_urls("https://auth.example.com/tenant1") == [
        "https://auth.example.com/.well-known/oauth-authorization-server/tenant1",
        "https://auth.example.com/.well-known/openid-configuration/tenant1",
        "https://auth.example.com/tenant1/.well-known/openid-configuration",
    ]
    assert metadata_urls("https://auth.example.com/") == [
        "https://auth.example.com/.well-known/oauth-authorization-server",
        "https://auth.example.com/.well-known/openid-configuration",
    ]


@pytest.mark.parametrize("url", ["https://auth.example.com/x", "http://127.0.0.1:8080/x", "http://localhost/x"])
def test_endpoints_https_or_loopback(url: str) -> None:
    assert check_endpoint(url, "x") == url


@pytest.mark.parametrize(
    "url", ["http://auth.example.com/x", "ftp://127.0.0.1/x", "file:///etc/passwd", "javascript:x"]
)
def test_endpoints_refused(url: str) -> None:
    with pytest.raises(ProviderUnavailable):
        check_endpoint(url, "x")


def test_metadata_for_another_issuer_is_refused() -> None:
    honest = {"issuer": "https://honest.example", "jwks_uri": "https://honest.example/keys"}
    assert ProviderMetadata.parse(honest, "https://honest.example").jwks_uri == "https://honest.example/keys"
    with pytest.raises(ProviderUnavailable, match=r"not 'https://attacker\.example'"):
        ProviderMetadata.parse(honest, "https://attacker.example")
    with pytest.raises(ProviderUnavailable, match="not https"):
        ProviderMetadata.parse({**honest, "token_endpoint": "http://honest.example/token"}, "https://honest.example")
    with pytest.raises(ProviderUnavailable, match="not a URL"):
        ProviderMetadata.parse({**honest, "jwks_uri": ["x"]}, "https://honest.example")
