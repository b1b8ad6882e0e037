"""Fixtures for guard integration tests: a real redis-server, real embedded indexes, a logged workload."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from scopegate.backends.embedded import EmbeddedBackend
from scopegate.context import CallContext
from scopegate.demo.corpus import generate_tickets, ticket_spec
from scopegate.guard.calllog import CallLog
from scopegate.guard.guard import Guard
from scopegate.search.tools import SearchTool


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _ping(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.5) as s:
            s.sendall(b"PING\r\n")
            return s.recv(16).startswith(b"+PONG")
    except OSError:
        return False


@pytest.fixture(scope="session")
def redis_url() -> Iterator[str]:
    """A throwaway redis-server on 127.0.0.1 (no persistence), stopped after the session."""
    binary = shutil.which("redis-server")
    if binary is None:
        reason = "redis-server is not installed (Debian: apt-get install -y redis-server)"
        if os.environ.get("CI"):
            pytest.fail(reason + "; CI must provide it")
        print(f"SKIP: {reason}")
        pytest.skip(reason)
    port = _free_port()
    proc = subprocess.Popen(
        [
            binary,
            "--port", str(port),
            "--bind", "127.0.0.1",
            "--save", "",
            "--appendonly", "no",
            "--maxmemory", "64mb",
            "--maxmemory-policy", "allkeys-lru",
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 15
        while not _ping(port):
            if proc.poll() is not None or time.monotonic() > deadline:
                pytest.fail(f"redis-server did not start on port {port} (exit code {proc.poll()})")
            time.sleep(0.05)
        yield f"redis://127.0.0.1:{port}/0"
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(10)


@pytest.fixture(scope="session")
def guard_index(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """An on-disk embedded index of the generated ticket corpus (6 tenants x 300), read-only for tests."""
    path = tmp_path_factory.mktemp("guard-index") / "index"
    backend = EmbeddedBackend(ticket_spec(), path)
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
            result = await guard.call(tool, args, ctx)
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
