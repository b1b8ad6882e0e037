"""Per-user downstream identity over MCP: token exchange at Keycloak, never the client's own token.

The orders API validates the exchanged tokens against the same Keycloak (JWKS,
issuer, audience ``orders-api``, scopes) and enforces ownership itself, so a
user's token cannot read another customer's order even through a toolset with
no ownership rule at all.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import httpx
import pytest
from idp_harness import METRICS_TOKEN, SECRET_ENV, IdpWorld, auth_section, in_thread_server, write_idp_config
from mcp_harness import ServerProcess, free_port, http_client

from scopegate_lab.keycloak_realm import MCP_CLIENT

pytestmark = pytest.mark.keycloak

READ = ["tickets:read", "orders:read"]
ADDRESS = {"name": "Alice M", "line1": "5 Quai Voltaire", "city": "Paris", "postal_code": "75007", "country": "FR"}


def bearer_of(request: Any) -> str:
    value = str(request.headers.get("authorization", ""))
    assert value.startswith("Bearer ")
    return value[len("Bearer ") :]


def metric(base: str, name: str, **labels: str) -> float:
    text = httpx.get(f"{base}/metrics", headers={"Authorization": f"Bearer {METRICS_TOKEN}"}, timeout=10).text
    shown = ",".join(f'{k}="{v}"' for k, v in labels.items())
    key = f"{name}{{{shown}}}" if labels else name
    values = [float(line.split()[-1]) for line in text.splitlines() if line.startswith(key + " ")]
    return values[0] if values else 0.0


async def call(url: str, token: str, tool: str, **args: Any) -> dict[str, Any]:
    async with http_client(url, token) as client:
        out = await client.call_tool(tool, args)
        result: dict[str, Any] = out.structured_content
        return result


async def test_the_api_gets_an_exchanged_token_for_alice_not_her_mcp_token(
    idp_world: IdpWorld, idp_server: ServerProcess
) -> None:
    token = idp_world.realm.password_token("alice", scopes=READ)
    found = await call(idp_server.url, token, "getOrder", orderId="ord_1001")
    assert found["status"] == "ok" and found["untrusted"]["data"]["customer_id"] == "cust_alice"
    (sent,) = [r for r in idp_world.orders.state.recorded() if r.raw_path == "/orders/ord_1001"]
    downstream = bearer_of(sent)
    assert downstream != token  # no passthrough
    claims = idp_world.realm.claims(downstream)
    assert claims["aud"] == "orders-api" and claims["azp"] == MCP_CLIENT
    assert claims["customer_id"] == "cust_alice" and claims["sub"] == idp_world.realm.claims(token)["sub"]
    assert claims["scope"].split() == ["orders:read"]  # down-scoped: alice's token grants no orders:write
    # The downstream API itself refuses the client's MCP token (audience scopegate-mcp, not orders-api).
    direct = httpx.get(
        f"{idp_world.orders.base_url}/orders/ord_1001", headers={"Authorization": f"Bearer {token}"}, timeout=10
    )
    assert direct.status_code == 401


async def test_each_user_sees_only_their_own_orders(idp_world: IdpWorld, idp_server: ServerProcess) -> None:
    alice = idp_world.realm.password_token("alice", scopes=READ)
    bob = idp_world.realm.password_token("bob", scopes=READ)
    mine = await call(idp_server.url, alice, "listOrders", limit=100)
    assert {o["customer_id"] for o in mine["untrusted"]["data"]["orders"]} == {"cust_alice"}
    theirs = await call(idp_server.url, bob, "listOrders", limit=100)
    assert {o["customer_id"] for o in theirs["untrusted"]["data"]["orders"]} == {"cust_bob"}
    assert (await call(idp_server.url, alice, "getOrder", orderId="ord_2001"))["error_code"] == "NOT_FOUND"
    assert (await call(idp_server.url, bob, "getOrder", orderId="ord_1001"))["error_code"] == "NOT_FOUND"


async def test_exchanged_tokens_are_cached_per_user(idp_world: IdpWorld, idp_server: ServerProcess) -> None:
    name = "scopegate_identity_token_exchanges_total"
    before = metric(idp_server.base, name, outcome="exchanged")
    hits = metric(idp_server.base, name, outcome="cache_hit")
    alice = idp_world.realm.password_token("alice", scopes=READ)
    for order in ("ord_1001", "ord_1002", "ord_1003"):
        assert (await call(idp_server.url, alice, "getOrder", orderId=order))["status"] == "ok"
    exchanged = metric(idp_server.base, name, outcome="exchanged") - before
    assert exchanged <= 1  # alice's token for orders:read may already be cached from an earlier test
    assert metric(idp_server.base, name, outcome="cache_hit") - hits >= 2
    tokens = {bearer_of(r) for r in idp_world.orders.state.recorded()}
    assert len(tokens) == 1  # one exchanged token served the three calls


async def test_the_api_enforces_ownership_even_when_the_toolset_does_not(idp_world: IdpWorld, tmp_path: Path) -> None:
    """A misconfigured toolset (no ownership rule, no bound customer): the per-user token still limits it."""
    config = write_idp_config(
        tmp_path / "no-ownership.yaml", idp_world.idp, idp_world.data, idp_world.orders.base_url, policies={}
    )
    alice = idp_world.realm.password_token("alice", scopes=READ)
    with in_thread_server(config) as base:
        url = f"{base}/mcp"
        foreign = await call(url, alice, "getOrder", orderId="ord_2001")
        assert foreign["error_code"] == "NOT_FOUND"  # the API's own 404: alice's token cannot see bob's order
        listed = await call(url, alice, "listOrders", customer_id="cust_bob")
        assert listed["status"] == "error" and listed["error_code"] in ("NOT_AUTHORIZED", "BAD_REQUEST")
    assert idp_world.orders.state.hits("getOrder") == 1  # it did reach the API, which refused it


async def test_a_refused_exchange_is_a_structured_error_and_nothing_is_sent(
    idp_world: IdpWorld, tmp_path: Path
) -> None:
    config = write_idp_config(
        tmp_path / "bad-audience.yaml", idp_world.idp, idp_world.data, idp_world.orders.base_url,
        audience="no-such-api",
    )  # fmt: skip
    alice = idp_world.realm.password_token("alice", scopes=READ)
    with in_thread_server(config) as base:
        refused = await call(f"{base}/mcp", alice, "getOrder", orderId="ord_1001")
    assert refused["status"] == "error" and refused["error_code"] == "NOT_AUTHORIZED"
    assert refused["retryable"] is False and "identity provider" in refused["message"]
    assert idp_world.orders.state.total_hits == 0


async def test_an_unreachable_provider_is_retryable_and_nothing_is_sent(idp_world: IdpWorld, tmp_path: Path) -> None:
    idp = idp_world.idp
    auth = auth_section(idp)
    # Verification keeps working (the JWKS is named directly); the token endpoint is on a closed port.
    auth["jwt"] = {**auth["jwt"], "discover": False, "jwks_url": idp.jwks_uri}
    closed = free_port()
    auth["provider"] = {
        **auth["provider"],
        "metadata_url": f"http://127.0.0.1:{closed}/.well-known/openid-configuration",
    }
    config = write_idp_config(tmp_path / "no-provider.yaml", idp, idp_world.data, idp_world.orders.base_url, auth=auth)
    alice = idp_world.realm.password_token("alice", scopes=READ)
    with in_thread_server(config) as base:
        down = await call(f"{base}/mcp", alice, "getOrder", orderId="ord_1001")
    assert down["error_code"] == "UNAVAILABLE" and down["retryable"] is True
    assert idp_world.orders.state.total_hits == 0


async def test_a_change_uses_a_write_scoped_token_and_no_token_is_logged(
    idp_world: IdpWorld, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    alice = idp_world.realm.password_token("alice", scopes=["orders:read", "orders:write"])
    caplog.set_level(logging.DEBUG)

    async def approve(_context: Any, _params: Any) -> Any:
        import mcp_types as types

        return types.ElicitResult(action="accept", content={"approve": True})

    with in_thread_server(idp_world.config) as base:
        async with http_client(f"{base}/mcp", alice, mode="legacy", elicitation=approve) as client:
            out = await client.call_tool("updateShippingAddress", {"orderId": "ord_1001", **ADDRESS})
    assert out.structured_content["status"] == "ok", out.structured_content
    sent = [r for r in idp_world.orders.state.recorded() if r.method == "PUT"]
    assert len(sent) == 1
    downstream = bearer_of(sent[0])
    assert set(idp_world.realm.claims(downstream)["scope"].split()) == {"orders:read", "orders:write"}
    logged = "\n".join(r.getMessage() for r in caplog.records)
    assert alice not in logged and downstream not in logged
    assert idp_world.orders.state.orders["ord_1001"]["shipping_address"]["line1"] == "5 Quai Voltaire"
    assert SECRET_ENV  # the provider secret comes from the environment, not the config file
