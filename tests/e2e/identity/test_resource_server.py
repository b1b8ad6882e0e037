"""``scopegate serve`` as an OAuth 2.1 resource server in front of a real Keycloak, with the official MCP client.

Discovery (401 -> Protected Resource Metadata -> the provider's metadata -> a
token -> the call), the challenges (401 with ``resource_metadata`` and
``scope``, 403 ``insufficient_scope`` naming every scope the call needs), the
audience check, expiry, key rotation and the rate-limited refresh on unknown
key ids.
"""

from __future__ import annotations

import json
import time
import uuid
from pathlib import Path
from typing import Any

import httpx
import httpx2
import jwt
import pytest
from cryptography.hazmat.primitives.asymmetric import rsa
from idp_harness import METRICS_TOKEN, IdpWorld, auth_section, in_thread_server, write_idp_config
from mcp import Client
from mcp.client.auth.extensions.client_credentials import ClientCredentialsOAuthProvider
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.auth import OAuthClientInformationFull, OAuthToken
from mcp_harness import HEADERS, INIT, MODES, ServerProcess, http_client, result_ids

from scopegate_lab.keycloak import RealmClient
from scopegate_lab.keycloak_realm import MCP_CLIENT, RealmInfo, rotation_spec

pytestmark = pytest.mark.keycloak


def raw_post(url: str, token: str | None, body: Any = INIT) -> httpx.Response:
    auth = {"Authorization": f"Bearer {token}"} if token is not None else {}
    return httpx.post(url, json=body, headers={**HEADERS, **auth}, timeout=30)


def post(server: ServerProcess, token: str | None, body: Any = INIT) -> httpx.Response:
    return raw_post(server.url, token, body)


def challenge(response: httpx.Response) -> dict[str, str]:
    """The parameters of a ``WWW-Authenticate: Bearer k="v", ...`` header."""
    header = response.headers["www-authenticate"]
    assert header.startswith("Bearer")
    out: dict[str, str] = {}
    for part in header[len("Bearer") :].split('",'):
        if "=" in part:
            key, _, value = part.strip().partition("=")
            out[key.strip(", ")] = value.strip().strip('"')
    return out


def metric(server: ServerProcess, name: str) -> float:
    text = httpx.get(f"{server.base}/metrics", headers={"Authorization": f"Bearer {METRICS_TOKEN}"}, timeout=10).text
    values = [float(line.split()[-1]) for line in text.splitlines() if line.startswith(name + " ")]
    return values[0] if values else 0.0


def call(tool: str, args: dict[str, Any], request_id: int = 7) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": request_id, "method": "tools/call", "params": {"name": tool, "arguments": args}}


class MemoryStorage:
    def __init__(self) -> None:
        self.tokens: OAuthToken | None = None
        self.client: OAuthClientInformationFull | None = None

    async def get_tokens(self) -> OAuthToken | None:
        return self.tokens

    async def set_tokens(self, tokens: OAuthToken) -> None:
        self.tokens = tokens

    async def get_client_info(self) -> OAuthClientInformationFull | None:
        return self.client

    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
        self.client = client_info


# -- metadata and challenges ---------------------------------------------------------------
def test_protected_resource_metadata_and_the_401_challenge(idp_world: IdpWorld, idp_server: ServerProcess) -> None:
    refused = post(idp_server, None)
    assert refused.status_code == 401
    params = challenge(refused)
    assert "error" not in params  # no token presented: no error code (RFC 6750 §3.1)
    assert params["scope"] == "orders:read tickets:read"
    metadata_url = params["resource_metadata"]
    assert metadata_url == f"{idp_server.base}/.well-known/oauth-protected-resource/mcp"

    for url in (metadata_url, f"{idp_server.base}/.well-known/oauth-protected-resource"):
        prm = httpx.get(url, timeout=10).json()
        assert prm["resource"] == idp_server.url
        assert prm["authorization_servers"] == [idp_world.idp.issuer]
        assert prm["bearer_methods_supported"] == ["header"]
        assert prm["scopes_supported"] == ["orders:read", "tickets:read"]

    bad = post(idp_server, "not-a-token-at-all-0123456789")
    assert bad.status_code == 401
    assert challenge(bad)["error"] == "invalid_token" and challenge(bad)["resource_metadata"] == metadata_url


def test_a_token_in_the_query_string_is_not_accepted(idp_world: IdpWorld, idp_server: ServerProcess) -> None:
    token = idp_world.realm.password_token("alice", scopes=["tickets:read"])
    response = httpx.post(f"{idp_server.url}?access_token={token}", json=INIT, headers=HEADERS, timeout=30)
    assert response.status_code == 400 and challenge(response)["error"] == "invalid_request"
    both = httpx.post(
        f"{idp_server.url}?access_token={token}",
        json=INIT,
        headers={**HEADERS, "Authorization": f"Bearer {token}"},
        timeout=30,
    )
    assert both.status_code == 400  # two methods at once: refused too (RFC 6750 §2)


@pytest.mark.parametrize("mode", MODES)
async def test_password_grant_token_lists_and_calls(idp_world: IdpWorld, idp_server: ServerProcess, mode: str) -> None:
    token = idp_world.realm.password_token("alice", scopes=["tickets:read"])
    async with http_client(idp_server.url, token, mode=mode) as client:
        names = {t.name for t in (await client.list_tools()).tools}
        # Only the tools this token may call: tickets:read, no orders scopes.
        assert names == {"search_tickets", "get_ticket"}
        out = await client.call_tool("search_tickets", {"query": "refund failed"})
        ids = result_ids(out.structured_content)
        assert ids and {idp_world.owner[i] for i in ids} == {"acme"}


async def test_client_credentials_discovery_flow_with_the_sdk(idp_world: IdpWorld, idp_server: ServerProcess) -> None:
    """The SDK's own OAuth client: 401 -> PRM -> provider metadata -> client credentials -> the call."""
    provider = ClientCredentialsOAuthProvider(
        server_url=idp_server.url,
        storage=MemoryStorage(),
        client_id="globex-bot",
        client_secret=idp_world.idp.secret("globex-bot"),
        issuer=idp_world.idp.issuer,
    )
    async with (
        httpx2.AsyncClient(auth=provider, timeout=httpx2.Timeout(30.0)) as http,
        Client(streamable_http_client(idp_server.url, http_client=http), mode="legacy") as client,
    ):
        out = await client.call_tool("search_tickets", {"query": "payout delayed"})
        ids = result_ids(out.structured_content)
        assert ids and {idp_world.owner[i] for i in ids} == {"globex"}
        # The bot holds tickets:read and orders:read (the 401's scope): a write needs a step-up.
        listed = {t.name for t in (await client.list_tools()).tools}
        assert "updateShippingAddress" not in listed and "listOrders" in listed


async def test_step_up_after_403_insufficient_scope(idp_world: IdpWorld, idp_server: ServerProcess) -> None:
    """403 names orders:write; the SDK re-authorizes with the union of scopes and the call goes through."""
    storage = MemoryStorage()
    provider = ClientCredentialsOAuthProvider(
        server_url=idp_server.url,
        storage=storage,
        client_id="acme-bot",
        client_secret=idp_world.idp.secret("acme-bot"),
        issuer=idp_world.idp.issuer,
    )
    address = {"name": "A", "line1": "1 Main St", "city": "Paris", "postal_code": "75001", "country": "FR"}
    async with (
        httpx2.AsyncClient(auth=provider, timeout=httpx2.Timeout(30.0)) as http,
        Client(streamable_http_client(idp_server.url, http_client=http), mode="legacy") as client,
    ):
        await client.list_tools()
        assert storage.tokens is not None and "orders:write" not in (storage.tokens.scope or "")
        out = await client.call_tool("updateShippingAddress", {"orderId": "ord_1001", **address})
        # Past the scope gate: the tool itself ran, and refused a service account that is nobody's customer.
        assert out.structured_content["error_code"] == "NO_SCOPE"
        assert storage.tokens is not None and "orders:write" in (storage.tokens.scope or "").split()
    assert idp_world.orders.state.hits("updateShippingAddress") == 0


def test_missing_scope_is_403_with_every_needed_scope_and_nothing_runs(
    idp_world: IdpWorld, idp_server: ServerProcess
) -> None:
    token = idp_world.realm.password_token("alice", scopes=["tickets:read"])
    before = idp_world.orders.state.total_hits
    refused = post(idp_server, token, call("getOrder", {"orderId": "ord_1001"}))
    assert refused.status_code == 403
    params = challenge(refused)
    assert params["error"] == "insufficient_scope" and params["scope"] == "orders:read"
    assert params["resource_metadata"].endswith("/.well-known/oauth-protected-resource/mcp")
    body = refused.json()
    assert body["id"] == 7 and body["error"]["data"]["missing"] == ["orders:read"]
    write = post(idp_server, token, call("updateShippingAddress", {"orderId": "ord_1001"}))
    assert write.status_code == 403 and challenge(write)["scope"] == "orders:write"
    # A broader scope grants the narrower one (orders:write implies orders:read): no challenge.
    writer = idp_world.realm.password_token("alice", scopes=["orders:write"])
    assert post(idp_server, writer, call("getOrder", {"orderId": "ord_1001"})).status_code != 403
    assert idp_world.orders.state.total_hits - before <= 1  # only the permitted read reached the API


# -- tokens that must not pass ------------------------------------------------------------
def test_wrong_audience_is_refused(idp_world: IdpWorld, idp_server: ServerProcess) -> None:
    # reporting-app's tokens carry no scopegate-mcp audience: issued for something else.
    token = idp_world.realm.password_token("alice", client="reporting-app", scopes=["tickets:read"])
    assert "aud" not in idp_world.realm.claims(token) or MCP_CLIENT not in str(idp_world.realm.claims(token)["aud"])
    refused = post(idp_server, token)
    assert refused.status_code == 401
    assert challenge(refused)["error_description"] == "The access token was not issued for this server"
    # So is the downstream token for the orders API (what a passthrough would look like).
    exchanged: Any = httpx.post(
        idp_world.idp.token_endpoint,
        data={
            "grant_type": "urn:ietf:params:oauth:grant-type:token-exchange",
            "client_id": MCP_CLIENT,
            "client_secret": idp_world.idp.secret(MCP_CLIENT),
            "subject_token": idp_world.realm.password_token("alice", scopes=["tickets:read"]),
            "subject_token_type": "urn:ietf:params:oauth:token-type:access_token",
            "audience": "orders-api",
        },
        timeout=30,
    ).json()
    assert "access_token" in exchanged, exchanged
    exchanged = exchanged["access_token"]
    assert post(idp_server, exchanged).status_code == 401


def test_expired_token_is_refused(idp_world: IdpWorld, idp_server: ServerProcess) -> None:
    token = idp_world.realm.password_token("alice", client="short-lived", scopes=["tickets:read"])
    exp = idp_world.realm.claims(token)["exp"]
    assert post(idp_server, token).status_code == 200  # fresh: accepted
    while time.time() <= exp + 1:  # the 2 s lifetime passes (leeway 0)
        time.sleep(0.25)
    refused = post(idp_server, token)
    assert refused.status_code == 401 and challenge(refused)["error_description"] == "The access token expired"


def test_unknown_key_ids_cost_the_provider_one_fetch(idp_world: IdpWorld, idp_server: ServerProcess) -> None:
    """Tokens signed with keys the provider never had: never accepted, and at most one JWKS refresh."""
    post(idp_server, idp_world.realm.password_token("alice", scopes=["tickets:read"]))  # keys are cached
    before = metric(idp_server, "scopegate_identity_jwks_fetches_total")
    attacker = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    now = int(time.time())
    claims = {"iss": idp_world.idp.issuer, "aud": MCP_CLIENT, "exp": now + 300, "iat": now, "tenant_id": "acme"}
    statuses = []
    for _ in range(20):
        forged = jwt.encode(claims, attacker, algorithm="RS256", headers={"kid": uuid.uuid4().hex})
        refused = post(idp_server, forged)
        statuses.append(refused.status_code)
        if refused.status_code == 401:  # the set was refreshed and still lacks the key
            assert challenge(refused)["error_description"] == "The access token was signed with an unknown key"
        else:  # a refresh ran moments ago: "retry later", not "throw your token away"
            assert refused.status_code == 503 and int(refused.headers["retry-after"]) >= 1
    assert statuses.count(401) <= 1 and statuses.count(503) >= 19
    assert metric(idp_server, "scopegate_identity_jwks_fetches_total") - before <= 1
    assert metric(idp_server, "scopegate_identity_jwks_refreshes_refused_total") >= 19


def test_a_rotated_key_is_picked_up_and_a_removed_one_dropped(idp_world: IdpWorld, tmp_path: Path) -> None:
    """Rotation at the provider, no restart: a new kid is fetched once; a removed key stops verifying.

    In a realm of its own, so the other tests' server never sees its keys change."""
    idp = RealmInfo(idp_world.idp.base_url, rotation_spec())
    realm = RealmClient(idp)
    auth = auth_section(idp)
    auth["jwt"] = {**auth["jwt"], "jwks_cache_s": 1.0, "jwks_refresh_min_s": 0.5}
    config = write_idp_config(tmp_path / "rotation.yaml", idp, idp_world.data, idp_world.orders.base_url, auth=auth)
    original = {k["kid"]: k["providerId"] for k in realm.signing_keys()}
    with in_thread_server(config) as base:
        url = f"{base}/mcp"
        old_token = realm.password_token("bob", scopes=["tickets:read"])
        assert jwt.get_unverified_header(old_token)["kid"] in original
        assert raw_post(url, old_token).status_code == 200
        component, new_kid = realm.add_signing_key(f"rotated-{uuid.uuid4().hex[:8]}")
        new_token = realm.password_token("bob", scopes=["tickets:read"])
        assert jwt.get_unverified_header(new_token)["kid"] == new_kid and new_kid not in original
        time.sleep(0.6)  # past the refresh interval of this server (0.5 s)
        assert raw_post(url, new_token).status_code == 200  # one refresh for the unknown kid, then verified
        assert raw_post(url, old_token).status_code == 200  # the old key is still published
        for old_component in set(original.values()):
            realm.remove_component(old_component)
        time.sleep(1.1)  # the cached key set expires (1 s): the next request fetches the set without the old key
        refused = raw_post(url, old_token)
        assert refused.status_code == 401
        assert challenge(refused)["error_description"] == "The access token was signed with an unknown key"
        assert raw_post(url, realm.password_token("bob", scopes=["tickets:read"])).status_code == 200
    assert component
    realm.close()


async def test_two_tenants_at_once_never_cross(idp_world: IdpWorld, idp_server: ServerProcess) -> None:
    import asyncio

    tokens = {
        "acme": idp_world.realm.password_token("alice", scopes=["tickets:read"]),
        "globex": idp_world.realm.password_token("bob", scopes=["tickets:read"]),
    }

    async def searches(tenant: str) -> set[str]:
        seen: set[str] = set()
        async with http_client(idp_server.url, tokens[tenant]) as client:
            for query in ("refund", "payout delayed", "card declined", "invoice", "login"):
                out = await client.call_tool("search_tickets", {"query": query})
                seen |= {idp_world.owner[i] for i in result_ids(out.structured_content)}
                other = next(i for i, t in idp_world.owner.items() if t != tenant)
                probe = await client.call_tool("get_ticket", {"id": other})
                assert probe.structured_content["error_code"] == "NOT_FOUND", json.dumps(probe.structured_content)
        return seen

    acme, globex = await asyncio.gather(searches("acme"), searches("globex"))
    assert acme == {"acme"} and globex == {"globex"}
