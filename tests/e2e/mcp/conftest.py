"""Fixtures of the MCP end-to-end tests: a ticket index, keys, tokens, a config, a running server."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from mcp_harness import (
    AUDIENCE,
    ISSUER,
    ServerProcess,
    World,
    make_keys,
    opaque_token,
    search_tool_config,
    start_http_server,
    write_config,
    write_token_table,
)

from scopegate.backends.embedded import EmbeddedBackend
from scopegate.demo.corpus import generate_tickets, ticket_spec
from scopegate.examples.orders.server import RunningService, running_orders_service

PER_TENANT = 150


@pytest.fixture(scope="module")
def orders() -> Iterator[RunningService]:
    """The orders example service on loopback, one per test module that asks for it."""
    with running_orders_service() as svc:
        yield svc


@pytest.fixture(scope="session")
def world(tmp_path_factory: pytest.TempPathFactory) -> World:
    folder = tmp_path_factory.mktemp("mcp-e2e")
    data = folder / "data"
    tickets = list(generate_tickets(per_tenant=PER_TENANT))
    backend = EmbeddedBackend(ticket_spec(), data / "tickets")
    report = backend.ingest_sync(tickets, batch_size=1000)
    assert report.indexed == len(tickets)
    keys = make_keys(folder)
    tenants = sorted({t["tenant_id"] for t in tickets})
    tokens = {tenant: opaque_token(tenant, "u1") for tenant in tenants}
    table = write_token_table(
        folder / "tokens.yaml",
        [{"token": tok, "tenant": tenant, "user": "u1"} for tenant, tok in tokens.items()]
        + [{"token": opaque_token("acme", "old"), "tenant": "acme", "expires": "2001-01-01T00:00:00Z"}],
    )
    config = write_config(
        folder / "scopegate.yaml",
        server={"name": "scopegate-e2e"},
        backends={"local": {"type": "embedded", "path": str(data)}},
        search_tools=[search_tool_config()],
        scope={"state_keys": {"tenant": "tenant_id", "user": "user_id"}},
        auth={
            "token_table": str(table),
            "jwt": {
                "jwks_file": str(keys.jwks_path),
                "issuer": ISSUER,
                "audience": AUDIENCE,
                "claims": {"tenant": "tenant_id", "user": "sub", "groups": "groups"},
                "leeway_s": 0,
            },
        },
        guards={"cap": {"families": {"search": 100_000}, "window_s": 3600}, "cache": {"ttl_s": 60}},
    )
    return World(folder, data, tickets, {t["ticket_id"]: t["tenant_id"] for t in tickets}, keys, tokens, config)


@pytest.fixture(scope="session")
def server(world: World) -> Iterator[ServerProcess]:
    """``scopegate serve CONFIG --transport http`` on a free loopback port, for the whole session."""
    proc = start_http_server(world.config, log_dir=world.folder)
    try:
        yield proc
    finally:
        proc.stop()
