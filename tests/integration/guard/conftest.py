"""Fixtures for guard integration tests: real embedded indexes, a logged workload (redis-server: ../conftest.py)."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import pytest

from scopegate.backends.embedded import EmbeddedBackend
from scopegate.context import CallContext
from scopegate.demo.corpus import generate_tickets, ticket_spec
from scopegate.guard.calllog import CallLog
from scopegate.guard.guard import Guard
from scopegate.search.tools import SearchTool


@pytest.fixture(scope="session")
def guard_index(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """An on-disk embedded index of the generated ticket corpus (6 tenants x 300), read-only for tests.

    best_fields, so field boosts are query-time settings the replay tests can change without a
    re-ingest (under combined_fields, the default, a boost is part of the indexed field).
    """
    path = tmp_path_factory.mktemp("guard-index") / "index"
    backend = EmbeddedBackend(dataclasses.replace(ticket_spec(), field_combination="best_fields"), path)
    report = backend.ingest_sync(generate_tickets(per_tenant=300), batch_size=500)
    assert report.indexed == 6 * 300 + 1 and report.failed == 0
    return path


# Queries a support agent would send: error codes, wallet names, symptoms, typos, nothing-found.
WORKLOAD_QUERIES = [
    "refund failed",
    "E4012",
    "card_declined",
    "Apple Pay refund",
    "payout delayed bank account",
    "invoice total wrong upgrade",
    "selfie check fails",
    "processor unavailable PSP-502",
    "charged twice",
    "KYC rejected document",
    "proration credit missing",
    "zebra unicorn",  # no results
    "refund window expired R-0917",
    "weekly payout missing",
]
WORKLOAD_TENANTS = ["acme", "globex", "initech", "umbrella"]


async def run_workload(tool: Any, guard: Guard, turn: str = "") -> int:
    """Logged searches over several tenants, with filters and pages; returns the number of calls."""
    n = 0
    for t_index, tenant in enumerate(WORKLOAD_TENANTS):
        for q_index, query in enumerate(WORKLOAD_QUERIES):
            args: dict[str, Any] = {"query": query}
            if (q_index + t_index) % 4 == 1:
                args["status"] = "open"
            if (q_index + t_index) % 5 == 2:
                args["page"] = 2
            invocation = f"{turn}{tenant}-{q_index // 3}"
            ctx = CallContext(state={"tenant_id": tenant}, invocation_id=invocation, session_id=f"s-{tenant}")
            result = (await guard.call(tool, args, ctx)).result
            assert result["status"] in {"ok", "error"}
            n += 1
            if q_index % 3 == 2:
                guard.invocation_answered(invocation, f"s-{tenant}")
    return n


@pytest.fixture(scope="session")
async def logged_workload(guard_index: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """A call log written by a real guard over the real index, and that guard's metric snapshot."""
    log_path = tmp_path_factory.mktemp("guard-log") / "calls.jsonl"
    backend = EmbeddedBackend.open(guard_index)
    guard = Guard(call_log=CallLog.to_file(log_path), generation_ttl_s=0.0)
    tool = SearchTool(backend.spec, backend)
    calls = await run_workload(tool, guard)
    # the same calls again: served from the cache this time, and logged as hits
    calls += await run_workload(tool, guard, turn="again-")
    assert guard.metrics is not None
    snapshot = guard.metrics.snapshot()
    await guard.aclose()
    await backend.close()
    return {"log": log_path, "calls": calls, "snapshot": snapshot}
