"""The load test, small: 20 concurrent MCP clients, a few calls each, every response checked.

Same routine as ``bench/bench_mcp_load.py`` (which measures); this only asserts correctness:
no response ever carries another tenant's document, and every probe for a foreign id is NOT_FOUND.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from mcp_harness import ServerProcess, World

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "bench"))

from bench_mcp_load import ClientPlan, run_load

CLIENTS = 20
CALLS = 4


@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_concurrent_clients_only_see_their_tenant(world: World, server: ServerProcess, mode: str) -> None:
    tenants = sorted(world.tokens)
    plans = [
        ClientPlan(
            tenant=tenants[i % len(tenants)],
            token=world.tokens[tenants[i % len(tenants)]] if i % 2 else world.jwt(tenants[i % len(tenants)]),
            seed=i,
        )
        for i in range(CLIENTS)
    ]
    stats = await run_load(server.url, plans, CALLS, world.owner, mode=mode)
    assert stats.calls == CLIENTS * CALLS
    assert stats.violations == []
    assert stats.ids_checked > 0
    assert stats.probes_refused == stats.probes
    assert set(stats.errors) <= {"NOT_FOUND"}
    assert stats.errors.get("NOT_FOUND", 0) >= stats.probes
