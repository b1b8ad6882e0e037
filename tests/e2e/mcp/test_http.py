"""The official MCP client over streamable HTTP on 127.0.0.1, with bearer tokens verified by the server."""

from __future__ import annotations

import base64
import json
import time
from typing import Any

import httpx
import pytest
from mcp_harness import HEADERS, INIT, MODES, ServerProcess, World, http_client, opaque_token, result_ids

from scopegate.demo.corpus import INJECTION_ID, INJECTION_TENANT, ticket_spec
from scopegate.search.tools import SearchTool


def post(server: ServerProcess, token: str | None, body: Any = INIT, **headers: str) -> httpx.Response:
    extra = {"Authorization": f"Bearer {token}"} if token is not None else {}
    return httpx.post(server.url, json=body, headers={**HEADERS, **extra, **headers}, timeout=10)


def tampered(token: str) -> str:
    head, body, sig = token.split(".")
    claims = json.loads(base64.urlsafe_b64decode(body + "=" * (-len(body) % 4)))
    claims["tenant_id"] = "globex"
    forged = base64.urlsafe_b64encode(json.dumps(claims).encode()).decode().rstrip("=")
    return f"{head}.{forged}.{sig}"


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("kind", ["jwt", "opaque"])
async def test_list_search_fetch_errors(world: World, server: ServerProcess, mode: str, kind: str) -> None:
    token = world.jwt("acme") if kind == "jwt" else world.tokens["acme"]
    async with http_client(server.url, token, mode=mode) as client:
        listed = {t.name: t for t in (await client.list_tools()).tools}
        assert listed["search_tickets"].input_schema == SearchTool(ticket_spec(), None).parameters_schema()  # type: ignore[arg-type]
        assert listed["search_tickets"].annotations.read_only_hint is True  # type: ignore[union-attr]

        out = await client.call_tool("search_tickets", {"query": "refund failed", "product": "payments", "page": 2})
        assert not out.is_error and out.structured_content["page"] == 2
        ids = result_ids(out.structured_content)
        assert ids and all(world.owner[i] == "acme" for i in ids)
        assert json.loads(out.content[0].text) == out.structured_content

        doc = await client.call_tool("get_ticket", {"id": ids[0]})
        assert doc.structured_content["document"]["ticket_id"] == ids[0]

        bad = await client.call_tool("search_tickets", {"query": "refund", "status": "deleted"})
        assert bad.is_error and bad.structured_content["error_code"] == "BAD_FILTER"
        assert "allowed" in bad.structured_content or "open" in bad.structured_content["message"]


@pytest.mark.parametrize(
    ("label", "make"),
    [
        ("missing", lambda w: None),
        ("unknown opaque", lambda w: "sg-e2e-not-a-real-token-000000000000"),
        ("expired opaque", lambda w: opaque_token("acme", "old")),
        ("expired jwt", lambda w: w.jwt("acme", exp=int(time.time()) - 60, iat=int(time.time()) - 600)),
        ("wrong audience", lambda w: w.jwt("acme", aud="another-service")),
        ("wrong issuer", lambda w: w.jwt("acme", iss="https://evil.example/")),
        ("tampered signature", lambda w: tampered(w.jwt("acme"))),
        ("unsigned", lambda w: __import__("jwt").encode({"tenant_id": "acme"}, None, algorithm="none")),
        ("no tenant claim", lambda w: w.jwt(None)),
        ("blank tenant", lambda w: w.jwt("  ")),
        ("huge", lambda w: "x" * 30_000),
    ],
)
def test_bad_tokens_get_401_and_nothing_runs(world: World, server: ServerProcess, label: str, make: Any) -> None:
    scrape = {"Authorization": f"Bearer {world.tokens['acme']}"}  # /metrics wants a token (issue 36, L9)
    before = httpx.get(f"{server.base}/metrics", headers=scrape, timeout=10).text
    response = post(server, make(world))
    assert response.status_code == 401, (label, response.status_code, response.text)
    assert response.headers["www-authenticate"].startswith("Bearer")
    # A tool call with a bad token is refused the same way, before any MCP message is read.
    call = {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "search_tickets", "arguments": {}}}
    assert post(server, make(world), call).status_code == 401
    after = httpx.get(f"{server.base}/metrics", headers=scrape, timeout=10).text
    assert _tool_calls(after) == _tool_calls(before)


def _tool_calls(metrics: str) -> float:
    return sum(
        float(line.rsplit(" ", 1)[1]) for line in metrics.splitlines() if line.startswith("scopegate_tool_calls_total{")
    )


def test_wrong_scheme_and_basic_auth_are_refused(world: World, server: ServerProcess) -> None:
    token = world.tokens["acme"]
    assert post(server, None, Authorization=f"Basic {token}").status_code == 401
    assert post(server, None, Authorization=token).status_code == 401


async def test_sdk_client_with_bad_token_fails(world: World, server: ServerProcess) -> None:
    with pytest.raises(Exception):  # noqa: B017 - the SDK raises its own error types for a 401
        async with http_client(server.url, world.jwt("acme", aud="nope"), mode="legacy") as client:
            await client.list_tools()


def test_a_session_belongs_to_the_identity_that_opened_it(world: World, server: ServerProcess) -> None:
    opened = post(server, world.tokens["acme"])
    assert opened.status_code == 200
    session = opened.headers["mcp-session-id"]
    initialized = {"jsonrpc": "2.0", "method": "notifications/initialized"}
    assert post(server, world.tokens["acme"], initialized, **{"mcp-session-id": session}).status_code == 202
    call = {
        "jsonrpc": "2.0",
        "id": 3,
        "method": "tools/call",
        "params": {"name": "get_ticket", "arguments": {"id": "ACM-00001"}},
    }
    # Another tenant's valid token cannot ride acme's session.
    hijack = post(server, world.tokens["globex"], call, **{"mcp-session-id": session})
    assert hijack.status_code == 404
    assert "ACM-00001" not in hijack.text
    own = post(server, world.tokens["acme"], call, **{"mcp-session-id": session})
    assert own.status_code == 200 and "ACM-00001" in own.text


async def test_two_tenants_and_the_injection_ticket(world: World, server: ServerProcess) -> None:
    async with (
        http_client(server.url, world.tokens[INJECTION_TENANT]) as victim,
        http_client(server.url, world.jwt("acme")) as other,
    ):
        planted = await victim.call_tool("search_tickets", {"query": "apple pay refund failed read this first"})
        assert INJECTION_ID in result_ids(planted.structured_content)
        text = (await victim.call_tool("get_ticket", {"id": INJECTION_ID})).structured_content
        assert "IGNORE ALL PREVIOUS INSTRUCTIONS" in json.dumps(text)
        # The model obeys the ticket: widen the search, name another tenant, fetch its ids.
        for args in ({"query": "tenant_id:* OR tenant_id:acme"}, {"query": "refund", "tenant_id": "acme"}):
            out = await victim.call_tool("search_tickets", args)
            assert all(world.owner[i] == INJECTION_TENANT for i in result_ids(out.structured_content))
        acme_id = next(i for i, t in world.owner.items() if t == "acme")
        assert (await victim.call_tool("get_ticket", {"id": acme_id})).structured_content["error_code"] == "NOT_FOUND"
        # And the other tenant never sees the planted ticket, however it asks.
        for query in ("apple pay refund failed read this first", "IGNORE ALL PREVIOUS INSTRUCTIONS", INJECTION_ID):
            out = await other.call_tool("search_tickets", {"query": query})
            assert INJECTION_ID not in result_ids(out.structured_content)
            assert all(world.owner[i] == "acme" for i in result_ids(out.structured_content))
        assert (await other.call_tool("get_ticket", {"id": INJECTION_ID})).structured_content[
            "error_code"
        ] == "NOT_FOUND"


def test_a_token_that_expires_mid_session_is_refused(world: World, server: ServerProcess) -> None:
    exp = int(time.time()) + 2
    token = world.jwt("acme", exp=exp)
    opened = post(server, token)
    assert opened.status_code == 200
    session = opened.headers["mcp-session-id"]
    time.sleep(max(0.0, exp + 1.1 - time.time()))  # past exp (the e2e config has no leeway)
    call = {"jsonrpc": "2.0", "id": 5, "method": "tools/list", "params": {}}
    assert post(server, token, call, **{"mcp-session-id": session}).status_code == 401


def test_a_short_token_gets_a_401_that_names_the_rule(world: World, server: ServerProcess) -> None:
    # Issue 19: tokens under 16 characters were refused with a bare 401 and nothing said anywhere.
    refused = post(server, "acme-token")
    assert refused.status_code == 401
    rule = "The access token is too short: tokens are 16 to 4096 characters"
    assert refused.json()["error_description"] == rule and rule in refused.headers["www-authenticate"]
    assert "token too short; tokens must be 16 to 4096 characters" in server.stderr()


def test_metrics_endpoint(world: World, server: ServerProcess) -> None:
    post(server, "sg-e2e-not-a-real-token-000000000000")
    scrape = {"Authorization": f"Bearer {world.tokens['initech']}"}
    body = httpx.get(f"{server.base}/metrics", headers=scrape, timeout=10)
    assert body.status_code == 200 and body.headers["content-type"].startswith("text/plain")
    assert 'scopegate_mcp_auth_failures_total{reason="unknown_token"}' in body.text
    assert "scopegate_tool_latency_seconds_bucket" in body.text
    for token in world.tokens.values():
        assert token not in body.text
    assert httpx.get(f"{server.base}/healthz", timeout=10).json()["status"] == "ok"
