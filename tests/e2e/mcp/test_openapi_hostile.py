"""The OpenAPI protections end to end through MCP: ``scopegate serve`` (HTTP, DEBUG logging) and the
official client. SSRF and path injection, cross-origin redirects, compression bombs and other hostile
bodies, ownership between two users, parameter smuggling around a bound value and a credential name,
sensitive fields and credentials that never reach the server's log.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psutil
import pytest
from mcp_harness import (
    ServerProcess,
    World,
    http_client,
    opaque_token,
    start_http_server,
    write_config,
    write_token_table,
)

from scopegate.examples.orders import SPEC_PATH
from scopegate.examples.orders.data import ALICE, BOB, REPORTS_KEY, STAFF_KEY
from scopegate.examples.orders.server import RunningService, running_counting_service, running_orders_service
from scopegate_lab.hostile import SPEC_PATH as HOSTILE_SPEC
from scopegate_lab.hostile import TOKEN as HOSTILE_TOKEN
from scopegate_lab.hostile import RunningHostile, running_hostile_service

ALICE_TOKEN = opaque_token("shop", ALICE)
ROOT_PASS = "mcp-root-pass-93f0a1c7"
BOMBS = {
    "gzip-gzip": "RESPONSE_TOO_LARGE",
    "zstd": "RESPONSE_TOO_LARGE",
    "br": "RESPONSE_TOO_LARGE",
    "gzip-br": "RESPONSE_TOO_LARGE",
    "gzip-x3": "UPSTREAM_ERROR",
    "length-understated": "RESPONSE_TOO_LARGE",
    "endless": "RESPONSE_TOO_LARGE",
    "nested-json": "UPSTREAM_ERROR",
    "amplification": "RESPONSE_TOO_LARGE",
    "zstd-window": "UPSTREAM_ERROR",
}

# An object-typed query parameter (style form, explode: the OpenAPI default): its keys become names.
# Its declared key is no other query parameter (else the translation leaves the filter out).
FILTER = {"name": "filter", "in": "query", "schema": {"type": "object", "properties": {"label": {"type": "string"}}}}


def orders_spec_with_filter(folder: Path) -> Path:
    spec = copy.deepcopy(json.loads(SPEC_PATH.read_text("utf-8")))
    for path in ("/orders", "/reports/summary"):
        spec["paths"][path]["get"].setdefault("parameters", []).append(FILTER)
    out = folder / "orders-with-filter.json"
    out.write_text(json.dumps(spec), "utf-8")
    return out


@pytest.fixture(scope="module")
def services() -> Iterator[tuple[RunningService, RunningService, RunningHostile]]:
    with running_orders_service() as orders, running_counting_service() as attacker, running_hostile_service() as bad:
        orders.state.external_redirect = f"{attacker.base_url}/stolen"
        yield orders, attacker, bad


@pytest.fixture(scope="module")
def server(world: World, services: tuple[RunningService, RunningService, RunningHostile]) -> Iterator[ServerProcess]:
    orders, _, hostile = services
    folder = world.folder / "hostile"
    folder.mkdir(exist_ok=True)
    table = write_token_table(folder / "tokens.yaml", [{"token": ALICE_TOKEN, "tenant": "shop", "user": ALICE}])
    config = write_config(
        folder / "hostile.yaml",
        server={"name": "hostile-mcp"},
        openapi=[
            {
                "name": "orders",
                "spec": str(orders_spec_with_filter(folder)),
                "base_url": orders.base_url,
                "allow": ["getOrder", "listOrders", "openRedirect", "redirectExternal", "getSalesSummary"],
                "credentials": {"staffKey": {"env": "ORDERS_STAFF_KEY"}, "reportsKey": {"env": "ORDERS_REPORTS_KEY"}},
                "policies": {
                    "getOrder": {"ownership": "response.customer_id == state.user_id"},
                    "listOrders": {"bind": {"customer_id": "user_id"}},
                },
            },
            {
                "name": "hostile",
                "spec": str(HOSTILE_SPEC),
                "base_url": hostile.base_url,
                "allow": ["getBomb", "createServer"],
                "credentials": {"hostileToken": {"env": "HOSTILE_TOKEN"}},
                "max_response_bytes": 1_000_000,
                "timeout_s": 3,
                "policies": {"createServer": {"confirm": False}},
            },
        ],
        scope={"state_keys": {"tenant": "tenant_id", "user": "user_id"}},
        auth={"token_table": str(table)},
        guards={"cap": {"families": {"openapi": 10_000}}},
    )
    env = {"ORDERS_STAFF_KEY": STAFF_KEY, "ORDERS_REPORTS_KEY": REPORTS_KEY, "HOSTILE_TOKEN": HOSTILE_TOKEN}
    proc = start_http_server(config, env, log_dir=folder, args=("--log-level", "debug"))
    try:
        yield proc
    finally:
        proc.stop()


async def call(server: ServerProcess, name: str, args: dict[str, Any]) -> dict[str, Any]:
    async with http_client(server.url, ALICE_TOKEN) as client:
        result = await client.call_tool(name, args)
    data: dict[str, Any] = result.structured_content or {}
    assert result.is_error == (data.get("status") == "error"), data
    return data


async def test_path_injection_and_redirects_never_leave_the_origin(
    server: ServerProcess, services: tuple[RunningService, RunningService, RunningHostile]
) -> None:
    orders, attacker, _ = services
    host = attacker.base_url.removeprefix("http://")
    for value in ("../me", "%2e%2e%2fme", "a/b", attacker.base_url + "/x", "//" + host, "ord_1001\r\nHost: " + host):
        data = await call(server, "getOrder", {"orderId": value})
        assert data["error_code"] in ("NOT_FOUND", "BAD_ARGUMENTS"), (value, data)
    assert (await call(server, "redirectExternal", {}))["error_code"] == "REDIRECT_BLOCKED"
    assert (await call(server, "openRedirect", {"to": attacker.base_url + "/s"}))["error_code"] == "REDIRECT_BLOCKED"
    assert attacker.state.total_hits == 0
    for record in orders.state.recorded():
        assert record.raw_path.count("/") <= 2 and "\r" not in record.raw_path


async def test_ownership_holds_through_mcp(server: ServerProcess) -> None:
    own = await call(server, "getOrder", {"orderId": "ord_1001"})
    assert own["status"] == "ok" and own["untrusted"]["data"]["customer_id"] == ALICE
    foreign = await call(server, "getOrder", {"orderId": "ord_2001"})
    assert foreign["error_code"] == "NOT_FOUND"
    listed = await call(server, "listOrders", {"limit": 50})
    assert {o.get("customer_id") for o in listed["untrusted"]["data"]["orders"]} <= {ALICE, None}
    assert all(o["id"] != "ord_2001" for o in listed["untrusted"]["data"]["orders"])
    refused = await call(server, "listOrders", {"customer_id": BOB})
    assert refused["error_code"] == "BAD_ARGUMENTS"  # not an argument the model may set


async def test_no_argument_smuggles_the_bound_name_or_a_credential_name(
    server: ServerProcess, services: tuple[RunningService, RunningService, RunningHostile]
) -> None:
    orders = services[0]
    before = orders.state.hits("listOrders")
    for key in ("customer_id", "Customer_Id", "customer_id[]", "customer.id"):
        data = await call(server, "listOrders", {"filter": {key: BOB}})
        assert data["error_code"] == "BAD_ARGUMENTS", (key, data)
    assert orders.state.hits("listOrders") == before  # nothing was sent
    listed = await call(server, "listOrders", {"filter": {"label": "gift"}, "limit": 50})
    assert listed["status"] == "ok"
    assert {o.get("customer_id") for o in listed["untrusted"]["data"]["orders"]} <= {ALICE, None}
    (record,) = orders.state.recorded()[-1:]
    assert record.query.count("customer_id=") == 1 and f"customer_id={ALICE}" in record.query
    smuggled = await call(server, "getSalesSummary", {"filter": {"api_key": "attacker-key"}})
    assert smuggled["error_code"] == "BAD_ARGUMENTS"
    assert (await call(server, "getSalesSummary", {}))["status"] == "ok"


async def test_bombs_end_structured_and_the_server_stays_small(server: ServerProcess) -> None:
    process = psutil.Process(server.process.pid)
    before = process.memory_info().rss
    for name, code in BOMBS.items():
        data = await call(server, "getBomb", {"name": name})
        assert data["error_code"] == code, (name, data)
    ok = await call(server, "getBomb", {"name": "ok-gzip-br"})
    assert ok["status"] == "ok" and ok["untrusted"]["data"]["total"] == 2000
    grown = process.memory_info().rss - before
    assert grown < 4 * 1_000_000 + 20 * 1024 * 1024 + 32 * 1024 * 1024, grown  # a 1 GiB bomb used to take 2 GB


async def test_no_credential_or_sensitive_value_in_the_debug_log(
    server: ServerProcess, services: tuple[RunningService, RunningService, RunningHostile]
) -> None:
    _, _, hostile = services
    created = await call(server, "createServer", {"name": "web", "region": "eu", "root_pass": ROOT_PASS})
    assert created["status"] == "ok" and created["untrusted"]["data"]["root_pass"] == "[redacted]"
    refused = await call(server, "createServer", {"name": "web", "region": "bad", "root_pass": ROOT_PASS})
    assert refused["error_code"] == "BAD_REQUEST" and ROOT_PASS not in json.dumps(refused)
    assert any(json.loads(r.body).get("root_pass") == ROOT_PASS for r in hostile.state.recorded() if r.body)
    await call(server, "getBomb", {"name": "ok-gzip"})  # the upstream echoes the bearer token in a header
    log = server.stderr()
    assert "receive_response_headers" in log  # httpcore really logged at DEBUG
    for secret in (STAFF_KEY, REPORTS_KEY, HOSTILE_TOKEN):
        assert secret not in log
    assert ROOT_PASS not in log  # nor the password: not in the call log, httpcore's echo or any other line
